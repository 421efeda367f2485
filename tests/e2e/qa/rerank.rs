//! The answer reranker end to end: the packager adds the committed reranker
//! (trained by `models/reranker/train.py`) and refuses one trained on other
//! features; `kgbox serve` loads it and reranks `/v1/ask` candidates (off
//! per request); `kgbox eval qa` compares with and without it and exports
//! the training rows.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use kgbox_testkit::*;

fn fixture() -> PathBuf {
    repo_root().join("models/reranker/fixtures/metaqa")
}

/// Who directed / starred in which demo movie, as planner examples and as
/// MetaQA-format questions (every answer of the movie is gold).
fn examples(dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(demo_tsv()).unwrap();
    let mut answers: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != 3 || cols[0].contains(['"', '[', ']']) {
            continue;
        }
        if matches!(cols[1], "directed_by" | "starred_actors") {
            answers
                .entry((cols[0].to_string(), cols[1].to_string()))
                .or_default()
                .push(cols[2].to_string());
        }
    }
    let mut ex = String::new();
    let mut questions = String::new();
    for (n, ((movie, rel), gold)) in answers.iter().take(300).enumerate() {
        let q = match rel.as_str() {
            "directed_by" => format!("who directed [{movie}]"),
            _ => format!("who acted in [{movie}]"),
        };
        let gold = gold.join("|");
        ex.push_str(&format!("{q}\t\"{movie}\" -> {rel}\t{gold}\n"));
        if n % 7 == 0 {
            questions.push_str(&format!("{q}\t{gold}\n"));
        }
    }
    let (e, q) = (dir.join("examples.tsv"), dir.join("questions.tsv"));
    std::fs::write(&e, ex).unwrap();
    std::fs::write(&q, questions).unwrap();
    (e, q)
}

#[test]
fn reranker_is_packed_served_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "rr", 41);
    let (ex, questions) = examples(dir.path());
    let bundle = dir.path().join("rr.kgb");
    let fixture = fixture();
    pack_demo(
        "rerank-demo",
        &keys,
        &bundle,
        &[
            "--planner-examples",
            ex.to_str().unwrap(),
            "--reranker",
            fixture.to_str().unwrap(),
        ],
    );
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&bundle);
    let server = device.serve();

    let q = std::fs::read_to_string(&questions).unwrap();
    let first = q
        .lines()
        .next()
        .unwrap()
        .split('\t')
        .next()
        .unwrap()
        .to_string();
    let (status, v) = server.post_json("/v1/ask", &json!({"question": first}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["arbitration"]["method"], "reranker", "{v}");
    assert!(v["rerank"]["candidates"].as_u64().unwrap() >= 1, "{v}");
    // The default engine runs the reranker on ONNX Runtime when its
    // library is there (the kgbox binary is built with `ort`), else tract.
    let engine = if std::env::var_os("ORT_DYLIB_PATH").is_some() {
        "ort"
    } else {
        "tract"
    };
    assert_eq!(v["rerank"]["engine"], engine, "{v}");
    let p = v["answers"][0]["rerank_score"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p), "{v}");
    assert!(v["timings_ms"]["rerank"].as_f64().unwrap() >= 0.0);
    // Reranker scores are in order.
    let scores: Vec<f64> = v["answers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rerank_score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    // Off for one request.
    let (status, v) = server.post_json("/v1/ask", &json!({"question": first, "rerank": false}));
    assert_eq!(status, 200, "{v}");
    assert!(v.get("rerank").is_none(), "{v}");
    assert_eq!(v["arbitration"]["method"], "threshold");
    assert!(v["answers"][0].get("rerank_score").is_none());
    drop(server);

    // eval qa: with, without, and the exported rows.
    let features = dir.path().join("features.tsv");
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "qa",
            "--bundle",
            bundle.to_str().unwrap(),
            "--trust",
            keys.public.to_str().unwrap(),
            "--questions",
            questions.to_str().unwrap(),
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = device.kgbox(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        serde_json::from_str::<serde_json::Value>(out.lines().last().unwrap()).unwrap()
    };
    let with = eval(&["--export-features", features.to_str().unwrap()]);
    let without = eval(&["--no-rerank"]);
    assert_eq!(with["rerank"], "on");
    assert_eq!(without["rerank"], "off");
    assert!(with["n"].as_u64().unwrap() >= 20, "{with}");
    for r in [&with, &without] {
        assert!(r["hits_at_1"].as_f64().unwrap() > 0.8, "{r}");
    }
    assert!(with["gold_in_candidates"].as_f64().unwrap() > 0.8, "{with}");
    assert!(without.get("gold_in_candidates").is_none(), "{without}");
    let rows = std::fs::read_to_string(&features).unwrap();
    let mut lines = rows.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    assert_eq!(&header[..4], ["question", "line", "label", "entity"]);
    assert!(header.contains(&"pagerank") && header.contains(&"bridges"));
    let body: Vec<Vec<&str>> = lines.map(|l| l.split('\t').collect()).collect();
    assert!(body.len() >= with["n"].as_u64().unwrap() as usize);
    assert!(body.iter().all(|r| r.len() == header.len()));
    assert!(body.iter().any(|r| r[2] == "1"));
    assert!(
        rows.starts_with("# feature_set\tkgbox-rerank-1\n"),
        "{rows}"
    );
}

#[test]
fn packager_refuses_a_reranker_with_other_features() {
    let dir = tempfile::tempdir().unwrap();
    let keys = Keys::new(dir.path(), "rr", 42);
    let base = fixture();
    let prefix = dir.path().join("old");
    std::fs::copy(base.with_extension("onnx"), prefix.with_extension("onnx")).unwrap();
    let mut meta: serde_json::Value =
        serde_json::from_slice(&read(&base.with_extension("json"))).unwrap();
    meta["feature_set"] = json!("kgbox-rerank-0");
    std::fs::write(prefix.with_extension("json"), meta.to_string()).unwrap();
    let out = dir.path().join("x.kgb");
    let build = |reranker: &Path| {
        run(std::process::Command::new(bin("kgbox-pack")).args([
            "build",
            "--triples",
            demo_tsv().to_str().unwrap(),
            "--name",
            "x",
            "--version",
            "1.0.0",
            "--key",
            keys.secret.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quiet",
            "--reranker",
            reranker.to_str().unwrap(),
        ]))
    };
    let o = build(&prefix);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("kgbox-rerank-0") && err.contains("retrain"),
        "{err}"
    );
    assert!(!out.exists());
    let o = build(&dir.path().join("missing"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("missing.onnx"), "{}", stderr(&o));
}
