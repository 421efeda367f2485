//! Parity with PyTorch: the committed fixtures (`models/ultra/fixtures/`,
//! written by `models/ultra/make_fixtures.py` from the real checkpoints) hold
//! a small CoDEx-S graph, its relation graph, the relation representations
//! and entity-model logits computed by the PyTorch port. The Rust relation
//! graph must be identical, and every engine built into this binary must
//! reproduce the numbers to 1e-4.

use std::path::PathBuf;

use kgbox_neural::engine::{self, Device, Engine, EngineKind};
use kgbox_neural::model::{relation_reps, ModelQuery, UltraModel};
use kgbox_neural::subgraph::Subgraph;
use kgbox_neural::{relgraph, UltraMeta};
use serde::Deserialize;

const TOLERANCE: f32 = 1e-4;

#[derive(Deserialize)]
struct Edges {
    src: Vec<i64>,
    dst: Vec<i64>,
    #[serde(rename = "type")]
    kind: Vec<i64>,
}

#[derive(Deserialize)]
struct Case {
    condition: usize,
    query_relation: usize,
    h_prob: Vec<f32>,
    logits: Vec<f32>,
}

#[derive(Deserialize)]
struct Fixture {
    checkpoint: String,
    num_entities: usize,
    num_relations: usize,
    dim: usize,
    triples: Vec<[u32; 3]>,
    relation_graph: Edges,
    edges: Edges,
    rel_reps: Vec<Vec<Vec<f32>>>,
    cases: Vec<Case>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> Fixture {
    let path = repo().join(format!("models/ultra/fixtures/{name}.parity.json"));
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture parses")
}

fn onnx(name: &str, half: &str) -> Vec<u8> {
    std::fs::read(repo().join(format!("models/ultra/onnx/{name}.{half}.onnx"))).expect("onnx file")
}

/// The engines this binary can run: tract always; ort when built with the
/// feature (`ORT_DYLIB_PATH` must then name the library, or the test fails).
fn engines() -> Vec<EngineKind> {
    let mut v = vec![EngineKind::Tract];
    if cfg!(feature = "ort") {
        v.push(EngineKind::Ort);
    }
    v
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn check(name: &str) {
    let f = fixture(name);
    assert_eq!(f.checkpoint, name);
    let nr = 2 * f.num_relations;

    // The relation graph, built the way the packager builds it.
    let rg = relgraph::build_from_facts(f.num_entities, f.num_relations, &f.triples);
    let want: Vec<[u32; 3]> = (0..f.relation_graph.src.len())
        .map(|i| {
            [
                f.relation_graph.dst[i] as u32,
                f.relation_graph.src[i] as u32,
                f.relation_graph.kind[i] as u32,
            ]
        })
        .collect();
    assert_eq!(rg, want, "{name}: relation graph differs from PyTorch's");

    // The message edges, in the fixture's order.
    let g = Subgraph::from_facts(f.num_entities, f.num_relations, &f.triples);
    assert_eq!(g.src, f.edges.src);
    assert_eq!(g.dst, f.edges.dst);
    assert_eq!(g.kind, f.edges.kind);

    let fixture_reps: Vec<f32> = f.rel_reps.iter().flatten().flatten().copied().collect();
    assert_eq!(fixture_reps.len(), nr * nr * f.dim);

    for kind in engines() {
        let rel = engine::load(kind, Device::Cpu, &onnx(name, "relation")).expect("relation model");
        let reps = relation_reps(rel.as_ref(), nr, f.dim, &rg).expect("relation reps");
        let d = max_abs_diff(&reps, &fixture_reps);
        eprintln!("{name} {kind}: relation representations max |diff| {d:.2e}");
        assert!(d <= TOLERANCE, "{name} {kind}: relation reps differ by {d}");

        let ent: Box<dyn Engine> =
            engine::load(kind, Device::Cpu, &onnx(name, "entity")).expect("entity model");
        let meta = UltraMeta {
            checkpoint: name.into(),
            dim: f.dim,
            relations: nr,
            relation_graph_edges: rg.len(),
            opset: 16,
            fusion: None,
        };
        let model = UltraModel::new(ent, meta, fixture_reps.clone()).expect("model");
        // One batch of all cases, then each alone: batching must not change results.
        let queries: Vec<ModelQuery<'_>> = f
            .cases
            .iter()
            .map(|c| ModelQuery {
                condition: c.condition,
                relation: c.query_relation,
                h_prob: &c.h_prob,
            })
            .collect();
        let batched = model.logits(&g, &queries).expect("batched run");
        for (i, case) in f.cases.iter().enumerate() {
            let single = model.logits(&g, &queries[i..=i]).expect("single run");
            let d1 = max_abs_diff(&single[0], &case.logits);
            let d2 = max_abs_diff(&batched[i], &case.logits);
            eprintln!("{name} {kind} case {i}: max |diff| {d1:.2e} (batched {d2:.2e})");
            assert!(
                d1 <= TOLERANCE && d2 <= TOLERANCE,
                "{name} {kind} case {i}: {d1} / {d2}"
            );
        }
    }
}

#[test]
fn ultra_3g_matches_pytorch() {
    check("ultra_3g");
}

#[test]
fn ultraquery_matches_pytorch() {
    check("ultraquery");
}

/// A model fine-tuned by the packager's trainer (models/ultra/train.py, via
/// models/ultra/make_trained_fixture.sh): what `--train-executor` packs.
#[test]
fn trained_model_matches_pytorch() {
    check("ultraquery-demo-ft");
}

#[test]
fn a_bad_model_is_an_error_not_a_panic() {
    for kind in engines() {
        let err = engine::load(kind, Device::Cpu, b"not an onnx model");
        assert!(err.is_err(), "{kind} accepted garbage");
    }
    let err = engine::load(
        EngineKind::Tract,
        Device::Cuda,
        &onnx("ultraquery", "entity"),
    );
    assert!(err.is_err(), "tract cannot run on CUDA");
}
