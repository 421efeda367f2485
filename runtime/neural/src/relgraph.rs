//! ULTRA's relation graph: one node per relation type (2R, inverses
//! included), and an edge of one of four types between two relations that
//! share an entity: head-head (0), tail-tail (1), head-tail (2), tail-head (3).
//!
//! With ULTRA's edges (for a fact `(h, r, t)`: type `r` from `h` to `t`, and
//! type `r + R` from `t` to `h`), entity `e` is the *head* of the types
//! `H(e)` = its outgoing relations and the inverses of its incoming ones, and
//! the *tail* of `T(e)` = its incoming relations and the inverses of its
//! outgoing ones. Edge `(dst = x, src = y, type)` exists when some entity has
//! `x ∈ H, y ∈ H` (hh), `x ∈ T, y ∈ T` (tt), `x ∈ H, y ∈ T` (ht) or
//! `x ∈ T, y ∈ H` (th). Messages flow from `src` into `dst`.

use std::collections::BTreeSet;

use kgbox_bundle::Kg;

/// Relation-graph edges `(dst, src, type)` of a bundle's graph, sorted by `(type, dst, src)`.
pub fn build(kg: &Kg<'_>) -> Vec<[u32; 3]> {
    let r = kg.relation_count() as u32;
    let mut acc = Builder::default();
    for e in 0..kg.entity_count() as u32 {
        let (out_rels, _) = kg.out.edges(e);
        let (in_rels, _) = kg.inc.edges(e);
        acc.add_entity(r, out_rels.iter().copied(), in_rels.iter().copied());
    }
    acc.finish()
}

/// The same from explicit facts `(h, r, t)` over `entities` ids and `relations` direct relations.
pub fn build_from_facts(entities: usize, relations: usize, facts: &[[u32; 3]]) -> Vec<[u32; 3]> {
    let mut outs: Vec<Vec<u32>> = vec![Vec::new(); entities];
    let mut ins: Vec<Vec<u32>> = vec![Vec::new(); entities];
    for &[h, r, t] in facts {
        if let (Some(o), true) = (outs.get_mut(h as usize), (t as usize) < entities) {
            o.push(r);
            ins[t as usize].push(r);
        }
    }
    let mut acc = Builder::default();
    for (o, i) in outs.into_iter().zip(ins) {
        acc.add_entity(relations as u32, o.into_iter(), i.into_iter());
    }
    acc.finish()
}

#[derive(Default)]
struct Builder {
    edges: BTreeSet<(u32, u32, u32)>,
    heads: Vec<u32>,
    tails: Vec<u32>,
}

impl Builder {
    /// One entity with its outgoing and incoming (direct) relations.
    fn add_entity(
        &mut self,
        r: u32,
        out_rels: impl Iterator<Item = u32> + Clone,
        in_rels: impl Iterator<Item = u32> + Clone,
    ) {
        let Builder {
            edges,
            heads,
            tails,
        } = self;
        heads.clear();
        tails.clear();
        heads.extend(out_rels.clone());
        heads.extend(in_rels.clone().map(|x| x + r));
        tails.extend(in_rels);
        tails.extend(out_rels.map(|x| x + r));
        for v in [&mut *heads, &mut *tails] {
            v.sort_unstable();
            v.dedup();
        }
        for (ty, dsts, srcs) in [
            (0, &*heads, &*heads),
            (1, &*tails, &*tails),
            (2, &*heads, &*tails),
            (3, &*tails, &*heads),
        ] {
            for &x in dsts {
                for &y in srcs {
                    edges.insert((ty, x, y));
                }
            }
        }
    }

    fn finish(self) -> Vec<[u32; 3]> {
        self.edges.into_iter().map(|(t, x, y)| [x, y, t]).collect()
    }
}

/// The `model.ultra.relgraph` section: `u32` little-endian `(dst, src, type)` triples.
pub fn encode(edges: &[[u32; 3]]) -> Vec<u8> {
    edges
        .iter()
        .flat_map(|e| e.iter().flat_map(|x| x.to_le_bytes()))
        .collect()
}
