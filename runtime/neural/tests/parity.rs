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

/// The engines this binary can run: native and tract always; ort when built with the
/// feature (`ORT_DYLIB_PATH` must then name the library, or the test fails).
fn engines() -> Vec<EngineKind> {
    let mut v = vec![EngineKind::Native, EngineKind::Tract];
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

        let model = entity_model(kind, name, &f, rg.len());
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

fn meta(name: &str, f: &Fixture, relation_graph_edges: usize) -> UltraMeta {
    UltraMeta {
        checkpoint: name.into(),
        dim: f.dim,
        relations: 2 * f.num_relations,
        relation_graph_edges,
        opset: 16,
        fusion: None,
    }
}

/// The entity model on `kind`, with the fixture's relation representations.
fn entity_model(kind: EngineKind, name: &str, f: &Fixture, rg_edges: usize) -> UltraModel {
    let reps: Vec<f32> = f.rel_reps.iter().flatten().flatten().copied().collect();
    let meta = meta(name, f, rg_edges);
    if kind == EngineKind::Native {
        let model = UltraModel::native(&onnx(name, "entity"), meta, reps).expect("native model");
        assert_eq!(model.engine_name(), "native");
        return model;
    }
    let ent: Box<dyn Engine> =
        engine::load(kind, Device::Cpu, &onnx(name, "entity")).expect("entity model");
    UltraModel::new(ent, meta, reps).expect("model")
}

/// Graphs of different sizes and edges, run as one disjoint batch by the
/// native engine, score as each does alone on the ONNX engines (run from
/// three threads at once): the fixture graph,
/// its first half of facts, and a graph where one node receives every
/// message of its 40 neighbours (many repeated destinations).
#[test]
fn native_disjoint_batches_match_the_onnx_engines() {
    let name = "ultraquery";
    let f = fixture(name);
    let r = f.num_relations;
    let half = f.triples.len() / 2;
    let star: Vec<[u32; 3]> = (1..=40u32).map(|i| [0, i % r as u32, i]).collect();
    let graphs = [
        Subgraph::from_facts(f.num_entities, r, &f.triples),
        Subgraph::from_facts(f.num_entities, r, &f.triples[..half]),
        Subgraph::from_facts(41, r, &star),
    ];
    let starts: Vec<Vec<f32>> = graphs
        .iter()
        .enumerate()
        .map(|(i, g)| {
            (0..g.nodes.len())
                .map(|v| {
                    if (v + i) % 7 == 0 {
                        0.5 + 0.1 * i as f32
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect();
    let items: Vec<(&Subgraph, ModelQuery<'_>)> = graphs
        .iter()
        .zip(&starts)
        .enumerate()
        .map(|(i, (g, h))| {
            (
                g,
                ModelQuery {
                    condition: (3 * i) % (2 * r),
                    relation: (3 * i) % (2 * r),
                    h_prob: h,
                },
            )
        })
        .collect();
    let native = entity_model(EngineKind::Native, name, &f, 0);
    let batched = native.logits_batch(&items).expect("native batch");
    for kind in engines().into_iter().filter(|k| *k != EngineKind::Native) {
        let other = entity_model(kind, name, &f, 0);
        // From several threads at once: ort runs one single-threaded session
        // per core, tract one plan; neither may mix up concurrent sums.
        std::thread::scope(|s| {
            for t in 0..3 {
                let (other, items, batched) = (&other, &items, &batched);
                s.spawn(move || {
                    for (i, (g, q)) in items.iter().enumerate() {
                        let alone = other.logits(g, std::slice::from_ref(q)).expect("run");
                        let d = max_abs_diff(&batched[i], &alone[0]);
                        eprintln!(
                            "thread {t} graph {i}: native batched vs {kind} max |diff| {d:.2e}"
                        );
                        assert!(d <= TOLERANCE, "{kind} graph {i}: {d}");
                    }
                });
            }
        });
    }
}

#[test]
fn native_refuses_a_model_of_another_layout() {
    let f = fixture("ultraquery");
    // The relation model is valid ONNX but not the entity model's layout.
    let err = UltraModel::native(&onnx("ultraquery", "relation"), meta("x", &f, 0), vec![])
        .expect_err("the relation model is not an entity model");
    assert!(err.to_string().contains("layout"), "{err}");
    let err = UltraModel::native(b"not onnx", meta("x", &f, 0), vec![]).expect_err("garbage");
    assert!(!err.to_string().is_empty());
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
