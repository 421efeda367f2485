//! A learned plan that finds nothing gives way to the planner's next
//! template, end to end through [`crate::ask::ask`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::ask;
use super::test_stages::Plain;
use crate::llm::scripted::Scripted;
use crate::llm::LlmError;
use crate::pipeline::{AskOptions, AskResult, Context, PlannerKind};
use crate::planner::features::FeatureSpec;
use crate::planner::learned::{LearnedPlanner, PlannerMeta};
use crate::rerank::test_graph::graph;

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
];

/// Templates in the order the planner prefers them (by bias).
fn planner(templates: &[&str]) -> LearnedPlanner {
    let spec = FeatureSpec {
        embed_dim: 0,
        ngram_buckets: 4,
        signature_buckets: 2,
    };
    let dim = spec.dim();
    let mut weights = vec![0.0; templates.len() * (dim + 1)];
    for i in 0..templates.len() {
        weights[i * (dim + 1) + dim] = -(i as f32);
    }
    let meta = PlannerMeta::bare(spec, templates);
    LearnedPlanner::new(meta, weights).expect("valid")
}

fn ask_learned(templates: &[&str], question: &str) -> AskResult {
    let opts = AskOptions {
        planner: PlannerKind::Learned,
        repair: false,
        ..AskOptions::default()
    };
    ask_with(templates, question, None, opts)
}

fn ask_with(
    templates: &[&str],
    question: &str,
    chat: Option<&Scripted>,
    opts: AskOptions,
) -> AskResult {
    let learned = planner(templates);
    graph(FILMS, |kg| {
        let ctx = Context {
            kg,
            learned: Some(&learned),
            relvecs: None,
            embedder: None,
            chat: chat.map(|c| c as &dyn crate::llm::ChatBackend),
            stages: &Plain(kg),
            reranker: None,
            name_similarity: None,
        };
        ask(&ctx, question, &opts).expect("answers")
    })
}

#[test]
fn an_empty_plan_gives_way_to_the_next_template() {
    // A director has no directed_by edges of their own: the second
    // template's query runs instead.
    let r = ask_learned(
        &["{topic} -> directed_by", "{topic} -> directed_by_inv"],
        "what did [Ridley Scott] make",
    );
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by_inv");
    assert_eq!(
        r.plan.found_nothing,
        vec!["\"Ridley Scott\" -> directed_by"]
    );
    let mut names: Vec<&str> = r.answers.iter().map(|a| a.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["Alien", "Blade Runner"]);

    // When no template finds anything, the first choice stands.
    let r = ask_learned(
        &["{topic} -> directed_by", "{topic} -> written_by"],
        "what did [Ridley Scott] make",
    );
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by");
    assert!(r.plan.found_nothing.is_empty());
    assert!(r.answers.is_empty());

    // A plan with answers is not second-guessed.
    let r = ask_learned(
        &["{topic} -> directed_by", "{topic} -> directed_by_inv"],
        "who directed [Alien]",
    );
    assert_eq!(r.query, "\"Alien\" -> directed_by");
    assert!(r.plan.found_nothing.is_empty());
}

#[test]
fn a_kept_learned_plan_does_not_fall_through_to_the_llm_strategies() {
    // learned+llm with a sure learned planner (p 0.73 >= 0.5) whose query
    // finds nothing: the strategies follow LLM queries only, so the model
    // is never called.
    let chat = Scripted::new(|_| {
        Err(LlmError::Transport {
            endpoint: "scripted".into(),
            message: "must not be called".into(),
        })
    });
    let opts = AskOptions {
        planner: PlannerKind::LearnedLlm,
        fallback_below: 0.5,
        repair: false,
        ..AskOptions::default()
    };
    let r = ask_with(
        &["{topic} -> directed_by", "{topic} -> written_by"],
        "what did [Ridley Scott] make",
        Some(&chat),
        opts,
    );
    assert_eq!(r.planner, PlannerKind::Learned);
    assert!(r.answers.is_empty());
    assert!(r.strategies.is_empty(), "{:?}", r.strategies);
    assert!(chat.calls().is_empty());
}
