//! The order of a plan's answers where the question says more than the
//! executor's scores: what more of a chain leads to first, the most
//! specific class for a type, others first after a round trip, the type
//! the question names first. The answers stay the same set.

use std::collections::HashSet;

use kgbox_bundle::Kg;
use kgbox_query::{Answers, Query};

use crate::planner::paths::{is_type, path_steps, type_relation};
use crate::words::{singular, split_words};

/// Reorders `found`, the answers of `query` (a DSL query; one that does
/// not parse is left as it is), for a question that names its answer's
/// type with `noun` (when it does).
pub(crate) fn reorder(kg: &Kg<'_>, query: &str, noun: Option<&str>, found: &mut Answers) {
    let Ok(q) = kgbox_query::parse(query) else {
        return;
    };
    best_supported_first(kg, &q, found);
    specific_classes_first(kg, &q, found);
    others_first(kg, &q, found);
    if let Some(noun) = noun {
        named_type_first(kg, noun, found);
    }
}

/// A chain of two steps or more: at equal scores, the answers that more
/// of the last step's starting set lead to come first ("where do the other
/// pilots of [X]'s starships come from" answers the planet two of those
/// pilots come from before a planet one does). The answers are the same.
fn best_supported_first(kg: &Kg<'_>, query: &Query, found: &mut Answers) {
    let Query::Project { relation, input } = query else {
        return;
    };
    let tied = found.answers.windows(2).any(|w| w[0].score == w[1].score);
    if matches!(input.as_ref(), Query::Entity { .. }) || !tied {
        return;
    }
    // The last step, read as the binder reads it.
    let Some(&[step]) = path_steps(kg, &[&relation.name]).as_deref() else {
        return;
    };
    let Some(from) = every_answer(kg, input) else {
        return;
    };
    let support = |answer: u32| {
        let before = if step.inverse {
            kg.out.neighbours(answer, step.relation)
        } else {
            kg.inc.neighbours(answer, step.relation)
        };
        before.iter().filter(|m| from.contains(m)).count()
    };
    let mut counted: Vec<_> = std::mem::take(&mut found.answers)
        .into_iter()
        .map(|a| (support(a.entity), a))
        .collect();
    counted.sort_by(|(sa, a), (sb, b)| b.score.total_cmp(&a.score).then(sb.cmp(sa)));
    found.answers = counted.into_iter().map(|(_, a)| a).collect();
}

/// At equal scores, the answers of a class whose name ends in the noun the
/// question names its answer with come first ("what *starships* did [X]
/// fly": the `Starship`s X is a pilot of before the `Vehicle`s). Nothing
/// changes unless some answers are of that class and some are not.
fn named_type_first(kg: &Kg<'_>, noun: &str, found: &mut Answers) {
    let Some(typ) = type_relation(kg) else {
        return;
    };
    let noun = singular(noun);
    let named = |class: u32| {
        kg.entity_name(class)
            .and_then(|n| split_words(n).pop())
            .is_some_and(|last| singular(&last) == noun)
    };
    let of_noun = |entity: u32| kg.out.neighbours(entity, typ).iter().any(|&c| named(c));
    let marks: Vec<bool> = found.answers.iter().map(|a| of_noun(a.entity)).collect();
    if marks.iter().all(|&m| m) || !marks.iter().any(|&m| m) {
        return;
    }
    let mut marked: Vec<_> = std::mem::take(&mut found.answers)
        .into_iter()
        .zip(marks)
        .collect();
    marked.sort_by(|(a, am), (b, bm)| b.score.total_cmp(&a.score).then(bm.cmp(am)));
    found.answers = marked.into_iter().map(|(a, _)| a).collect();
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
    if !is_type(kg, r) {
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
    let Some(from) = every_answer(kg, start) else {
        return;
    };
    for a in &mut found.answers {
        if from.contains(&a.entity) {
            a.score *= kgbox_query::ANCHOR_WEIGHT;
        }
    }
    found.answers.sort_by(|a, b| b.score.total_cmp(&a.score));
}

/// Every answer of `query`, a part of the plan (none when it does not
/// bind or run).
fn every_answer(kg: &Kg<'_>, query: &Query) -> Option<HashSet<u32>> {
    let plan = kgbox_query::bind::bind(kg, query, "").ok()?;
    let opts = kgbox_query::ExecOptions {
        top_k: usize::MAX,
        max_paths: 0,
        ..kgbox_query::ExecOptions::default()
    };
    let found = kgbox_query::execute(kg, &plan, &opts).ok()?;
    Some(found.answers.iter().map(|a| a.entity).collect())
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

    /// `names`, each at score 1, reordered as the answers of `query` to a
    /// question whose answer noun is `noun`.
    fn order(
        kg: &kgbox_bundle::Kg<'_>,
        names: &[&str],
        query: &str,
        noun: Option<&str>,
    ) -> Vec<u32> {
        let mut a = Answers {
            answers: names
                .iter()
                .map(|n| Answer {
                    entity: kg.entity_id(n).expect("entity"),
                    score: 1.0,
                    paths: Vec::new(),
                })
                .collect(),
            total: names.len(),
            edge_visits: 0,
        };
        reorder(kg, query, noun, &mut a);
        a.answers.iter().map(|a| a.entity).collect()
    }

    #[test]
    fn a_type_answers_the_class_with_fewest_members_first() {
        graph(TRIPLES, |kg| {
            let id = |n: &str| kg.entity_id(n).expect("entity");
            let found = |names: &[&str], query: &str| order(kg, names, query, None);
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

    const CRAFT: &[(&str, &str, &str)] = &[
        ("X-wing", "type", "Starship"),
        ("Speeder", "type", "Vehicle"),
        ("Shuttle", "type", "Imperial Starship"),
        ("X-wing", "pilot", "Luke"),
        ("Speeder", "pilot", "Luke"),
        ("Shuttle", "pilot", "Luke"),
    ];

    #[test]
    fn the_class_the_question_names_comes_first() {
        graph(CRAFT, |kg| {
            let id = |n: &str| kg.entity_id(n).expect("entity");
            let all = ["Speeder", "Shuttle", "X-wing"];
            let query = "\"Luke\" -> pilot_inv";
            assert_eq!(
                order(kg, &all, query, Some("starships")),
                [id("Shuttle"), id("X-wing"), id("Speeder")]
            );
            assert_eq!(
                order(kg, &all, query, Some("vehicle")),
                [id("Speeder"), id("Shuttle"), id("X-wing")]
            );
            // A noun no class ends in, or no noun: the executor's order.
            let same = [id("Speeder"), id("Shuttle"), id("X-wing")];
            assert_eq!(order(kg, &all, query, Some("planets")), same);
            assert_eq!(order(kg, &all, query, None), same);
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

    /// The answers of `query`, executed and reordered: names and scores.
    fn run(kg: &kgbox_bundle::Kg<'_>, query: &str) -> Vec<(String, f32)> {
        let plan =
            kgbox_query::bind::bind(kg, &kgbox_query::parse(query).unwrap(), "").expect("bind");
        let opts = kgbox_query::ExecOptions {
            top_k: 10,
            max_paths: 0,
            ..kgbox_query::ExecOptions::default()
        };
        let mut found = kgbox_query::execute(kg, &plan, &opts).expect("execute");
        super::reorder(kg, query, None, &mut found);
        found
            .answers
            .iter()
            .map(|a| (kg.entity_name(a.entity).unwrap_or("").to_string(), a.score))
            .collect()
    }

    const CREW: &[(&str, &str, &str)] = &[
        ("Speeder", "pilot", "Lando"),
        ("Speeder", "pilot", "Wedge"),
        ("Leia", "homeworld", "Alderaan"),
        ("Han", "homeworld", "Corellia"),
        ("Wedge", "homeworld", "Corellia"),
        ("Lando", "homeworld", "Socorro"),
        ("Falcon", "pilot", "Leia"),
        ("Falcon", "pilot", "Han"),
        ("Falcon", "pilot", "Wedge"),
        ("Falcon", "pilot", "Lando"),
    ];

    #[test]
    fn a_chain_answers_what_more_of_its_last_set_leads_to_first() {
        graph(CREW, |kg| {
            let names = |query: &str| -> Vec<String> {
                run(kg, query).into_iter().map(|(n, _)| n).collect()
            };
            // Two of the Falcon's pilots come from Corellia, one from each
            // other planet (those keep the executor's order).
            assert_eq!(
                names("\"Falcon\" -> pilot -> homeworld"),
                ["Corellia", "Alderaan", "Socorro"]
            );
            // Over an inverse step: both Corellians fly the Falcon, one
            // the Speeder.
            assert_eq!(
                names("\"Corellia\" -> homeworld_inv -> pilot_inv"),
                ["Falcon", "Speeder"]
            );
            // One step: the executor's order.
            assert_eq!(names("\"Corellia\" -> homeworld_inv"), ["Han", "Wedge"]);
        });
    }

    #[test]
    fn a_round_trip_answers_others_first() {
        graph(PAPERS, |kg| {
            let run = |query: &str| run(kg, query);
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
