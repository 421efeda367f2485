//! Walking the graph for the retrieval strategies: the relations that leave
//! a set of entities, and one hop along chosen relations with provenance.
//! The work is bounded by an edge-visit [`Budget`], and hubs are handled by
//! KGFR's asymmetric pruning: an (entity, relation) pair with more than
//! `fanout` neighbours still reaches them, but they are not expanded
//! further (the entity's other relations still are).

use std::collections::{BTreeMap, BTreeSet};

use kgbox_bundle::Kg;
use kgbox_query::bind::INVERSE_SUFFIX;
use kgbox_query::exec::Triple;

use crate::prompt::RelationInfo;

/// One relation followed forwards or backwards (`name_inv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hop {
    pub relation: u32,
    pub inverse: bool,
}

impl Hop {
    /// `name` or `name_inv`.
    pub fn name(self, kg: &Kg<'_>) -> Option<String> {
        let n = kg.relation_name(self.relation)?;
        Some(if self.inverse {
            format!("{n}{INVERSE_SUFFIX}")
        } else {
            n.to_string()
        })
    }

    /// The hop as the LLM sees it: its name and the relation's description
    /// with its aliases ([`crate::planner::llm::described`]).
    pub fn info(self, kg: &Kg<'_>) -> Option<RelationInfo> {
        Some(RelationInfo {
            name: self.name(kg)?,
            description: crate::planner::llm::described(kg, self.relation).map(|d| {
                if self.inverse {
                    format!("backwards: {d}")
                } else {
                    d.to_string()
                }
            }),
        })
    }

    fn neighbours<'k>(self, kg: &Kg<'k>, node: u32) -> &'k [u32] {
        if self.inverse {
            kg.inc.neighbours(node, self.relation)
        } else {
            kg.out.neighbours(node, self.relation)
        }
    }

    /// The graph's triple for a step from `from` to `to` over this hop.
    fn triple(self, from: u32, to: u32) -> Triple {
        if self.inverse {
            [to, self.relation, from]
        } else {
            [from, self.relation, to]
        }
    }
}

/// Edges a strategy may still look at.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    left: u64,
}

impl Budget {
    pub fn new(edges: u64) -> Budget {
        Budget { left: edges }
    }

    /// Takes `n` edges; false (and nothing left) when there are not enough.
    fn spend(&mut self, n: usize) -> bool {
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.left = 0;
                false
            }
        }
    }

    pub fn exhausted(&self) -> bool {
        self.left == 0
    }
}

/// Entities reached, each with the triples leading to it from a source.
pub type Reached = BTreeMap<u32, Vec<Triple>>;

/// The hops leaving `frontier`, in both directions, in (relation, forward
/// first) order. Costs one budget unit per distinct relation of an entity.
pub fn hops_from(
    kg: &Kg<'_>,
    frontier: impl IntoIterator<Item = u32>,
    budget: &mut Budget,
) -> BTreeSet<Hop> {
    let mut hops = BTreeSet::new();
    for node in frontier {
        for (csr, inverse) in [(&kg.out, false), (&kg.inc, true)] {
            let (rels, _) = csr.edges(node);
            let mut i = 0;
            while let Some(&relation) = rels.get(i) {
                if !budget.spend(1) {
                    return hops;
                }
                hops.insert(Hop { relation, inverse });
                // Relations are sorted per node: jump past this one's edges.
                i += 1 + rels
                    .get(i + 1..)
                    .map_or(0, |rest| rest.partition_point(|&r| r <= relation));
            }
        }
    }
    hops
}

/// What one hop from a frontier reached.
#[derive(Debug, Default)]
pub struct Step {
    /// Every entity reached, with one path to it.
    pub reached: Reached,
    /// Those reached over a pair within the fanout: the ones to expand.
    pub expandable: BTreeSet<u32>,
    /// The budget ran out: `reached` is partial.
    pub truncated: bool,
}

impl Step {
    /// The reached entities to expand next, with their paths.
    pub fn frontier(&self) -> Reached {
        self.reached
            .iter()
            .filter(|(e, _)| self.expandable.contains(e))
            .map(|(e, p)| (*e, p.clone()))
            .collect()
    }
}

/// One hop from every entity of `frontier` along each of `hops`.
pub fn step(
    kg: &Kg<'_>,
    frontier: &Reached,
    hops: &[Hop],
    fanout: usize,
    budget: &mut Budget,
) -> Step {
    let mut out = Step::default();
    for (&from, path) in frontier {
        for &hop in hops {
            let next = hop.neighbours(kg, from);
            if next.is_empty() {
                continue;
            }
            if !budget.spend(next.len()) {
                out.truncated = true;
                return out;
            }
            let hub = next.len() > fanout;
            for &to in next {
                out.reached.entry(to).or_insert_with(|| {
                    let mut p = path.clone();
                    p.push(hop.triple(from, to));
                    p
                });
                if !hub {
                    out.expandable.insert(to);
                }
            }
        }
    }
    out
}

/// A frontier of the sources alone.
pub fn start(sources: &[u32]) -> Reached {
    sources.iter().map(|&s| (s, Vec::new())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::test_graph::graph;

    const FILMS: &[(&str, &str, &str)] = &[
        ("Alien", "directed_by", "Ridley Scott"),
        ("Blade Runner", "directed_by", "Ridley Scott"),
        ("Blade Runner", "written_by", "Philip K. Dick"),
        ("Alien", "has_genre", "Horror"),
    ];

    #[test]
    fn hops_in_both_directions_and_one_step_with_paths() {
        graph(FILMS, |kg| {
            let br = kg.entity_id("Blade Runner").unwrap();
            let scott = kg.entity_id("Ridley Scott").unwrap();
            let mut budget = Budget::new(1000);
            let names: Vec<String> = hops_from(kg, [br], &mut budget)
                .into_iter()
                .filter_map(|h| h.name(kg))
                .collect();
            assert_eq!(names, ["directed_by", "written_by"]);
            let names: Vec<String> = hops_from(kg, [scott], &mut budget)
                .into_iter()
                .filter_map(|h| h.name(kg))
                .collect();
            assert_eq!(names, ["directed_by_inv"]);

            let directed = Hop {
                relation: kg.relation_id("directed_by").unwrap(),
                inverse: false,
            };
            let s = step(kg, &start(&[br]), &[directed], 10, &mut budget);
            assert_eq!(s.reached.keys().copied().collect::<Vec<_>>(), [scott]);
            assert_eq!(s.reached[&scott], vec![[br, directed.relation, scott]]);
            // Back over the inverse: both films, the path has two triples
            // in the graph's own direction.
            let back = Hop {
                inverse: true,
                ..directed
            };
            let s2 = step(kg, &s.frontier(), &[back], 10, &mut budget);
            let alien = kg.entity_id("Alien").unwrap();
            assert_eq!(s2.reached.len(), 2);
            assert_eq!(
                s2.reached[&alien],
                vec![
                    [br, directed.relation, scott],
                    [alien, directed.relation, scott]
                ]
            );
            // Over the fanout: reached, not expandable.
            let s3 = step(kg, &s.frontier(), &[back], 1, &mut budget);
            assert_eq!((s3.reached.len(), s3.expandable.len()), (2, 0));
        });
    }

    #[test]
    fn the_budget_bounds_the_work() {
        graph(FILMS, |kg| {
            let scott = kg.entity_id("Ridley Scott").unwrap();
            let back = Hop {
                relation: kg.relation_id("directed_by").unwrap(),
                inverse: true,
            };
            let mut budget = Budget::new(1);
            let s = step(kg, &start(&[scott]), &[back], 10, &mut budget);
            assert!(s.truncated && s.reached.is_empty() && budget.exhausted());
            let mut budget = Budget::new(0);
            assert!(hops_from(kg, [scott], &mut budget).is_empty());
        });
    }
}
