//! The graph the entity model runs on, in ULTRA's message convention: for a
//! fact `(h, r, t)`, a message of type `r` from `t` into `h` and one of type
//! `r + R` from `h` into `t`.

use std::collections::HashMap;

use kgbox_bundle::Kg;

/// Nodes (global entity ids; a node's local id is its position) and message
/// edges in local ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Subgraph {
    pub nodes: Vec<u32>,
    pub src: Vec<i64>,
    pub dst: Vec<i64>,
    pub kind: Vec<i64>,
}

impl Subgraph {
    /// The subgraph induced by `nodes` (global ids, each once).
    pub fn induced(kg: &Kg<'_>, nodes: Vec<u32>) -> Subgraph {
        let local: HashMap<u32, i64> = nodes
            .iter()
            .enumerate()
            .map(|(i, &v)| (v, i as i64))
            .collect();
        let mut g = Subgraph {
            nodes,
            ..Subgraph::default()
        };
        let r = kg.relation_count() as i64;
        let mut inverse = Vec::new();
        for (hi, &h) in g.nodes.iter().enumerate() {
            let (rels, tails) = kg.out.edges(h);
            for (&rel, t) in rels.iter().zip(tails) {
                if let Some(&ti) = local.get(t) {
                    g.src.push(ti);
                    g.dst.push(hi as i64);
                    g.kind.push(i64::from(rel));
                    inverse.push((hi as i64, ti, i64::from(rel) + r));
                }
            }
        }
        for (s, d, k) in inverse {
            g.src.push(s);
            g.dst.push(d);
            g.kind.push(k);
        }
        g
    }

    /// The whole graph.
    pub fn full(kg: &Kg<'_>) -> Subgraph {
        Subgraph::induced(kg, (0..kg.entity_count() as u32).collect())
    }

    pub fn edge_count(&self) -> usize {
        self.src.len()
    }

    /// A graph from explicit `(h, r, t)` facts over `nodes` local ids, in the
    /// same edge order as [`Subgraph::induced`] lists them for facts in this order.
    pub fn from_facts(nodes: usize, relations: usize, facts: &[[u32; 3]]) -> Subgraph {
        let mut g = Subgraph {
            nodes: (0..nodes as u32).collect(),
            ..Subgraph::default()
        };
        for pass in 0..2 {
            for &[h, r, t] in facts {
                let (s, d, k) = if pass == 0 {
                    (t, h, r as usize)
                } else {
                    (h, t, r as usize + relations)
                };
                g.src.push(i64::from(s));
                g.dst.push(i64::from(d));
                g.kind.push(k as i64);
            }
        }
        g
    }
}
