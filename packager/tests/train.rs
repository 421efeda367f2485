//! `kgbox-pack build --train-executor`: the packager fine-tunes the neural
//! executor with the real trainer (models/ultra/train.py, PyTorch), packs
//! it, records the training and fits the hybrid fusion. Needs a python with
//! models/ultra/requirements.txt: `KGBOX_TRAIN_PYTHON`, else the checkout's
//! `.venv-ultra` (scripts/setup.sh --dev makes it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::*;
use kgbox_bundle::sections as s;
use kgbox_neural::{Device, EngineKind, NeuralProjector, UltraMeta, UltraModel};
use kgbox_query::{run_query_with, ExecOptions, Executor, ParseLimits};

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("KGBOX_TRAIN_PYTHON") {
        return p.into();
    }
    let venv = workspace().join(".venv-ultra/bin/python");
    assert!(
        venv.is_file(),
        "no trainer python: run scripts/setup.sh --dev (it makes .venv-ultra) or set KGBOX_TRAIN_PYTHON"
    );
    venv
}

/// The demo graph and planner examples with their answers on that graph
/// (the symbolic executor's), as `question<TAB>DSL<TAB>answers` lines.
fn inputs(dir: &Path) -> (PathBuf, PathBuf) {
    let triples = workspace().join("demo/movies.tsv");
    let plain = dir.join("plain.kgb");
    kgbox_pack::pack(&options(&triples), &test_key(), &plain).unwrap();
    let loaded = load(&plain, &test_key().public());
    let kg = loaded.kg();
    let text = std::fs::read_to_string(workspace().join("demo/planner-examples.tsv")).unwrap();
    let mut lines = String::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let mut cols = line.split('\t');
        let (q, dsl) = (cols.next().unwrap(), cols.next().unwrap());
        let opts = ExecOptions {
            top_k: 50,
            max_paths: 0,
            ..ExecOptions::default()
        };
        let Ok((answers, _)) = run_query_with(&kg, dsl, &ParseLimits::default(), &opts, None)
        else {
            continue;
        };
        let names: Vec<&str> = answers
            .answers
            .iter()
            .filter_map(|a| kg.entity_name(a.entity))
            .collect();
        if !names.is_empty() {
            lines.push_str(&format!("{q}\t{dsl}\t{}\n", names.join("|")));
        }
    }
    let examples = write(dir, "examples.tsv", lines);
    (triples, examples)
}

fn train_build(
    triples: &Path,
    examples: &Path,
    key: &Path,
    out: &Path,
    extra: &[&str],
) -> std::process::Output {
    let py = python();
    let mut args = build_args(
        triples.to_str().unwrap(),
        key.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    args.extend([
        "--planner-examples",
        examples.to_str().unwrap(),
        "--train-executor",
        "--train-python",
        py.to_str().unwrap(),
    ]);
    args.extend(extra);
    cli(&args, &[])
}

/// The executor's name in the manifest and its training record.
fn executor_training(loaded: &Loaded) -> (String, serde_json::Value) {
    let model = loaded
        .manifest
        .models
        .iter()
        .find(|m| m.role == "query-executor")
        .expect("the executor is in the manifest");
    let record = model.training.clone().expect("the training is recorded");
    (model.name.clone(), record)
}

fn section(path: &Path, name: &str) -> Vec<u8> {
    let loaded = load(path, &test_key().public());
    loaded.view.section(&loaded.bytes, name).unwrap().to_vec()
}

#[test]
fn trains_packs_records_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let (triples, examples) = inputs(dir.path());
    let key = write_key(dir.path());

    // Three steps in one go.
    let once = dir.path().join("once.kgb");
    let out = train_build(&triples, &examples, &key, &once, &["--train-steps", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("train: step") || err.contains("(3 steps)"),
        "{err}"
    );
    assert!(
        err.contains("fusion ("),
        "the fusion is fitted and reported: {err}"
    );

    let loaded = load(&once, &test_key().public());
    let (name, record) = executor_training(&loaded);
    assert_eq!(name, "ultraquery+trained");
    assert_eq!(record["steps"], 3);
    assert_eq!(record["seed"], 0);
    assert_eq!(record["data_sha256"].as_str().map(str::len), Some(64));
    assert!(record["examples"].as_u64().unwrap() > 0, "{record}");
    let meta = UltraMeta::from_json(&section(&once, s::ULTRA_META)).unwrap();
    assert!(meta.fusion.is_some(), "the fitted fusion is stored");

    // The trained model runs in the runtime's engine, in all three executors.
    let kg = loaded.kg();
    let get = |n: &str| loaded.view.section(&loaded.bytes, n);
    let model = UltraModel::from_sections(get, kg.relation_count(), EngineKind::Tract, Device::Cpu)
        .unwrap()
        .unwrap();
    let projector = NeuralProjector::new(&kg, &model, Default::default());
    for executor in Executor::ALL {
        let opts = ExecOptions {
            executor,
            ..ExecOptions::default()
        };
        let (answers, _) = run_query_with(
            &kg,
            "\"Alexander Hall\" -> directed_by_inv",
            &ParseLimits::default(),
            &opts,
            Some(&projector),
        )
        .unwrap();
        assert!(!answers.answers.is_empty(), "{executor}");
    }

    // The same steps in two runs (the second resumes from the saved state)
    // give the same model: interrupting and resuming changes nothing.
    let twice = dir.path().join("twice.kgb");
    let tdir = dir.path().join("twice.train");
    let tdir_s = tdir.to_str().unwrap();
    for steps in ["1", "3"] {
        let out = train_build(
            &triples,
            &examples,
            &key,
            &twice,
            &["--train-steps", steps, "--train-dir", tdir_s],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(stderr(&out).contains("resuming") || tdir.join("state.pt").is_file());
    for name in [s::ULTRA_ENTITY_ONNX, s::ULTRA_RELREPS] {
        assert_eq!(
            section(&once, name),
            section(&twice, name),
            "{name} differs"
        );
    }
}

#[test]
fn bad_training_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (triples, examples) = inputs(dir.path());
    let key = write_key(dir.path());
    let out_path = dir.path().join("x.kgb");

    // Examples that do not parse: the planner's own error, with the line.
    let bad = write(dir.path(), "bad.tsv", "a question without a query\n");
    let out = train_build(&triples, &bad, &key, &out_path, &["--train-steps", "1"]);
    let err = assert_fails(&out);
    assert!(err.contains("line 1"), "{err}");

    // A trainer that is not there.
    let missing = dir.path().join("nowhere/train.py");
    let out = train_build(
        &triples,
        &examples,
        &key,
        &out_path,
        &[
            "--train-steps",
            "1",
            "--train-script",
            missing.to_str().unwrap(),
        ],
    );
    let err = assert_fails(&out);
    assert!(
        err.contains("--train-script") && err.contains("no such file"),
        "{err}"
    );

    // A budget that is not a duration: refused before anything is built.
    let out = train_build(
        &triples,
        &examples,
        &key,
        &out_path,
        &["--train-budget", "soon"],
    );
    let err = assert_fails(&out);
    assert!(
        err.contains("--train-budget \"soon\"") && err.contains("duration"),
        "{err}"
    );

    // An empty graph: refused before any training.
    let empty = write(dir.path(), "empty.tsv", "");
    let out = train_build(&empty, &examples, &key, &out_path, &["--train-steps", "1"]);
    assert_fails(&out);
    assert!(!out_path.exists(), "no bundle is written on failure");
}

#[test]
fn link_prediction_task_trains_ultra_on_the_whole_graph() {
    let dir = tempfile::tempdir().unwrap();
    let (triples, examples) = inputs(dir.path());
    let key = write_key(dir.path());
    let out_path = dir.path().join("lp.kgb");
    let out = train_build(
        &triples,
        &examples,
        &key,
        &out_path,
        &["--train-steps", "2", "--train-task", "link-prediction"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let loaded = load(&out_path, &test_key().public());
    let (name, record) = executor_training(&loaded);
    assert_eq!(name, "ultra_3g+trained");
    assert_eq!(record["steps"], 2);
    assert_eq!(record["init"], "ultra_3g.pth");
    assert_eq!(record["condition"], "direct");
    assert_eq!(record["link_targets"], "hidden");
    assert_eq!(record["negatives"], 256);
    assert_eq!(record["hide_others"], 0.0);
    assert_eq!(record["examples"], 0, "link prediction uses no examples");
    let entities = loaded.kg().entity_count() as u64;
    assert_eq!(
        record["seppr_k"].as_u64(),
        Some(entities),
        "the whole graph, as `kgbox eval kgc` scores"
    );
}
