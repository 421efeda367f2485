//! Retrieval without a query: the subgraph around some entities, for RAG
//! callers that want triples rather than answers.

use std::collections::HashSet;

use kgbox_bundle::Kg;

use crate::exec::Triple;

/// Most hops a retrieval may ask for.
pub const MAX_HOPS: usize = 4;

#[derive(Debug, Clone)]
pub struct RetrieveOptions {
    /// Breadth-first hops from the seeds (1 to [`MAX_HOPS`]).
    pub hops: usize,
    /// Stop after this many triples.
    pub max_triples: usize,
    /// Skip expanding nodes with more edges than this (hubs still appear as
    /// the far end of a triple, but their neighbourhoods are not pulled in).
    pub max_degree: usize,
}

impl Default for RetrieveOptions {
    fn default() -> Self {
        RetrieveOptions {
            hops: 1,
            max_triples: 200,
            max_degree: 1000,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subgraph {
    /// (head, relation, tail), in breadth-first order from the seeds.
    pub triples: Vec<Triple>,
    /// Entities that appear in the triples (and the seeds), in first-seen order.
    pub entities: Vec<u32>,
    /// True when `max_triples` cut the expansion short.
    pub truncated: bool,
}

/// Breadth-first expansion over outgoing and incoming edges of the seeds.
pub fn retrieve(kg: &Kg<'_>, seeds: &[u32], opts: &RetrieveOptions) -> Subgraph {
    let hops = opts.hops.clamp(1, MAX_HOPS);
    let mut seen_nodes: HashSet<u32> = HashSet::new();
    let mut entities = Vec::new();
    for &s in seeds {
        if (s as usize) < kg.entity_count() && seen_nodes.insert(s) {
            entities.push(s);
        }
    }
    let mut frontier = entities.clone();
    let mut seen_triples: HashSet<Triple> = HashSet::new();
    let mut triples = Vec::new();
    let mut truncated = false;
    'hops: for _ in 0..hops {
        let mut next = Vec::new();
        for &node in &frontier {
            if kg.out.degree(node) + kg.inc.degree(node) > opts.max_degree && !seeds.contains(&node)
            {
                continue;
            }
            let (out_rels, out_tails) = kg.out.edges(node);
            let (in_rels, in_heads) = kg.inc.edges(node);
            let edges = out_rels
                .iter()
                .zip(out_tails)
                .map(|(&r, &t)| ([node, r, t], t))
                .chain(
                    in_rels
                        .iter()
                        .zip(in_heads)
                        .map(|(&r, &h)| ([h, r, node], h)),
                );
            for (triple, other) in edges {
                if !seen_triples.insert(triple) {
                    continue;
                }
                if triples.len() >= opts.max_triples {
                    truncated = true;
                    break 'hops;
                }
                triples.push(triple);
                if seen_nodes.insert(other) {
                    entities.push(other);
                    next.push(other);
                }
            }
        }
        frontier = next;
    }
    Subgraph {
        triples,
        entities,
        truncated,
    }
}
