//! The subgraph that joins a question's entities to a candidate answer: the
//! union of all shortest paths between them, edges taken in either direction
//! (the reranking seed's construction).
//!
//! One breadth-first search per question entity gives the distances; the
//! subgraph of a candidate is then read back from it by walking from the
//! candidate to nodes one step closer, so a question with fifty candidates
//! costs one search, not fifty.

use std::collections::{HashMap, HashSet};

use kgbox_bundle::Kg;

/// Bounds on the work done for one question.
#[derive(Debug, Clone, Copy)]
pub struct SubgraphLimits {
    /// Path length at most (hops).
    pub max_depth: u8,
    /// Nodes a search may reach before it stops growing.
    pub max_nodes: usize,
    /// Triples kept per candidate subgraph.
    pub max_triples: usize,
}

impl Default for SubgraphLimits {
    fn default() -> Self {
        SubgraphLimits {
            max_depth: 3,
            max_nodes: 200_000,
            max_triples: 2_000,
        }
    }
}

/// Distances from one entity, up to the depth needed to reach the targets.
pub struct Distances {
    pub source: u32,
    dist: HashMap<u32, u8>,
}

impl Distances {
    /// Breadth-first over edges in both directions from `source`, layer by
    /// layer, until every target is reached, `max_depth` is done or
    /// `max_nodes` nodes are known (distances found stay exact).
    pub fn search(
        kg: &Kg<'_>,
        source: u32,
        targets: &HashSet<u32>,
        limits: &SubgraphLimits,
    ) -> Self {
        let mut dist = HashMap::new();
        dist.insert(source, 0u8);
        let mut missing = targets.iter().filter(|&&t| t != source).count();
        let mut frontier = vec![source];
        let mut depth = 0u8;
        'layers: while missing > 0 && depth < limits.max_depth && !frontier.is_empty() {
            depth += 1;
            let mut next = Vec::new();
            for &u in &frontier {
                for csr in [&kg.out, &kg.inc] {
                    let (_, others) = csr.edges(u);
                    for &v in others {
                        if let std::collections::hash_map::Entry::Vacant(e) = dist.entry(v) {
                            e.insert(depth);
                            next.push(v);
                            if targets.contains(&v) {
                                missing -= 1;
                            }
                            if dist.len() >= limits.max_nodes {
                                break 'layers;
                            }
                        }
                    }
                }
            }
            frontier = next;
        }
        Distances { source, dist }
    }

    pub fn get(&self, node: u32) -> Option<u8> {
        self.dist.get(&node).copied()
    }
}

/// A small graph: nodes by local index, triples between them.
#[derive(Debug, Default, Clone)]
pub struct Subgraph {
    /// Entity ids; the candidate is node 0.
    pub nodes: Vec<u32>,
    /// `(head, relation, tail)` in local indices.
    pub triples: Vec<(usize, u32, usize)>,
    /// Shortest distance from each reached question entity.
    pub distances: Vec<u8>,
    /// Shortest paths from the first reached question entity.
    pub path_count: f64,
    /// Question entities searched.
    pub sources: usize,
    /// The triple limit cut the subgraph short.
    pub truncated: bool,
}

impl Subgraph {
    /// The union of shortest paths from every searched entity to `candidate`.
    pub fn of(
        kg: &Kg<'_>,
        searches: &[Distances],
        candidate: u32,
        limits: &SubgraphLimits,
    ) -> Self {
        let mut g = Subgraph {
            sources: searches.len(),
            ..Subgraph::default()
        };
        let mut local: HashMap<u32, usize> = HashMap::new();
        local.insert(candidate, 0);
        g.nodes.push(candidate);
        let mut seen_triples: HashSet<(u32, u32, u32)> = HashSet::new();
        for (i, search) in searches.iter().enumerate() {
            let Some(d) = search.get(candidate) else {
                continue;
            };
            g.distances.push(d);
            // Walk back from the candidate, layer by layer, counting paths.
            let mut paths: HashMap<u32, f64> = HashMap::new();
            paths.insert(candidate, 1.0);
            let mut layer = vec![candidate];
            let mut level = d;
            while level > 0 && !layer.is_empty() {
                let mut below: Vec<u32> = Vec::new();
                for &u in &layer {
                    let through = paths.get(&u).copied().unwrap_or(0.0);
                    for (csr, forward) in [(&kg.out, true), (&kg.inc, false)] {
                        let (rels, others) = csr.edges(u);
                        for (&r, &v) in rels.iter().zip(others) {
                            if search.get(v) != Some(level - 1) {
                                continue;
                            }
                            // The edge goes u -> v when read from `out`.
                            let triple = if forward { (u, r, v) } else { (v, r, u) };
                            if g.triples.len() >= limits.max_triples {
                                g.truncated = true;
                            } else if seen_triples.insert(triple) {
                                let mut idx = |e: u32| {
                                    *local.entry(e).or_insert_with(|| {
                                        g.nodes.push(e);
                                        g.nodes.len() - 1
                                    })
                                };
                                let (h, t) = (idx(triple.0), idx(triple.2));
                                g.triples.push((h, r, t));
                            }
                            let slot = paths.entry(v).or_insert(0.0);
                            if *slot == 0.0 {
                                below.push(v);
                            }
                            *slot += through;
                        }
                    }
                }
                layer = below;
                level -= 1;
            }
            if i == 0 || g.path_count == 0.0 {
                g.path_count = paths.get(&search.source).copied().unwrap_or(0.0);
            }
            if let std::collections::hash_map::Entry::Vacant(e) = local.entry(search.source) {
                e.insert(g.nodes.len());
                g.nodes.push(search.source);
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::test_graph::graph;

    #[test]
    fn shortest_paths_are_joined_and_counted() {
        graph(
            &[
                ("a", "r", "b"),
                ("b", "r", "d"),
                ("a", "s", "c"),
                ("c", "s", "d"),
                ("a", "t", "e"),
                ("e", "t", "f"),
                ("f", "t", "d"),
            ],
            |kg| {
                let id = |n: &str| kg.entity_id(n).expect("entity");
                let targets: HashSet<u32> = [id("d")].into();
                let limits = SubgraphLimits::default();
                let search = Distances::search(kg, id("a"), &targets, &limits);
                assert_eq!(search.get(id("d")), Some(2));
                let g = Subgraph::of(kg, &[search], id("d"), &limits);
                // a-b-d and a-c-d; the three-hop path through e and f is not shortest.
                assert_eq!(g.nodes.len(), 4);
                assert_eq!(g.triples.len(), 4);
                assert_eq!(g.path_count, 2.0);
                assert_eq!(g.distances, vec![2]);
                assert!(!g.nodes.contains(&id("e")));
            },
        );
    }

    #[test]
    fn an_unreached_candidate_has_no_paths() {
        graph(&[("a", "r", "b"), ("c", "r", "d")], |kg| {
            let id = |n: &str| kg.entity_id(n).expect("entity");
            let limits = SubgraphLimits::default();
            let search = Distances::search(kg, id("a"), &[id("d")].into(), &limits);
            let g = Subgraph::of(kg, &[search], id("d"), &limits);
            assert_eq!(g.nodes, vec![id("d")]);
            assert!(g.triples.is_empty());
            assert!(g.distances.is_empty());
            assert_eq!(g.path_count, 0.0);
        });
    }
}
