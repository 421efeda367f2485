//! `learned+llm`: the learned plan when it is sure, the guided LLM's when it
//! is not, and the learned plan again when the LLM fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kgbox_query::link::Method;

use super::features::FeatureSpec;
use super::learned::{Demo, LearnedPlanner, PlannerMeta};
use super::{plan, PathRanker, PlanRequest, Planned, PlannerKind, Planners};
use crate::llm::scripted::Scripted;
use crate::llm::{ChatRequest, Constraint, LlmError};
use crate::question::{LinkedEntity, Topic};
use crate::rerank::test_graph::graph;

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Alien", "release_year", "1979"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Blade Runner", "release_year", "1982"),
];
const QUESTION: &str = "when did [Blade Runner] come out";

/// Two chain templates; `bias` is added to class 0 (directed_by), so its
/// probability is σ(bias) with every feature weight zero.
pub(crate) fn planner(bias: f32) -> LearnedPlanner {
    let demos = vec![
        Demo {
            class: 0,
            question: "who directed [Alien]".into(),
            topic: "Alien".into(),
        },
        Demo {
            class: 1,
            question: "when was [Alien] released".into(),
            topic: "Alien".into(),
        },
    ];
    two_templates(
        bias,
        ["{topic} -> directed_by", "{topic} -> release_year"],
        demos,
    )
}

/// A planner of two templates whose first has probability σ(bias) (every
/// feature weight zero), trained on examples (`demos`, shown to a guided
/// LLM).
pub(crate) fn two_templates(bias: f32, templates: [&str; 2], demos: Vec<Demo>) -> LearnedPlanner {
    let spec = FeatureSpec {
        embed_dim: 0,
        ngram_buckets: 4,
        signature_buckets: 2,
    };
    let dim = spec.dim();
    let mut weights = vec![0.0; 2 * (dim + 1)];
    weights[dim] = bias;
    let meta = PlannerMeta {
        demos,
        ..PlannerMeta::bare(spec, &templates)
    };
    LearnedPlanner::new(meta, weights).expect("valid")
}

fn run(kind: PlannerKind, bias: f32, chat: &Scripted) -> Planned {
    run_below(kind, bias, chat, 0.8)
}

/// [`run`] with `fallback_below`.
fn run_below(kind: PlannerKind, bias: f32, chat: &Scripted, fallback_below: f32) -> Planned {
    graph(FILMS, |kg| {
        let entity = kg.entity_id("Blade Runner").expect("entity");
        let start = QUESTION.find('[').expect("bracket");
        let end = QUESTION.find(']').expect("bracket") + 1;
        let topic = Topic {
            entity,
            name: "Blade Runner".into(),
            mention: "Blade Runner".into(),
            range: (start, end),
            probability: 1.0,
            method: Method::Exact,
        };
        let linked = [LinkedEntity {
            mention: "Blade Runner".into(),
            entity,
            name: "Blade Runner".into(),
            probability: 1.0,
            method: Method::Exact,
        }];
        let learned = planner(bias);
        let planners = Planners {
            kg,
            learned: Some(&learned),
            relvecs: None,
            embedder: None,
            steps: None,
            chat: Some(chat),
        };
        let req = PlanRequest {
            kind,
            question: QUESTION,
            topic: Some(&topic),
            linked: &linked,
            max_retries: 1,
            samples: 1,
            max_relations: 300,
            fallback_below,
            paths_below: fallback_below,
            paths: PathRanker::Off,
        };
        plan(&planners, &req).expect("a plan")
    })
}

fn release_year(_: &ChatRequest) -> Result<String, LlmError> {
    Ok(r#"{"topic": "Blade Runner", "path": ["release_year"]}"#.into())
}

#[test]
fn a_sure_learned_planner_does_not_call_the_llm() {
    let chat = Scripted::new(release_year);
    let p = run(PlannerKind::LearnedLlm, 5.0, &chat);
    assert_eq!(p.planner, PlannerKind::Learned);
    assert_eq!(p.query, "\"Blade Runner\" -> directed_by");
    assert!(chat.calls().is_empty());
    assert!(p.info.fallback.as_deref().unwrap_or("").contains("sure"));
}

#[test]
fn an_unsure_learned_planner_asks_the_guided_llm() {
    let chat = Scripted::new(release_year);
    let p = run(PlannerKind::LearnedLlm, 0.5, &chat);
    assert_eq!(p.planner, PlannerKind::Llm);
    assert_eq!(p.query, "\"Blade Runner\" -> release_year");
    assert!(p.info.guided);
    assert_eq!(
        p.info.alternatives.len(),
        2,
        "the learned alternatives are kept"
    );
    let calls = chat.calls();
    assert_eq!(calls.len(), 1);
    // Both templates' demonstrations, the more likely one last, then the question.
    let texts: Vec<&str> = calls[0]
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(
        texts[0].contains("Question: when was [Alien] released"),
        "{texts:?}"
    );
    assert!(
        texts[2].ends_with("Question: who directed [Alien]"),
        "{texts:?}"
    );
    assert_eq!(
        texts.last(),
        Some(&format!("Question: {QUESTION}").as_str())
    );
    match &calls[0].constraint {
        Constraint::JsonSchema { schema, .. } => {
            assert_eq!(schema["properties"]["topic"]["enum"][0], "Blade Runner");
        }
        Constraint::None => panic!("the reply is constrained"),
    }
    // `local` alone is guided too.
    let chat = Scripted::new(release_year);
    let p = run(PlannerKind::Local, 0.5, &chat);
    assert_eq!(
        (p.planner, p.query.as_str(), p.info.guided),
        (PlannerKind::Local, "\"Blade Runner\" -> release_year", true)
    );
    // A sure planner leaves the model its template's relations, and those
    // of a nearer demonstration: "when was [Alien] released" shares "when"
    // with the question, "who directed [Alien]" nothing.
    let chat =
        Scripted::new(|_| Ok(r#"{"topic": "Blade Runner", "path": ["directed_by"]}"#.into()));
    let p = run(PlannerKind::Local, 5.0, &chat);
    assert_eq!(p.query, "\"Blade Runner\" -> directed_by");
    match &chat.calls()[0].constraint {
        Constraint::JsonSchema { schema, .. } => {
            assert_eq!(
                schema["properties"]["path"]["items"]["enum"],
                serde_json::json!(["directed_by", "release_year"])
            );
        }
        Constraint::None => panic!("the reply is constrained"),
    }
}

#[test]
fn the_llm_breaks_near_ties_but_does_not_overrule() {
    // p(directed_by) = σ(2) = 0.88: release_year has 0.14 of it, under
    // LLM_MIN_SHARE, so the learned plan stands though the LLM was asked.
    let chat = Scripted::new(release_year);
    let p = run_below(PlannerKind::LearnedLlm, 2.0, &chat, 1.0);
    assert_eq!(chat.calls().len(), 1);
    assert_eq!(p.planner, PlannerKind::Learned);
    assert_eq!(p.query, "\"Blade Runner\" -> directed_by");
    assert_eq!(p.info.attempts, Some(1));
    let why = p.info.fallback.unwrap_or_default();
    assert!(why.contains("kept the learned plan"), "{why}");
    // σ(1) = 0.73: release_year has 0.37 of it, so the LLM's choice is used.
    let chat = Scripted::new(release_year);
    let p = run_below(PlannerKind::LearnedLlm, 1.0, &chat, 1.0);
    assert_eq!(p.planner, PlannerKind::Llm);
    assert_eq!(p.query, "\"Blade Runner\" -> release_year");
}

#[test]
fn a_failing_llm_leaves_the_learned_plan() {
    let timeout = Scripted::new(|_| {
        Err(LlmError::Transport {
            endpoint: "scripted".into(),
            message: "timed out after 5000 ms".into(),
        })
    });
    let p = run(PlannerKind::LearnedLlm, 0.5, &timeout);
    assert_eq!(p.planner, PlannerKind::Learned);
    assert_eq!(p.query, "\"Blade Runner\" -> directed_by");
    let why = p.info.fallback.unwrap_or_default();
    assert!(why.contains("failed") && why.contains("timed out"), "{why}");

    // Malformed replies, and a relation outside the shortlist, on every try.
    for reply in [
        "sure! the answer is 1982",
        r#"{"topic": "Blade Runner", "path": ["born_in"]}"#,
    ] {
        let chat = Scripted::new(move |_| Ok(reply.to_string()));
        let p = run(PlannerKind::LearnedLlm, 0.5, &chat);
        assert_eq!(p.planner, PlannerKind::Learned, "{reply}");
        assert_eq!(chat.calls().len(), 2, "one retry");
        assert!(p.info.fallback.unwrap_or_default().contains("failed"));
    }
}
