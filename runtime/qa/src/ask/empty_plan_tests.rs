//! A plan that finds nothing gives way to the planner's next choice (the
//! learned planner's next template, the LLM's next candidate), end to end
//! through [`crate::ask::ask`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::ask;
use super::test_stages::Plain;
use crate::llm::scripted::Scripted;
use crate::llm::{LlmError, Sample};
use crate::pipeline::{AskOptions, AskResult, Context, PlannerKind};
use crate::planner::features::FeatureSpec;
use crate::planner::learned::{Demo, LearnedPlanner, PlannerMeta};
use crate::rerank::test_graph::graph;

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Alien", "written_by", "Dan O'Bannon"),
    ("Blade Runner", "written_by", "Hampton Fancher"),
    (
        "The Return of the Living Dead",
        "directed_by",
        "Dan O'Bannon",
    ),
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
    // One demonstration per template, so that LLM planners are guided.
    let demos = (0..templates.len())
        .map(|class| Demo {
            class,
            question: "what about [Alien]".into(),
            topic: "Alien".into(),
        })
        .collect();
    let meta = PlannerMeta {
        demos,
        ..PlannerMeta::bare(spec, templates)
    };
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
            steps: None,
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
    // The directors of a director's films are the director alone, who is
    // the topic: the first template starts but finds nothing, and the
    // second template's query runs instead.
    let r = ask_learned(
        &[
            "{topic} -> directed_by_inv -> directed_by",
            "{topic} -> directed_by_inv",
        ],
        "what did [Ridley Scott] make",
    );
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by_inv");
    assert_eq!(
        r.plan.found_nothing,
        vec!["\"Ridley Scott\" -> directed_by_inv -> directed_by"]
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
fn a_next_choice_that_binds_runs_before_repair() {
    let repairing = || AskOptions {
        planner: PlannerKind::Learned,
        repair: true,
        ..AskOptions::default()
    };
    // The first template finds only the topic, so nothing. Repair would
    // relax it into a guess (the films' writers), but the second template
    // finds answers here, so it runs, unrepaired.
    let r = ask_with(
        &[
            "{topic} -> directed_by_inv -> directed_by",
            "{topic} -> directed_by_inv",
        ],
        "what did [Ridley Scott] make",
        None,
        repairing(),
    );
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by_inv");
    assert_eq!(
        r.plan.found_nothing,
        vec!["\"Ridley Scott\" -> directed_by_inv -> directed_by"]
    );
    assert!(r.repair.is_none(), "{:?}", r.repair);
    assert_eq!(r.answers.len(), 2);

    // When no next choice finds anything either, repair acts on the first.
    let r = ask_with(
        &[
            "{topic} -> directed_by_inv -> directed_by",
            "{topic} -> directed_by_inv -> directed_by -> directed_by_inv -> directed_by",
        ],
        "what did [Ridley Scott] make",
        None,
        repairing(),
    );
    assert_eq!(
        r.query,
        "\"Ridley Scott\" -> directed_by_inv -> directed_by"
    );
    let repair = r.repair.expect("the first choice is repaired");
    assert_eq!(repair.original, r.query);
    assert_eq!(
        repair.repaired.as_deref(),
        Some("\"Ridley Scott\" -> directed_by_inv -> written_by")
    );
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

#[test]
fn the_llm_candidates_are_run_in_order_until_one_finds_answers() {
    // Three replies: the greedy one (most likely) goes from a director to
    // the directors of their films (the topic alone) and finds nothing; the
    // next candidate, written twice, finds the films. An invalid reply is
    // only recorded.
    let chat = Scripted::sampling(|_, n| {
        assert_eq!(n, 4);
        // `path`: the relations, separated by spaces.
        let reply = |path: &str, lp: f32| {
            let quoted: Vec<String> = path.split(' ').map(|r| format!("\"{r}\"")).collect();
            Sample {
                text: format!(
                    r#"{{"topic": "Ridley Scott", "path": [{}]}}"#,
                    quoted.join(", ")
                ),
                logprob: Some(lp),
            }
        };
        Ok(vec![
            reply("directed_by_inv directed_by", -0.5),
            reply("directed_by_inv", -1.5),
            reply("directed_by_inv", -1.5),
            reply("release_year", -3.0),
        ])
    });
    let opts = AskOptions {
        planner: PlannerKind::Llm,
        samples: 4,
        repair: false,
        strategies: crate::strategies::StrategyOptions {
            enabled: false,
            ..Default::default()
        },
        llm_arbitrate: false,
        ..AskOptions::default()
    };
    let r = ask_with(
        &[
            "{topic} -> directed_by_inv -> directed_by",
            "{topic} -> directed_by_inv",
        ],
        "what did [Ridley Scott] make",
        Some(&chat),
        opts,
    );
    assert_eq!(r.planner, PlannerKind::Llm);
    assert_eq!(r.query, "\"Ridley Scott\" -> directed_by_inv");
    assert_eq!(
        r.plan.found_nothing,
        vec!["\"Ridley Scott\" -> directed_by_inv -> directed_by"]
    );
    assert_eq!(r.plan.replies, Some(4));
    assert_eq!(r.plan.rejected.len(), 1, "release_year is not shortlisted");
    let votes: Vec<usize> = r.plan.candidates.iter().map(|c| c.votes).collect();
    assert_eq!(votes, [1, 2]);
    assert_eq!(r.answers.len(), 2);
    assert_eq!(chat.calls().len(), 1, "one sampling call");
}

#[test]
fn a_guided_llm_plan_with_many_answers_does_not_fall_through() {
    // Two answers is more than max_answers 1, which makes a free LLM query
    // fall through; a guided chain stands.
    let chat = Scripted::sampling(|_, _| {
        Ok(vec![Sample {
            text: r#"{"topic": "Ridley Scott", "path": ["directed_by_inv"]}"#.into(),
            logprob: Some(-0.1),
        }])
    });
    let mut opts = AskOptions {
        planner: PlannerKind::Llm,
        repair: false,
        llm_arbitrate: false,
        ..AskOptions::default()
    };
    opts.strategies.max_answers = 1;
    let r = ask_with(
        &["{topic} -> directed_by_inv", "{topic} -> directed_by"],
        "what did [Ridley Scott] make",
        Some(&chat),
        opts,
    );
    assert!(r.plan.guided);
    assert_eq!(r.answers.len(), 2);
    assert!(r.strategies.is_empty(), "{:?}", r.strategies);
    assert_eq!(chat.calls().len(), 1);
}
