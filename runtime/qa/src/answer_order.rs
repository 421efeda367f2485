//! The order of a plan's answers where the question says more than the
//! executor's scores: the most specific class for a type, others first
//! after a round trip. The answers stay the same set.

use kgbox_bundle::Kg;
use kgbox_query::{Answers, Query};

/// Reorders `found`, the answers of `query` (a DSL query; one that does
/// not parse is left as it is).
pub(crate) fn reorder(kg: &Kg<'_>, query: &str, found: &mut Answers) {
    let Ok(q) = kgbox_query::parse(query) else {
        return;
    };
    specific_classes_first(kg, &q, found);
    others_first(kg, &q, found);
}

/// The answers of a query that ends on the type relation (`rdf:type`):
/// at equal scores, the class with the fewest members first ("what
/// species is [Greedo]": `Rodian`, not `Character`).
fn specific_classes_first(kg: &Kg<'_>, query: &Query, found: &mut Answers) {
    let Query::Project { relation, .. } = query else {
        return;
    };
    let Some(r) = kg.relation_id(&relation.name) else {
        return;
    };
    if !crate::planner::paths::is_type(kg, r) {
        return;
    }
    let members = |class: u32| kg.inc.neighbours(class, r).len();
    found.answers.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| members(a.entity).cmp(&members(b.entity)))
    });
}

/// A chain whose last step goes straight back over the step before it,
/// from a set that is not the topic (`member -> author_inv -> author`: the
/// co-authors of an institution's people), asks for others of the same
/// kind: answers that are in that set rank below the others, at
/// [`kgbox_query::ANCHOR_WEIGHT`] times their score. The answers are the
/// same; only their order changes.
fn others_first(kg: &Kg<'_>, query: &Query, found: &mut Answers) {
    let Query::Project {
        relation: last,
        input,
    } = query
    else {
        return;
    };
    let Query::Project {
        relation: before,
        input: start,
    } = input.as_ref()
    else {
        return;
    };
    let back = |a: &str, b: &str| a.strip_suffix("_inv") == Some(b);
    if !(back(&last.name, &before.name) || back(&before.name, &last.name))
        || matches!(start.as_ref(), Query::Entity { .. })
    {
        return;
    }
    let Ok(plan) = kgbox_query::bind::bind(kg, start, "") else {
        return;
    };
    let opts = kgbox_query::ExecOptions {
        top_k: usize::MAX,
        max_paths: 0,
        ..kgbox_query::ExecOptions::default()
    };
    let Ok(from) = kgbox_query::execute(kg, &plan, &opts) else {
        return;
    };
    let from: std::collections::HashSet<u32> = from.answers.iter().map(|a| a.entity).collect();
    for a in &mut found.answers {
        if from.contains(&a.entity) {
            a.score *= kgbox_query::ANCHOR_WEIGHT;
        }
    }
    found.answers.sort_by(|a, b| b.score.total_cmp(&a.score));
}

#[cfg(test)]
mod tests {
    use super::reorder;
    use crate::rerank::test_graph::graph;
    use kgbox_query::{Answer, Answers};

    const TRIPLES: &[(&str, &str, &str)] = &[
        ("Greedo", "type", "Character"),
        ("Greedo", "type", "Rodian"),
        ("Han Solo", "type", "Character"),
        ("Han Solo", "type", "Human"),
        ("Han Solo", "ally", "Greedo"),
        ("Han Solo", "ally", "Chewbacca"),
        ("Luke", "ally", "Chewbacca"),
    ];

    #[test]
    fn a_type_answers_the_class_with_fewest_members_first() {
        graph(TRIPLES, |kg| {
            let id = |n: &str| kg.entity_id(n).expect("entity");
            let found = |names: &[&str], query: &str| {
                let mut a = Answers {
                    answers: names
                        .iter()
                        .map(|n| Answer {
                            entity: id(n),
                            score: 1.0,
                            paths: Vec::new(),
                        })
                        .collect(),
                    total: names.len(),
                    edge_visits: 0,
                };
                reorder(kg, query, &mut a);
                a.answers.iter().map(|a| a.entity).collect::<Vec<_>>()
            };
            assert_eq!(
                found(&["Character", "Rodian"], "\"Greedo\" -> type"),
                [id("Rodian"), id("Character")]
            );
            // Another relation keeps the executor's order.
            assert_eq!(
                found(&["Chewbacca", "Greedo"], "\"Han Solo\" -> ally"),
                [id("Chewbacca"), id("Greedo")]
            );
        });
    }

    const PAPERS: &[(&str, &str, &str)] = &[
        ("Uni", "member", "Ana"),
        ("Uni", "member", "Bo"),
        ("P1", "author", "Ana"),
        ("P1", "author", "Cy"),
        ("P2", "author", "Bo"),
        ("P2", "author", "Ana"),
        ("P3", "author", "Bo"),
        ("P3", "author", "Di"),
    ];

    #[test]
    fn a_round_trip_answers_others_first() {
        graph(PAPERS, |kg| {
            let run = |query: &str| {
                let plan = kgbox_query::bind::bind(kg, &kgbox_query::parse(query).unwrap(), "")
                    .expect("bind");
                let opts = kgbox_query::ExecOptions {
                    top_k: 10,
                    ..kgbox_query::ExecOptions::default()
                };
                let mut found = kgbox_query::execute(kg, &plan, &opts).expect("execute");
                super::reorder(kg, query, &mut found);
                found
                    .answers
                    .iter()
                    .map(|a| (kg.entity_name(a.entity).unwrap_or("").to_string(), a.score))
                    .collect::<Vec<_>>()
            };
            // The co-authors of Uni's people: Cy and Di first, then Uni's
            // own Ana and Bo at half their score.
            let got = run("\"Uni\" -> member -> author_inv -> author");
            let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["Cy", "Di", "Ana", "Bo"]);
            assert_eq!(
                got.iter().map(|g| g.1).collect::<Vec<_>>(),
                [
                    1.0,
                    1.0,
                    kgbox_query::ANCHOR_WEIGHT,
                    kgbox_query::ANCHOR_WEIGHT
                ]
            );
            // Straight back from the topic itself: the executor's order.
            let got = run("\"P1\" -> author -> author_inv");
            assert!(got.iter().all(|g| g.1 == 1.0), "{got:?}");
        });
    }
}
