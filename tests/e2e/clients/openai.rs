//! The OpenAI-compatible facade (`/v1/chat/completions`, `/v1/models`)
//! against the real clients: `tests/clients/openai_chat.py` drives it with
//! the `openai` package and LangChain's `ChatOpenAI` (installed by
//! scripts/setup.sh --dev), plain and streamed, over the built-in demo bundle.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::json;

use kgbox_testkit::clients::{require_python_modules, run_python_client};
use kgbox_testkit::*;

const SCRIPT: &str = "openai_chat.py";
const CLIENT_TIMEOUT: Duration = Duration::from_secs(180);

#[test]
fn openai_and_langchain_clients_ask_the_demo() {
    // Never skipped: a missing python3 or package fails, naming scripts/setup.sh --dev.
    require_python_modules(&["openai", "langchain_openai"]);
    let device = Device::new(&[], "");
    let server = device.serve();
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    // The clients require a key; the server ignores it.
    let run = run_python_client(
        SCRIPT,
        &[&base],
        &[("OPENAI_API_KEY", "dummy-key-for-tests")],
        CLIENT_TIMEOUT,
    );
    let output = run.output;
    assert_eq!(
        run.code,
        Some(0),
        "tests/clients/{SCRIPT} failed (None: killed after {CLIENT_TIMEOUT:?}):\n{output}\nserver log:\n{}",
        server.log()
    );
    assert!(output.contains("all checks passed"), "{output}");
}

#[test]
fn facade_replies_and_errors_in_openais_shape() {
    let device = Device::new(&[], "");
    let server = device.serve();
    let chat = "/v1/chat/completions";

    let models = server.get_json("/v1/models");
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "demo-movies");
    assert_eq!(models["data"][0]["object"], "model");
    assert_eq!(models["data"][0]["owned_by"], "kgbox");

    // A model no bundle has: 404 in OpenAI's shape, not another bundle's answer.
    let (status, v) = server.post_json(
        chat,
        &json!({"model": "gpt-4o",
                "messages": [{"role": "user", "content": "who directed [Blade Runner]"}]}),
    );
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["error"]["code"], "model_not_found", "{v}");
    assert!(v.get("choices").is_none(), "{v}");
    // The generic name is the default bundle.
    let (status, v) = server.post_json(
        chat,
        &json!({"model": "kgbox", "messages": [{"role": "user", "content": "who directed [Blade Runner]"}]}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["model"], "demo-movies", "{v}");

    // The bundle's name answers, and says so.
    let (status, v) = server.post_json(
        chat,
        &json!({"model": "demo-movies", "temperature": 0.2, "n": 1, "user": "u",
                "messages": [{"role": "user", "content": "who directed [Blade Runner]"}]}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "demo-movies");
    assert_eq!(
        v["choices"][0]["message"]["content"], "Ridley Scott.",
        "{v}"
    );
    assert_eq!(v["kgbox"]["answers"][0]["name"], "Ridley Scott");
    assert!(
        v["kgbox"]["query"]
            .as_str()
            .unwrap()
            .contains("directed_by"),
        "{v}"
    );

    // No user message: OpenAI's error shape, 400.
    let (status, v) = server.post_json(
        chat,
        &json!({"model": "demo-movies", "messages": [{"role": "system", "content": "hi"}]}),
    );
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["code"], "no_user_message");
    assert_eq!(v["error"]["param"], "messages");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("user"),
        "{v}"
    );

    // A body that is not a chat request: 400 too.
    let (status, v) = server.post_json(chat, &json!({"model": "demo-movies"}));
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["code"], "bad_json");

    // A question naming nothing of the graph: a polite reply, the code kept.
    let (status, v) = server.post_json(
        chat,
        &json!({"messages": [{"role": "user", "content": "qwxz zzqv"}]}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["kgbox"]["error"]["code"], "no_entity", "{v}");
    assert!(
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("[brackets]"),
        "{v}"
    );

    // Streamed: Server-Sent Events ending in [DONE].
    let (status, text) = server.post(
        chat,
        "application/json",
        &json!({"stream": true, "messages": [{"role": "user", "content": "who directed [Blade Runner]"}]})
            .to_string(),
    );
    assert_eq!(status, 200, "{text}");
    assert!(text.starts_with("data: {"), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert!(text.contains("\"chat.completion.chunk\""), "{text}");
    assert!(text.contains("\"finish_reason\":\"stop\""), "{text}");
}

#[test]
fn models_lists_every_installed_bundle_served_first() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 1);
    let tsv = small_tsv(work.path());
    let (first, second) = (work.path().join("a.kgb"), work.path().join("b.kgb"));
    pack(&tsv, "movies-old", "1.0.0", &keys, &first, &[]);
    pack(&tsv, "movies-new", "1.1.0", &keys, &second, &[]);
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&first);
    device.install_ok(&second);
    let server = device.serve();
    let v = server.get_json("/v1/models");
    let ids = model_ids(&v);
    assert_eq!(ids, ["movies-new", "movies-old"], "{v}");
    assert_eq!(v["data"][0]["kgbox"]["serving"], true, "{v}");
    assert_eq!(v["data"][1]["kgbox"]["serving"], false, "{v}");
}
