//! The neural and hybrid executors end to end: a bundle packed with
//! `--ultra` (the real UltraQuery export in `models/ultra/onnx/`), queried
//! through the CLI and over HTTP.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use kgbox_testkit::*;

const ONE_HOP: &str = "\"Blade Runner\" -> directed_by";
const TWO_HOP: &str = "\"Malcolm X\" -> directed_by -> directed_by_inv";

struct Fixture {
    _dir: tempfile::TempDir,
    keys: Keys,
    bundle: std::path::PathBuf,
}

fn neural_bundle() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "neural", 21);
    let bundle = dir.path().join("demo-neural.kgb");
    let ultra = repo_root().join("models/ultra/onnx/ultraquery");
    pack_demo(
        "demo-neural",
        &keys,
        &bundle,
        &["--ultra", ultra.to_str().unwrap()],
    );
    Fixture {
        _dir: dir,
        keys,
        bundle,
    }
}

/// The log without terminal colour sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn scores(v: &serde_json::Value) -> Vec<f64> {
    v["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["score"].as_f64().unwrap())
        .collect()
}

#[test]
fn executors_over_http() {
    let f = neural_bundle();
    let device = Device::new(&[&f.keys.public], "");
    device.install_ok(&f.bundle);
    let server = device.serve();
    let query = |q: &str, executor: &str| {
        server.post_json(
            "/v1/query",
            &json!({"query": q, "executor": executor, "top_k": 10}),
        )
    };

    let (status, sym) = query(ONE_HOP, "symbolic");
    assert_eq!(status, 200, "{sym}");
    assert_eq!(answer_names(&sym), ["Ridley Scott"]);
    assert_eq!(sym["executor"], "symbolic");

    // Neural: sigmoid scores over the SEPPR subgraph, stated or not.
    let (status, neu) = query(ONE_HOP, "neural");
    assert_eq!(status, 200, "{neu}");
    assert_eq!(neu["executor"], "neural");
    assert!(neu["total"].as_u64().unwrap() > 10, "{neu}");
    assert!(scores(&neu).iter().all(|s| *s > 0.0 && *s < 1.0), "{neu}");
    assert!(
        answer_names(&neu).contains(&"Ridley Scott".to_string()),
        "{neu}"
    );

    // Hybrid (the default fusion: this bundle has no fitted one): the stated
    // answer first, at σ(z) with z >= 5.4; inferred ones below, z <= 4.6.
    let (status, hyb) = query(ONE_HOP, "hybrid");
    assert_eq!(status, 200, "{hyb}");
    assert_eq!(answer_names(&hyb)[0], "Ridley Scott", "{hyb}");
    let s = scores(&hyb);
    assert!(s[0] >= 0.995 && s[0] <= 1.0, "{hyb}");
    assert!(s.len() > 1 && s[1..].iter().all(|x| *x < 0.995), "{hyb}");
    // The stated answer keeps its provenance.
    assert_eq!(
        hyb["answers"][0]["paths"][0][0],
        json!(["Blade Runner", "directed_by", "Ridley Scott"])
    );

    // Two hops: the model alone finds Spike Lee's other film, and never the anchor.
    let (status, neu2) = query(TWO_HOP, "neural");
    assert_eq!(status, 200, "{neu2}");
    assert_eq!(answer_names(&neu2)[0], "Red Hook Summer", "{neu2}");
    assert!(
        !answer_names(&neu2).contains(&"Malcolm X".to_string()),
        "{neu2}"
    );

    // The default engine is the native one, and `device = auto` says why it
    // runs on the CPU (this build has no `cuda` feature).
    let log = strip_ansi(&server.log());
    assert!(
        log.contains("engine=native") || log.contains("engine=\"native\""),
        "{log}"
    );
    assert!(
        log.contains("executor.device = auto: the neural query model runs on the CPU"),
        "{log}"
    );
    assert!(log.contains("no `cuda` feature"), "{log}");

    // Concurrent requests are batched together; each gets what it gets alone.
    let alone: Vec<serde_json::Value> = [ONE_HOP, TWO_HOP]
        .iter()
        .map(|q| query(q, "neural").1["answers"].clone())
        .collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let q = [ONE_HOP, TWO_HOP][i % 2];
                let query = &query;
                s.spawn(move || (i % 2, query(q, "neural")))
            })
            .collect();
        for h in handles {
            let (which, (status, v)) = h.join().unwrap();
            assert_eq!(status, 200, "{v}");
            let got = &v["answers"];
            for (a, b) in got
                .as_array()
                .unwrap()
                .iter()
                .zip(alone[which].as_array().unwrap())
            {
                assert_eq!(a["name"], b["name"], "{got} vs {}", alone[which]);
                let (x, y) = (a["score"].as_f64().unwrap(), b["score"].as_f64().unwrap());
                assert!((x - y).abs() < 1e-5, "{x} vs {y}");
            }
        }
    });

    // A smaller subgraph per request.
    let (status, small) = server.post_json(
        "/v1/query",
        &json!({"query": ONE_HOP, "executor": "neural", "seppr_k": 20}),
    );
    assert_eq!(status, 200, "{small}");
    assert!(small["total"].as_u64().unwrap() <= 20, "{small}");

    // Bad requests.
    let (status, v) = query(ONE_HOP, "quantum");
    assert_eq!(status, 422, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown variant `quantum`"),
        "{v}"
    );
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": ONE_HOP, "executor": "neural", "seppr_k": 0}),
    );
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("seppr_k"),
        "{v}"
    );
}

#[test]
fn a_bundle_without_a_model_refuses_the_neural_executors() {
    // The built-in demo has no neural model.
    let device = Device::new(&[], "");
    let server = device.serve();
    for executor in ["neural", "hybrid"] {
        let (status, v) = server.post_json(
            "/v1/query",
            &json!({"query": ONE_HOP, "executor": executor}),
        );
        assert_eq!(status, 422, "{v}");
        assert_eq!(v["error"]["code"], "no_neural_model", "{v}");
    }
    let o = device.kgbox(&["query", "--executor", "neural", ONE_HOP]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--ultra"), "{}", stderr(&o));
    // Link prediction needs the model whatever the executor.
    let test = device.dir.path().join("test.tsv");
    std::fs::write(&test, "Blade Runner\tdirected_by\tRidley Scott\n").unwrap();
    let o = device.kgbox(&["eval", "kgc", "--test", test.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("this command needs a bundle with a neural query model"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn cli_query_and_kgc_eval() {
    let f = neural_bundle();
    let device = Device::new(&[&f.keys.public], "");
    let bundle = f.bundle.to_str().unwrap();
    let o = device.kgbox(&[
        "query",
        "--bundle",
        bundle,
        "--executor",
        "hybrid",
        "--top-k",
        "3",
        ONE_HOP,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("hybrid executor"), "{out}");
    assert!(out.contains("1. Ridley Scott"), "{out}");

    // Link prediction over a few facts of the graph itself: each test fact
    // is in the graph, so its rank is small, and the report is well formed.
    let test = f._dir.path().join("test.tsv");
    std::fs::write(
        &test,
        "Blade Runner\tdirected_by\tRidley Scott\nMalcolm X\tdirected_by\tSpike Lee\n",
    )
    .unwrap();
    let kgc = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "kgc",
            "--bundle",
            bundle,
            "--test",
            test.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        device.kgbox(&args)
    };
    let o = kgc(&["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["queries"], 4, "{v}");
    let mrr = v["mrr"].as_f64().unwrap();
    assert!(mrr > 0.0 && mrr <= 1.0, "{v}");
    assert!(v["hits_at_10"].as_f64().unwrap() >= v["hits_at_1"].as_f64().unwrap());
    // The text report; progress is an indicatif bar, drawn on a terminal
    // only: a log (stderr not a terminal) gets no carriage-return lines.
    let o = kgc(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("4 queries (head and tail)"),
        "{}",
        stdout(&o)
    );
    assert!(!stderr(&o).contains('\r'), "{:?}", stderr(&o));

    // A test fact naming something the bundle lacks is a clear error.
    std::fs::write(&test, "Blade Runner\tdirected_by\tNobody Known\n").unwrap();
    let o = kgc(&[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("test.tsv:1"), "{}", stderr(&o));

    // The ort engine without its library (or in a build without the
    // feature): a clear error either way.
    let o = run(device
        .command(&[
            "query",
            "--bundle",
            bundle,
            "--executor",
            "neural",
            "--engine",
            "ort",
            ONE_HOP,
        ])
        .env_remove("ORT_DYLIB_PATH"));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("not built into this binary") || err.contains("ORT_DYLIB_PATH is not set"),
        "{err}"
    );
}

#[test]
fn a_model_the_engine_cannot_load_leaves_the_graph_serving() {
    // engine = "ort" without its library (or without the feature): serve
    // starts, answers symbolically, and refuses the neural executors.
    let f = neural_bundle();
    let device = Device::new(
        &[&f.keys.public],
        "[executor]\nengine = \"ort\"\nmode = \"hybrid\"",
    );
    device.install_ok(&f.bundle);
    let mut cmd = device.command(&["serve"]);
    cmd.env_remove("ORT_DYLIB_PATH");
    let server = Server::start(cmd);
    // The configured default (hybrid) falls back to symbolic.
    let (status, v) = server.post_json("/v1/query", &json!({"query": ONE_HOP}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(answer_names(&v), ["Ridley Scott"]);
    assert_eq!(v["executor"], "symbolic", "{v}");
    let (status, v) = server.post_json(
        "/v1/query",
        &json!({"query": ONE_HOP, "executor": "hybrid"}),
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["error"]["code"], "no_neural_model", "{v}");
    assert!(
        server.log().contains("serving the symbolic executor only"),
        "{}",
        server.log()
    );
}

#[test]
fn bad_executor_config_is_named() {
    for (config, needle) in [
        ("[executor]\nmode = \"quantum\"", "quantum"),
        ("[executor]\nengine = \"cudnn\"", "cudnn"),
        ("[executor]\ndevice = \"tpu\"", "tpu"),
        ("[executor]\nseppr_k = 0", "executor.seppr_k"),
        (
            "[executor]\nseppr_k = 100\nmax_seppr_k = 10",
            "executor.seppr_k",
        ),
    ] {
        let device = Device::new(&[], config);
        let o = device.kgbox(&["status"]);
        assert!(!o.status.success(), "{config}");
        assert!(stderr(&o).contains(needle), "{config}: {}", stderr(&o));
    }
    // Environment overrides reach the section too.
    let device = Device::new(&[], "");
    let o = run(device
        .command(&["status"])
        .env("KGBOX_EXECUTOR__SEPPR_K", "0"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("executor.seppr_k"), "{}", stderr(&o));
}
