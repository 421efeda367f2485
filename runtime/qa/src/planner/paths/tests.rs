//! The path ranker on a small graph, with an encoder that knows a few
//! words: each known word is one direction, anything else a shared one.

use super::relation_words::{description_domain, description_noun};
use super::*;
use crate::planner::{plan, PathMode, PathRanker, PlanRequest, PlannerKind, Planners};
use crate::question::Topic;
use crate::rerank::test_graph::graph;
use kgbox_query::dense::EncodeError;

/// Words and the direction each stands for; every other word is
/// [`OTHER`] at a third of the weight.
const VOCAB: &[(&str, usize)] = &[
    ("pilot", 0),
    ("pilots", 0),
    ("flies", 0),
    ("homeworld", 1),
    ("home", 1),
    ("planet", 1),
    ("come", 1),
    ("comes", 1),
    ("film", 2),
    ("films", 2),
    ("type", 3),
    ("species", 3),
    // A question word and its gloss: near nothing in the graph.
    ("where", 4),
    ("place", 4),
    ("employer", 5),
    // A word no relation's name or description has (an alias).
    ("crewed", 6),
];
const OTHER: usize = 7;
const DIM: usize = 8;

struct Words;

impl TextEncoder for Words {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; DIM];
                for w in t.split_whitespace() {
                    let w = w.to_lowercase();
                    match VOCAB.iter().find(|(k, _)| *k == w) {
                        Some(&(_, d)) => v[d] += 1.0,
                        None => v[OTHER] += 0.3,
                    }
                }
                unit(v)
            })
            .collect())
    }
    fn dim(&self) -> usize {
        DIM
    }
}

const TRIPLES: &[(&str, &str, &str)] = &[
    ("Millennium Falcon", "pilot", "Han Solo"),
    ("Millennium Falcon", "pilot", "Chewbacca"),
    ("Millennium Falcon", "film", "A New Hope"),
    ("X-wing", "pilot", "Luke Skywalker"),
    ("Han Solo", "homeworld", "Corellia"),
    ("Chewbacca", "homeworld", "Kashyyyk"),
    ("Luke Skywalker", "homeworld", "Tatooine"),
    ("Anakin Skywalker", "homeworld", "Tatooine"),
    ("Han Solo", "type", "Human"),
    ("Luke Skywalker", "type", "Human"),
    ("Han Solo", "film", "A New Hope"),
];

/// The ranked paths of `question` (topic masked as `ENTITY`) from `topic`,
/// as relation-name chains.
fn ranked(question: &str, topic: &str) -> Vec<(String, f32)> {
    graph(TRIPLES, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let q = Question::new(question, "ENTITY", &Words).expect("question");
        let t = kg.entity_id(topic).expect("topic");
        rank(kg, t, &q, &steps, &RankOptions::default())
            .into_iter()
            .map(|r| {
                let names = path_names(kg, &r.steps).expect("names");
                (names.join(" -> "), r.score)
            })
            .collect()
    })
}

/// The ranked paths of `question` from `topic` in `TRIPLES` with the
/// relation aliases `aliases`: (path, score).
fn ranked_with_aliases(
    question: &str,
    topic: &str,
    aliases: &[(&str, &str)],
) -> Vec<(String, f32)> {
    let mut g = kgbox_bundle::tiny::TinyGraph::from_triples(TRIPLES).expect("graph");
    g.set_relation_aliases(aliases).expect("aliases");
    let kg = g.kg().expect("kg");
    let steps = StepVectors::build(&kg, &Words).expect("steps");
    let q = Question::new(question, "ENTITY", &Words).expect("question");
    let t = kg.entity_id(topic).expect("topic");
    rank(&kg, t, &q, &steps, &RankOptions::default())
        .into_iter()
        .map(|r| {
            let names = path_names(&kg, &r.steps).expect("names");
            (names.join(" -> "), r.score)
        })
        .collect()
}

#[test]
fn a_relations_alias_matches_a_word_its_name_does_not() {
    let question = "who crewed ENTITY?";
    let score = |r: &[(String, f32)], path: &str| {
        r.iter()
            .find(|(p, _)| p == path)
            .map(|(_, s)| *s)
            .expect("ranked")
    };
    let without = ranked_with_aliases(question, "Millennium Falcon", &[]);
    let with = ranked_with_aliases(question, "Millennium Falcon", &[("pilot", "crewed")]);
    assert_eq!(with[0].0, "pilot", "{with:?}");
    assert!(score(&with, "pilot") > score(&without, "pilot") + 0.5);
    // An alias of another relation does not help `pilot`.
    let other = ranked_with_aliases(question, "Millennium Falcon", &[("film", "crewed")]);
    assert_eq!(score(&other, "pilot"), score(&without, "pilot"));
}

#[test]
fn a_relations_alias_names_what_it_leads_to() {
    // "crewed" names `pilot`'s objects (the crew), not the starship it
    // leaves: with "flies" taken by the step, it is the answer's type of
    // `film_inv -> pilot` only.
    let r = ranked_with_aliases(
        "which crewed flies in ENTITY's film?",
        "A New Hope",
        &[("pilot", "crewed")],
    );
    let score = |p: &str| {
        r.iter()
            .find(|(q, _)| q == p)
            .map(|(_, s)| *s)
            .unwrap_or_else(|| panic!("{p} is not ranked: {r:?}"))
    };
    assert!(
        score("film_inv -> pilot") > score("film_inv -> pilot_inv") + 0.1,
        "{r:?}"
    );
}

/// The score of the ranked path that follows `chain`.
fn score_of(kg: &Kg<'_>, ranked: &[RankedPath], chain: &[&str]) -> f32 {
    ranked
        .iter()
        .find(|r| path_names(kg, &r.steps).is_some_and(|n| n == chain))
        .map(|r| r.score)
        .unwrap_or_else(|| panic!("{chain:?} is not ranked"))
}

#[test]
fn a_second_hop_is_taken_for_words_the_first_leaves_unexplained() {
    let r = ranked(
        "where do the pilots of ENTITY come from?",
        "Millennium Falcon",
    );
    assert_eq!(r[0].0, "pilot -> homeworld", "{r:?}");
    let one = r.iter().find(|(p, _)| p == "pilot").expect("pilot");
    assert!(r[0].1 > one.1);
}

#[test]
fn a_question_of_one_hop_stays_one_hop() {
    let r = ranked("who pilots ENTITY?", "Millennium Falcon");
    assert_eq!(r[0].0, "pilot", "{r:?}");
}

#[test]
fn others_of_the_same_kind_go_straight_back() {
    let r = ranked(
        "who else comes from ENTITY's home planet?",
        "Luke Skywalker",
    );
    assert_eq!(r[0].0, "homeworld -> homeworld_inv", "{r:?}");
}

#[test]
fn only_paths_that_bind_are_ranked_and_none_go_through_a_class() {
    let r = ranked("what species are the pilots of ENTITY?", "X-wing");
    assert!(r.iter().all(|(p, _)| p.starts_with("pilot")), "{r:?}");
    assert!(r.iter().all(|(p, _)| !p.contains("type_inv")), "{r:?}");
    assert_eq!(r[0].0, "pilot -> type", "{r:?}");
}

#[test]
fn relations_read_as_their_names_and_their_descriptions_nouns() {
    assert_eq!(
        description_noun("the director of a film").as_deref(),
        Some("director")
    );
    assert_eq!(
        description_noun("an actor starring in a film").as_deref(),
        Some("actor starring")
    );
    assert_eq!(
        description_noun("the year a film was released").as_deref(),
        Some("year")
    );
    assert_eq!(
        description_noun("a tag describing a film").as_deref(),
        Some("tag describing")
    );
    assert_eq!(description_noun("a genre"), None);
    graph(&[("a", "hasGenre", "b")], |kg| {
        let r = kg.relation_id("hasGenre").expect("relation");
        assert_eq!(relation_texts(kg, r), ["genre".to_string(), "genre".into()]);
    });
}

#[test]
fn relation_ends_are_typed_by_description_or_by_class() {
    graph(TRIPLES, |kg| {
        let pilot = kg.relation_id("pilot").expect("pilot");
        let home = kg.relation_id("homeworld").expect("homeworld");
        let ends = end_types(kg);
        // Pilots are typed Human; ships and planets have no class.
        assert_eq!(ends[pilot as usize], [None, Some("human".to_string())]);
        assert_eq!(ends[home as usize], [Some("human".to_string()), None]);
    });
}

#[test]
fn a_description_names_its_subjects_type() {
    let domain = |d: &str| description_domain(d);
    assert_eq!(domain("the director of a film").as_deref(), Some("film"));
    assert_eq!(
        domain("the year a film was released").as_deref(),
        Some("film")
    );
    assert_eq!(domain("a genre"), None);
    assert_eq!(domain("the genre"), None);
}

#[test]
fn chains_and_steps_round_trip() {
    graph(TRIPLES, |kg| {
        let steps = path_steps(kg, &["pilot", "homeworld_inv"]).expect("steps");
        assert!(!steps[0].inverse && steps[1].inverse);
        assert_eq!(
            path_names(kg, &steps).expect("names"),
            ["pilot", "homeworld_inv"]
        );
        assert!(path_steps(kg, &["pilot", "nowhere"]).is_none());
    });
}

/// The question most plans below are of.
const FALCON: &str = "where do the pilots of Millennium Falcon come from?";

/// The plan of a question about the Millennium Falcon ([`FALCON`]), by
/// the `local` planner when a chat model is given.
fn falcon_plan(
    question: &str,
    kg: &Kg<'_>,
    steps: &StepVectors,
    learned: Option<&crate::planner::LearnedPlanner>,
    paths: PathRanker,
    chat: Option<&dyn crate::llm::ChatBackend>,
) -> Result<crate::planner::Planned, crate::planner::PlanError> {
    let start = question.find("Millennium").expect("topic");
    let topic = Topic {
        entity: kg.entity_id("Millennium Falcon").expect("topic"),
        name: "Millennium Falcon".into(),
        mention: "Millennium Falcon".into(),
        range: (start, start + "Millennium Falcon".len()),
        probability: 1.0,
        method: kgbox_query::link::Method::Exact,
    };
    let planners = Planners {
        kg,
        learned,
        relvecs: None,
        embedder: Some(&Words),
        chat,
        steps: Some(steps),
    };
    let req = PlanRequest {
        kind: match chat {
            Some(_) => PlannerKind::Local,
            None => PlannerKind::Learned,
        },
        question,
        topic: Some(&topic),
        linked: &[],
        max_retries: 0,
        samples: 1,
        max_relations: 10,
        fallback_below: 0.8,
        paths_below: 0.8,
        paths,
    };
    plan(&planners, &req)
}

#[test]
fn a_planner_trained_on_examples_gets_the_ranker_only_when_unsure() {
    use crate::planner::fallback_tests::two_templates;
    let learned = |bias: f32| two_templates(bias, ["{topic} -> pilot", "{topic} -> film"], vec![]);
    graph(TRIPLES, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let query = |planner, paths| {
            falcon_plan(FALCON, kg, &steps, Some(planner), paths, None)
                .expect("plan")
                .query
        };
        let (sure, unsure) = (learned(5.0), learned(0.0));
        assert_eq!(PathRanker::Auto.mode(Some(&sure)), PathMode::Unsure);
        let (one, two) = (
            "\"Millennium Falcon\" -> pilot",
            "\"Millennium Falcon\" -> pilot -> homeworld",
        );
        // Sure (0.99): its own plan, which the ranker would change.
        assert_eq!(query(&sure, PathRanker::Auto), one);
        assert_eq!(query(&sure, PathRanker::On), two);
        // Unsure (0.5): the ranker is weighed in.
        assert_eq!(query(&unsure, PathRanker::Auto), two);
        assert_eq!(query(&unsure, PathRanker::Off), one);
    });
}

#[test]
fn a_sure_planner_of_one_step_gets_the_ranker_when_the_question_asks_for_others() {
    use crate::planner::fallback_tests::two_templates;
    let sure = two_templates(5.0, ["{topic} -> pilot", "{topic} -> film"], vec![]);
    graph(TRIPLES, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let ranked = |question: &str| {
            let planned = falcon_plan(question, kg, &steps, Some(&sure), PathRanker::Auto, None)
                .expect("plan");
            !planned.info.paths.is_empty()
        };
        // "Other" asks for more than the Falcon's pilots: the ranker is
        // weighed in, though the planner is sure (0.99) of `pilot`.
        assert!(ranked(
            "who else flies the ships of the pilots of Millennium Falcon?"
        ));
        assert!(ranked(
            "what other ships do the pilots of Millennium Falcon fly?"
        ));
        // Without such a word, its own plan stands.
        assert!(!ranked(
            "where do the pilots of Millennium Falcon come from?"
        ));
    });
}

#[test]
fn without_a_learned_planner_the_ranker_plans() {
    graph(TRIPLES, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let planned = falcon_plan(FALCON, kg, &steps, None, PathRanker::Auto, None).expect("plan");
        assert_eq!(planned.query, "\"Millennium Falcon\" -> pilot -> homeworld");
        assert_eq!(planned.planner, PlannerKind::Zeroshot);
        assert!(!planned.info.paths.is_empty());
        // Off, with nothing else to plan with, it is an error that says so.
        assert!(falcon_plan(FALCON, kg, &steps, None, PathRanker::Off, None).is_err());
    });
}

#[test]
fn a_chat_model_chooses_among_the_ranked_paths_and_can_write_no_other() {
    use crate::llm::scripted::Scripted;
    use crate::llm::{Constraint, Sample};
    let reply = |path: &str, p: f32| Sample {
        text: format!("{{\"path\": \"{path}\"}}"),
        logprob: Some(p.ln()),
    };
    graph(TRIPLES, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let ranker = falcon_plan(FALCON, kg, &steps, None, PathRanker::Auto, None).expect("plan");
        let shown: Vec<&str> = ranker.info.paths.iter().map(|c| c.query.as_str()).collect();
        assert!(shown.len() >= 2, "{shown:?}");
        // A model sure of a path the ranker ties with another moves it
        // ahead of it, and leaves a clear first choice first.
        assert_eq!(
            shown[1..3],
            [
                "\"Millennium Falcon\" -> pilot",
                "\"Millennium Falcon\" -> pilot -> homeworld -> homeworld_inv"
            ]
        );
        assert_eq!(ranker.info.paths[1].score, ranker.info.paths[2].score);
        assert!(ranker.info.paths[0].score > ranker.info.paths[1].score);
        let sure = Scripted::sampling(move |_, _| {
            Ok(vec![reply("pilot -> homeworld -> homeworld_inv", 0.9999)])
        });
        let planned =
            falcon_plan(FALCON, kg, &steps, None, PathRanker::Auto, Some(&sure)).expect("plan");
        assert_eq!(planned.planner, PlannerKind::Local);
        assert_eq!(planned.query, shown[0]);
        let next: Vec<&str> = planned.next.iter().map(|n| n.query.as_str()).collect();
        assert_eq!(next, [shown[2], shown[1]]);
        assert_eq!(planned.info.candidates[1].query, shown[2]);
        assert!(planned.info.candidates[1]
            .logprob
            .is_some_and(|lp| lp > -1e-3));
        assert_eq!(planned.info.candidates.len(), shown.len().min(5));
        // The reply may only be one of the offered paths, by grammar.
        let calls = sure.calls();
        let Constraint::JsonSchema { schema, .. } = &calls[0].constraint else {
            panic!("no schema");
        };
        let options = schema["properties"]["path"]["enum"]
            .as_array()
            .expect("enum");
        assert_eq!(options.len(), planned.info.candidates.len());
        assert!(
            options.iter().any(|o| o == "pilot -> homeworld"),
            "{options:?}"
        );
        assert!(sure.sent().contains("Paths: "));
        assert!(!sure.sent().contains("Corellia"), "no triple is shown");
        // A reply off the list is refused, and a model that fails leaves
        // the ranker's plan.
        let off = Scripted::sampling(move |_, _| Ok(vec![reply("film -> pilot", 0.9)]));
        let planned =
            falcon_plan(FALCON, kg, &steps, None, PathRanker::Auto, Some(&off)).expect("plan");
        assert_eq!(planned.query, ranker.query);
        assert!(planned
            .info
            .fallback
            .as_deref()
            .is_some_and(|f| f.contains("failed")));
        let down = Scripted::sampling(|_, _| Err(crate::llm::LlmError::Local("down".into())));
        let planned =
            falcon_plan(FALCON, kg, &steps, None, PathRanker::Auto, Some(&down)).expect("plan");
        assert_eq!(planned.query, ranker.query);
    });
}

#[test]
fn a_path_no_template_has_is_unknown_where_synthesis_left_its_length_out() {
    use crate::planner::fallback_tests::two_templates;
    use crate::planner::path_plan::candidates;
    use crate::planner::template::Template;
    use crate::planner::Prediction;
    graph(TRIPLES, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let masked = "where do the pilots of ENTITY come from?";
        let q = Question::new(masked, "ENTITY", &Words).expect("question");
        let topic = kg.entity_id("Millennium Falcon").expect("topic");
        // The learned planner weighs heavily here, so that its opinion
        // decides: sure of `pilot`, with no template of two hops.
        let opts = RankOptions {
            learned_weight: 1.0,
            unknown_learned: 1.0,
            ..RankOptions::default()
        };
        let preds = [("{topic} -> pilot", 0.99), ("{topic} -> film", 0.01)]
            .iter()
            .enumerate()
            .map(|(class, &(t, probability))| Prediction {
                class,
                template: Template(t.into()),
                probability,
            })
            .collect::<Vec<_>>();
        let best = |partial: Vec<bool>| {
            let mut planner = two_templates(5.0, ["{topic} -> pilot", "{topic} -> film"], vec![]);
            planner.meta.partial_hops = partial;
            let cands = candidates(
                kg,
                (topic, "Millennium Falcon"),
                &q,
                &steps,
                Some((&planner, &preds)),
                PathMode::Mix,
                &opts,
            );
            cands.first().expect("a candidate").query.clone()
        };
        // Trained on every two-hop path: one it never saw is unlikely.
        assert_eq!(best(vec![]), "\"Millennium Falcon\" -> pilot");
        assert_eq!(best(vec![false, false]), "\"Millennium Falcon\" -> pilot");
        // Trained on some: the ranker's reading stands.
        assert_eq!(
            best(vec![false, true]),
            "\"Millennium Falcon\" -> pilot -> homeworld"
        );
    });
}

#[test]
fn the_type_relation_leads_to_the_class_of_classes() {
    let mut triples = TRIPLES.to_vec();
    let types = |triples: &[(&'static str, &'static str, &'static str)]| {
        graph(triples, |kg| {
            let typ = kg.relation_id("type").expect("type");
            end_types(kg)[typ as usize][1].clone()
        })
    };
    assert_eq!(types(&triples), None);
    triples.push(("Human", "type", "Species"));
    assert_eq!(types(&triples).as_deref(), Some("species"));
}

#[test]
fn the_type_step_is_typed_by_the_classes_it_reaches() {
    let mut triples = TRIPLES.to_vec();
    triples.push(("Human", "type", "Species"));
    triples.push(("Tatooine", "type", "Planet"));
    // The score of `ENTITY -> type` for "what species is ENTITY by type":
    // the step takes "type", the answer "species" where its classes have one.
    let type_score = |topic: &str| {
        graph(&triples, |kg| {
            let steps = StepVectors::build(kg, &Words).expect("steps");
            let q = Question::new("what species is ENTITY by type", "ENTITY", &Words).expect("q");
            let t = kg.entity_id(topic).expect("topic");
            let ranked = rank(kg, t, &q, &steps, &RankOptions::default());
            score_of(kg, &ranked, &["type"])
        })
    };
    // `Human` is a species; `Planet` is no class of anything, so the step
    // from Tatooine gains nothing from "species" naming its answer.
    let (human, planet) = (type_score("Han Solo"), type_score("Tatooine"));
    assert!(human > planet + 0.1, "{human} {planet}");
}

#[test]
fn where_asks_for_a_place_by_the_type_of_what_a_path_reaches() {
    // "where" is near no word of the graph, "raised" is no relation's, so
    // only the type of what the paths reach tells them apart: the
    // homeworlds are planets, a kind of place, the films are not.
    let margin = |class: &'static str| {
        let mut triples = TRIPLES.to_vec();
        triples.push(("Corellia", "type", class));
        triples.push(("Kashyyyk", "type", class));
        graph(&triples, |kg| {
            let steps = StepVectors::build(kg, &Words).expect("steps");
            let q = Question::new("where were the pilots of ENTITY raised", "ENTITY", &Words)
                .expect("q");
            let t = kg.entity_id("Millennium Falcon").expect("topic");
            let ranked = rank(kg, t, &q, &steps, &RankOptions::default());
            score_of(kg, &ranked, &["pilot", "homeworld"])
                - score_of(kg, &ranked, &["pilot", "film"])
        })
    };
    let (planet, rock) = (margin("Planet"), margin("Rock"));
    assert!(planet > rock + 0.2, "{planet} {rock}");
}

#[test]
fn where_someone_works_asks_for_an_organisation_not_a_place() {
    // "work" is no relation's word here: the types of what the paths
    // reach tell them apart, and "where ... work" asks for an employer.
    let triples = [
        ("Ada", "affiliation", "Acme Labs"),
        ("Ada", "based_near", "London"),
        ("Acme Labs", "type", "Organization"),
        ("London", "type", "City"),
    ];
    graph(&triples, |kg| {
        let steps = StepVectors::build(kg, &Words).expect("steps");
        let t = kg.entity_id("Ada").expect("topic");
        let margin = |question: &str| {
            let q = Question::new(question, "ENTITY", &Words).expect("q");
            let ranked = rank(kg, t, &q, &steps, &RankOptions::default());
            score_of(kg, &ranked, &["affiliation"]) - score_of(kg, &ranked, &["based_near"])
        };
        let work = margin("where does ENTITY work");
        assert!(work > 0.2, "{work}");
        let live = margin("where does ENTITY live");
        assert!(live < -0.2, "{live}");
    });
}
