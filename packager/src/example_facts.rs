//! `kgbox-pack build --add-example-facts`: the facts that one-hop planner
//! examples state, added to the graph.
//!
//! An example `question<TAB>"Blade Runner" -> directed_by<TAB>Ridley Scott`
//! says that `(Blade Runner, directed_by, Ridley Scott)` holds. When the
//! operator's graph lacks such a fact, every query through it misses; with
//! this option the packager adds it (between entities the graph already
//! has, over relations it already has; `r_inv` adds the reversed fact).
//! Multi-hop examples state no single fact and add nothing. The manifest's
//! triple count includes the added facts and the packager reports how many.

use std::collections::HashSet;

use kgbox_qa::planner::train::Example;
use kgbox_query::ast::{EntityRef, Query};
use kgbox_query::bind::INVERSE_SUFFIX;

use crate::input::RawKg;

/// What [`add`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Added {
    /// One-hop examples with answers that were used.
    pub examples: usize,
    /// Facts added (not in the graph before).
    pub facts: usize,
}

/// Adds the facts of `examples`' one-hop queries to `raw`. Only examples
/// whose question `keep` accepts are used.
pub fn add(
    raw: &mut RawKg,
    examples: &[Example],
    keep: impl Fn(&str) -> bool,
) -> std::io::Result<Added> {
    let mut present: HashSet<[u32; 3]> = HashSet::new();
    raw.triples
        .for_each_block(|b| present.extend(b.iter().copied()))?;
    let mut added = Added::default();
    for ex in examples.iter().filter(|e| keep(&e.question)) {
        let Some(answers) = &ex.answers else {
            continue;
        };
        let Ok(Query::Project { input, relation }) = kgbox_query::parse(&ex.dsl) else {
            continue;
        };
        let Query::Entity {
            entity: EntityRef::Name(anchor),
            ..
        } = *input
        else {
            continue;
        };
        let Some(anchor) = raw.entities.get(&anchor) else {
            continue;
        };
        let (rel, inverse) = match raw.relations.get(&relation.name) {
            Some(r) => (r, false),
            None => match relation
                .name
                .strip_suffix(INVERSE_SUFFIX)
                .and_then(|base| raw.relations.get(base))
            {
                Some(r) => (r, true),
                None => continue,
            },
        };
        added.examples += 1;
        for a in answers {
            let Some(a) = raw.entities.get(a) else {
                continue;
            };
            let triple = if inverse {
                [a, rel, anchor]
            } else {
                [anchor, rel, a]
            };
            if present.insert(triple) {
                raw.triples.push(triple)?;
                added.facts += 1;
            }
        }
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(q: &str, dsl: &str, answers: &[&str]) -> Example {
        Example {
            line: 1,
            question: q.into(),
            dsl: dsl.into(),
            answers: Some(answers.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn adds_one_hop_facts_between_known_entities() {
        let mut raw = RawKg::default();
        raw.add_triple("Blade Runner", "directed_by", "Ridley Scott")
            .unwrap();
        raw.add_triple("Alien", "written_by", "Dan O'Bannon")
            .unwrap();
        raw.add_triple("Alien", "release_year", "1979").unwrap();
        let examples = [
            // New: Alien directed_by Ridley Scott.
            example(
                "who directed [Alien]",
                "\"Alien\" -> directed_by",
                &["Ridley Scott"],
            ),
            // Inverse, one known and one new fact, one unknown answer.
            example(
                "[Ridley Scott] directed what",
                "\"Ridley Scott\" -> directed_by_inv",
                &["Blade Runner", "Alien", "Gladiator"],
            ),
            // Two hops: states no single fact.
            example(
                "q3",
                "\"Alien\" -> directed_by -> directed_by_inv",
                &["Blade Runner"],
            ),
            // Unknown relation, unknown anchor, held out.
            example("q4", "\"Alien\" -> budget", &["1979"]),
            example("q5", "\"Nobody\" -> directed_by", &["Ridley Scott"]),
            example("held out", "\"Blade Runner\" -> release_year", &["1979"]),
        ];
        let added = add(&mut raw, &examples, |q| q != "held out").unwrap();
        assert_eq!(
            added,
            Added {
                examples: 2,
                facts: 1
            }
        );
        let alien = raw.entities.get("Alien").unwrap();
        let scott = raw.entities.get("Ridley Scott").unwrap();
        let directed = raw.relations.get("directed_by").unwrap();
        let all = raw.triples.to_vec().unwrap();
        assert!(all.contains(&[alien, directed, scott]));
        assert_eq!(all.len(), 4);
        assert!(raw.entities.get("Gladiator").is_none(), "no new entities");
    }
}
