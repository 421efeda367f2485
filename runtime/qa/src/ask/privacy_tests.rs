//! The privacy policy under every planner mode: whatever the planner, the
//! model's replies (good, rejected and retried, empty so the retrieval
//! strategies fall through) and whether the arbitrator runs, no request to
//! the chat model carries a triple of the graph (only the question, names,
//! relation names and candidate answers). The same requests go to the
//! OpenAI-compatible endpoint (`llm`) and the in-process model (`local`):
//! both are a [`crate::llm::ChatBackend`] behind [`Context::chat`].

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::ask;
use super::test_stages::Plain;
use crate::llm::scripted::Scripted;
use crate::llm::{ChatRequest, Constraint, LlmError};
use crate::pipeline::{AskOptions, Context, PlannerKind};
use crate::planner::fallback_tests::planner;
use crate::rerank::test_graph::graph;

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Alien", "release_year", "1979"),
    ("Alien", "has_genre", "Horror"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Blade Runner", "release_year", "1982"),
    ("Blade Runner", "written_by", "Philip K. Dick"),
    ("Philip K. Dick", "born_in", "Chicago"),
];

const QUESTIONS: &[&str] = &[
    "who directed [Blade Runner]",
    "when did [Alien] come out",
    "where was the writer of [Blade Runner] born",
    "what else did the director of [Alien] make",
];

const KINDS: [PlannerKind; 6] = [
    PlannerKind::Learned,
    PlannerKind::Zeroshot,
    PlannerKind::Llm,
    PlannerKind::Local,
    PlannerKind::LearnedLlm,
    PlannerKind::LearnedLocal,
];

/// How the model replies to a plan request.
#[derive(Clone, Copy, Debug)]
enum Plans {
    /// A query that answers.
    Good,
    /// First a relation the graph does not have (rejected, so the error goes
    /// back to the model), then a good one.
    RejectedThenGood,
    /// A query that binds but finds nothing (and query repair off): the
    /// strategies fall through (paths, triplets, final answer).
    Empty,
}

fn model(plans: Plans) -> Scripted {
    let n = AtomicUsize::new(0);
    Scripted::new(move |req: &ChatRequest| {
        let guided = schema_text(req).contains("\"path\"");
        // The question's bracketed topic.
        let last = req
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or("");
        let topic = last
            .rsplit_once('[')
            .and_then(|(_, rest)| rest.split_once(']'))
            .map_or("Blade Runner", |(t, _)| t)
            .to_string();
        let first = n.fetch_add(1, Ordering::SeqCst) == 0;
        let relation = match plans {
            Plans::Good => "directed_by",
            Plans::RejectedThenGood if first => "directed",
            Plans::RejectedThenGood => "directed_by",
            Plans::Empty => "born_in",
        };
        Ok(match req.purpose {
            "plan" if guided => {
                format!(r#"{{"topic": "{topic}", "path": ["{relation}"]}}"#)
            }
            "plan" => format!(r#"{{"query": "\"{topic}\" -> {relation}"}}"#),
            // For one question no path: the triplets strategy explores.
            "paths" if request_text(req).contains("director of") => r#"{"paths": []}"#.into(),
            "paths" => r#"{"paths": ["Blade Runner: written_by -> born_in"]}"#.into(),
            "triplets" => r#"{"relations": ["directed_by"], "reached_answer": "yes"}"#.into(),
            "final_answer" | "arbitrate" => r#"{"answers": ["Ridley Scott", "Chicago"]}"#.into(),
            other => return Err(LlmError::BadReply(format!("unexpected purpose {other}"))),
        })
    })
}

fn schema_text(req: &ChatRequest) -> String {
    match &req.constraint {
        Constraint::JsonSchema { schema, .. } => schema.to_string(),
        Constraint::None => String::new(),
    }
}

/// Everything a request carries: each message and the reply schema.
fn request_text(req: &ChatRequest) -> String {
    let mut text: Vec<String> = req.messages.iter().map(|m| m.content.clone()).collect();
    text.push(schema_text(req));
    text.join("\n")
}

/// The triples of FILMS found in `text`.
fn leaks(text: &str) -> Vec<String> {
    super::test_stages::leaks(FILMS, text)
}

/// Asks every question with `kind` and the model replying as `plans`, with
/// the bundle's learned planner or without one (then the LLM's plan is an
/// unguided query, whose empty result sends the strategies on): the
/// requests the model got.
fn requests(
    kind: PlannerKind,
    plans: Plans,
    with_learned: bool,
    share_context: bool,
) -> Vec<ChatRequest> {
    let chat = model(plans);
    // Class 0 (directed_by) at σ(0) = 0.5: below `fallback_below`, so the
    // `learned+…` kinds ask the model too.
    let learned = planner(0.0);
    graph(FILMS, |kg| {
        let ctx = Context {
            kg,
            learned: with_learned.then_some(&learned),
            relvecs: None,
            embedder: None,
            steps: None,
            chat: Some(&chat),
            stages: &Plain(kg),
            reranker: None,
            name_similarity: None,
        };
        let opts = AskOptions {
            planner: kind,
            fallback_below: 0.9,
            share_context,
            samples: 2,
            // Without repair an empty query goes on to the strategies.
            repair: !matches!(plans, Plans::Empty),
            ..AskOptions::default()
        };
        for q in QUESTIONS {
            // A failed ask (the model's plans all rejected) is an answer
            // too; what matters here is what was sent.
            let _ = ask(&ctx, q, &opts);
        }
    });
    chat.calls()
}

#[test]
fn no_triple_reaches_the_model_under_any_planner_mode() {
    let mut purposes = BTreeSet::new();
    let mut checked = 0;
    for kind in KINDS {
        let mut asked = 0;
        for plans in [Plans::Good, Plans::RejectedThenGood, Plans::Empty] {
            for with_learned in [true, false] {
                let calls = requests(kind, plans, with_learned, false);
                for req in &calls {
                    let text = request_text(req);
                    assert_eq!(
                        leaks(&text),
                        Vec::<String>::new(),
                        "{kind} with {plans:?} plans (learned planner: {with_learned}), a `{}` request:\n{text}",
                        req.purpose
                    );
                    purposes.insert(req.purpose);
                }
                asked += calls.len();
            }
        }
        // Every mode reaches the model (the arbitrator at least), so the
        // check above saw its requests.
        assert!(asked > 0, "{kind}: no request to check");
        checked += asked;
    }
    eprintln!("privacy: {checked} requests checked, of purposes {purposes:?}");
    // Every kind of request was made and checked.
    let all: BTreeSet<&str> = ["arbitrate", "final_answer", "paths", "plan", "triplets"].into();
    assert_eq!(purposes, all);
}

#[test]
fn with_shared_context_the_same_check_finds_the_provenance_paths() {
    // `share_context = true` sends candidates' paths to the arbitrator: the
    // check above would see them.
    for kind in KINDS {
        let calls = requests(kind, Plans::Good, true, true);
        let sent: String = calls.iter().map(request_text).collect();
        assert!(
            leaks(&sent).contains(&"Blade Runner -[directed_by]-> Ridley Scott".to_string()),
            "{kind}: no path in\n{sent}"
        );
    }
}
