//! The retrieval strategies' fall-through end to end through
//! [`crate::ask::ask`], over a small graph, with a scripted chat model
//! answering by purpose.

use std::sync::Mutex;

use super::ask;
use super::test_stages::Plain;
use crate::arbitrate::Arbitration;
use crate::llm::scripted::Scripted;
use crate::llm::{ChatRequest, LlmError};
use crate::pipeline::{AskOptions, AskResult, Context, PlannerKind};
use crate::rerank::test_graph::graph;
use crate::strategies::{StrategyName, StrategyReport};

const FILMS: &[(&str, &str, &str)] = &[
    ("Alien", "directed_by", "Ridley Scott"),
    ("Blade Runner", "directed_by", "Ridley Scott"),
    ("Blade Runner", "written_by", "Philip K. Dick"),
    ("Blade Runner", "release_year", "1982"),
    ("Philip K. Dick", "born_in", "Chicago"),
    ("Alien", "has_genre", "Horror"),
];

fn user_text(req: &ChatRequest) -> String {
    req.messages
        .last()
        .map(|m| m.content.clone())
        .unwrap_or_default()
}

/// Asks `question` over FILMS with the `llm` planner and `chat`.
fn ask_with(chat: &Scripted, question: &str, opts: AskOptions) -> AskResult {
    graph(FILMS, |kg| {
        let ctx = Context {
            kg,
            learned: None,
            relvecs: None,
            embedder: None,
            steps: None,
            chat: Some(chat),
            stages: &Plain(kg),
            reranker: None,
            name_similarity: None,
        };
        ask(&ctx, question, &opts).expect("answers")
    })
}

fn llm_opts() -> AskOptions {
    AskOptions {
        planner: PlannerKind::Llm,
        repair: false,
        ..AskOptions::default()
    }
}

fn names(r: &AskResult) -> Vec<&str> {
    r.answers.iter().map(|a| a.name.as_str()).collect()
}

fn strategy(r: &AskResult, name: StrategyName) -> Vec<&StrategyReport> {
    r.strategies.iter().filter(|s| s.name == name).collect()
}

/// The triples of FILMS found in `text`.
fn leaks(text: &str) -> Vec<String> {
    super::test_stages::leaks(FILMS, text)
}

#[test]
fn an_empty_query_falls_through_to_paths_which_answer() {
    let chat = Scripted::new(|req| match req.purpose {
        // A query that binds but finds nothing.
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> has_genre"}"#.into()),
        "paths" => {
            let text = user_text(req);
            assert!(
                text.contains("- Blade Runner: written_by -> born_in"),
                "{text}"
            );
            Ok(r#"{"paths": ["Blade Runner: written_by -> born_in", "made up: x"]}"#.into())
        }
        "final_answer" => Ok(r#"Sure: {"answers": ["Chicago", "Paris"]}"#.into()),
        other => panic!("unexpected call {other}"),
    });
    let r = ask_with(
        &chat,
        "where was the writer of [Blade Runner] born",
        llm_opts(),
    );
    assert_eq!(names(&r), ["Chicago"]);
    assert_eq!(chat.purposes(), ["plan", "paths", "final_answer"]);
    assert_eq!(r.query, "\"Blade Runner\" -> has_genre");
    assert!(matches!(r.arbitration, Arbitration::Llm { candidates: 1 }));
    let got: Vec<(&str, usize, usize, bool)> = r
        .strategies
        .iter()
        .map(|s| (s.name.as_str(), s.llm_calls, s.candidates, s.answered))
        .collect();
    assert_eq!(
        got,
        [
            ("query", 1, 0, false),
            ("paths", 1, 1, true),
            ("final_answer", 1, 1, true),
        ]
    );
    assert_eq!(
        strategy(&r, StrategyName::Paths)[0].followed,
        ["\"Blade Runner\" -> written_by -> born_in"]
    );
    // The answer's provenance is the path followed.
    assert_eq!(
        r.answers[0].paths[0],
        [
            ["Blade Runner", "written_by", "Philip K. Dick"].map(String::from),
            ["Philip K. Dick", "born_in", "Chicago"].map(String::from),
        ]
    );
    assert_eq!(leaks(&chat.sent()), Vec::<String>::new());
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["strategies"][1]["name"], "paths");
    assert_eq!(v["strategies"][2]["name"], "final_answer");
}

#[test]
fn triplets_run_when_paths_find_nothing_and_stop_when_the_llm_can_answer() {
    let steps = Mutex::new(0);
    let chat = Scripted::new(move |req| match req.purpose {
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> has_genre"}"#.into()),
        "paths" => Ok(r#"{"paths": []}"#.into()),
        "triplets" => {
            let text = user_text(req);
            let mut n = steps.lock().unwrap();
            *n += 1;
            if *n == 1 {
                assert!(text.contains("- directed_by\n"), "{text}");
                assert!(text.contains("nothing; the exploration starts"), "{text}");
                Ok(r#"{"relations": ["directed_by", "nope"], "reached_answer": "no"}"#.into())
            } else {
                assert!(text.contains("- step 1: directed_by"), "{text}");
                assert!(text.contains("- directed_by_inv"), "{text}");
                Ok(r#"{"relations": ["directed_by_inv"], "reached_answer": "yes"}"#.into())
            }
        }
        "final_answer" => Ok(r#"{"answers": ["Alien"]}"#.into()),
        other => panic!("unexpected call {other}"),
    });
    let q = "what else did the director of [Blade Runner] make";
    let r = ask_with(&chat, q, llm_opts());
    assert_eq!(names(&r), ["Alien"]);
    assert_eq!(
        chat.purposes(),
        ["plan", "paths", "triplets", "triplets", "final_answer"]
    );
    let t = strategy(&r, StrategyName::Triplets)[0];
    assert_eq!((t.llm_calls, t.candidates, t.answered), (2, 1, true));
    assert_eq!(t.followed, ["directed_by", "directed_by_inv"]);
    let p = strategy(&r, StrategyName::Paths)[0];
    assert_eq!((p.candidates, p.answered), (0, false));
    assert_eq!(p.note.as_deref(), Some("the LLM chose no path"));
    assert_eq!(leaks(&chat.sent()), Vec::<String>::new());
}

#[test]
fn triplets_stop_at_the_step_budget() {
    let chat = Scripted::new(|req| match req.purpose {
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> has_genre"}"#.into()),
        "paths" => Ok(r#"{"paths": []}"#.into()),
        "triplets" => Ok(r#"{"relations": ["written_by"], "reached_answer": "no"}"#.into()),
        "final_answer" => Ok(r#"{"answers": []}"#.into()),
        other => panic!("unexpected call {other}"),
    });
    let mut opts = llm_opts();
    opts.strategies.max_steps = 1;
    let r = ask_with(&chat, "who wrote [Blade Runner]", opts);
    assert_eq!(
        chat.purposes(),
        ["plan", "paths", "triplets", "final_answer"]
    );
    // The LLM chose none: no answers, and the report says why.
    assert!(r.answers.is_empty());
    let f = strategy(&r, StrategyName::FinalAnswer)[0];
    assert!(!f.answered && f.note.is_some());
}

#[test]
fn a_confident_query_or_a_disabled_fall_through_calls_nothing_more() {
    let chat = Scripted::new(|req| match req.purpose {
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> directed_by"}"#.into()),
        "arbitrate" => Ok(r#"{"answers": ["Ridley Scott"]}"#.into()),
        other => panic!("unexpected call {other}"),
    });
    let r = ask_with(&chat, "who directed [Blade Runner]", llm_opts());
    assert_eq!(names(&r), ["Ridley Scott"]);
    assert!(r.strategies.is_empty());
    assert!(serde_json::to_value(&r)
        .unwrap()
        .get("strategies")
        .is_none());

    let chat = Scripted::new(|req| match req.purpose {
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> has_genre"}"#.into()),
        other => panic!("unexpected call {other}"),
    });
    let mut opts = llm_opts();
    opts.strategies.enabled = false;
    let r = ask_with(&chat, "what genre is [Blade Runner]", opts);
    assert!(r.answers.is_empty() && r.strategies.is_empty());
}

#[test]
fn a_failing_llm_ends_the_sequence_and_a_bad_reply_does_not() {
    // Transport failure in the path step: nothing more is asked.
    let chat = Scripted::new(|req| match req.purpose {
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> has_genre"}"#.into()),
        _ => Err(LlmError::Transport {
            endpoint: "scripted".into(),
            message: "down".into(),
        }),
    });
    let r = ask_with(&chat, "what genre is [Blade Runner]", llm_opts());
    assert_eq!(chat.purposes(), ["plan", "paths"]);
    assert!(r.answers.is_empty());
    assert!(strategy(&r, StrategyName::Paths)[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("down")));

    // A bad reply to the paths prompt: triplets are tried; a failed final
    // answer falls back to the threshold cut over what was gathered.
    let chat = Scripted::new(|req| match req.purpose {
        "plan" => Ok(r#"{"query": "\"Blade Runner\" -> has_genre"}"#.into()),
        "paths" => Ok("I cannot decide".into()),
        "triplets" => Ok(r#"{"relations": ["release_year"], "reached_answer": "yes"}"#.into()),
        _ => Ok(r#"{"answers": "1982"}"#.into()),
    });
    let r = ask_with(&chat, "when did [Blade Runner] come out", llm_opts());
    assert_eq!(
        chat.purposes(),
        ["plan", "paths", "triplets", "final_answer"]
    );
    assert_eq!(names(&r), ["1982"]);
    assert!(matches!(r.arbitration, Arbitration::Fallback { .. }));
    assert!(strategy(&r, StrategyName::Paths)[0].error.is_some());
}
