//! Class nouns for synthesised questions: when the graph types what a step
//! reaches (`rdf:type`), questions say "the albums", "which songs", as
//! people ask them, instead of "the things".

use std::collections::HashMap;

use kgbox_bundle::Kg;
use kgbox_qa::planner::paths::TYPE_IRIS;

use super::paths::{follow, Step};
use super::phrase::{plural, split_words};

/// Share of the reached entities one class must cover to name them.
const MIN_SHARE: f32 = 0.6;
/// Topics followed per path, and entities looked at, at most.
const TOPICS: usize = 8;
const NODES: usize = 200;

/// The graph's type relation.
#[derive(Debug, Clone, Copy)]
pub struct Classes {
    relation: u32,
}

impl Classes {
    /// The relation read as `rdf:type`: by its IRI, or in a graph without
    /// IRIs the one named `type` or `rdf:type`.
    pub fn of(kg: &Kg<'_>) -> Option<Classes> {
        let by_iri = TYPE_IRIS.iter().find_map(|&i| kg.relation_by_iri(i));
        let relation = by_iri.or_else(|| {
            (!kg.has_iris())
                .then(|| {
                    kg.relation_id("type")
                        .or_else(|| kg.relation_id("rdf:type"))
                })
                .flatten()
        })?;
        Some(Classes { relation })
    }

    /// The plural noun of the class most of `nodes` have, when one class
    /// covers [`MIN_SHARE`] of them.
    pub fn noun(&self, kg: &Kg<'_>, nodes: &[u32]) -> Option<String> {
        let nodes = &nodes[..nodes.len().min(NODES)];
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for &n in nodes {
            for &c in kg.out.neighbours(n, self.relation) {
                *counts.entry(c).or_default() += 1;
            }
        }
        let (&class, &count) = counts
            .iter()
            .max_by_key(|&(&c, &n)| (n, std::cmp::Reverse(c)))?;
        if (count as f32) < MIN_SHARE * nodes.len() as f32 {
            return None;
        }
        let words = split_words(kg.entity_name(class)?);
        let (last, rest) = words.split_last()?;
        if !words.iter().all(|w| w.chars().all(char::is_alphabetic)) {
            return None;
        }
        let mut noun = rest.join(" ");
        if !noun.is_empty() {
            noun.push(' ');
        }
        noun.push_str(&plural(last));
        Some(noun)
    }

    /// For each step of a path, the class noun of what it reaches from the
    /// path's first few `topics`.
    pub fn of_steps(&self, kg: &Kg<'_>, steps: &[Step], topics: &[u32]) -> Vec<Option<String>> {
        (1..=steps.len())
            .map(|n| {
                let mut reached = Vec::new();
                for &t in topics.iter().take(TOPICS) {
                    if let Some(found) = follow(kg, t, &steps[..n], NODES) {
                        reached.extend(found);
                    }
                    if reached.len() >= NODES {
                        break;
                    }
                }
                reached.sort_unstable();
                reached.dedup();
                if reached.is_empty() {
                    None
                } else {
                    self.noun(kg, &reached)
                }
            })
            .collect()
    }
}
