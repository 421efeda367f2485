//! The gate and batcher under concurrent projections, on the demo bundle's
//! graph with the real UltraQuery entity model (relation vectors made up:
//! what is checked is that batching does not change scores).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use kgbox_bundle::{Limits, OwnedImage, PublicKey, TrustedKeys};
use kgbox_neural::batcher::{BatchConfig, Projection};
use kgbox_neural::model::{ModelQuery, UltraModel};
use kgbox_neural::seppr::{top_nodes, SepprParams};
use kgbox_neural::subgraph::Subgraph;
use kgbox_neural::UltraMeta;

const DEMO: &[u8] = include_bytes!("../../../demo/demo.kgb");
const DEMO_KEY: &str = include_str!("../../../demo/DEMO-ONLY.pub");

fn model(relations: usize) -> UltraModel {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/ultra/onnx/ultraquery.entity.onnx");
    let onnx = std::fs::read(path).unwrap();
    let nr = 2 * relations;
    let reps: Vec<f32> = (0..nr * nr * 64)
        .map(|i| (i as f32 * 0.37).sin() * 0.5)
        .collect();
    let meta = UltraMeta {
        checkpoint: "ultraquery".into(),
        dim: 64,
        relations: nr,
        relation_graph_edges: 0,
        opset: 16,
        fusion: None,
    };
    UltraModel::native(&onnx, meta, reps).unwrap()
}

#[test]
fn batched_projections_score_as_they_do_alone() {
    let keys = TrustedKeys::new(vec![PublicKey::parse(DEMO_KEY).unwrap()]);
    let img = OwnedImage::from_bundle_bytes(DEMO, &keys, &Limits::default()).unwrap();
    let kg = img.kg().unwrap();
    let r = kg.relation_count();
    let names = [
        "Blade Runner",
        "Malcolm X",
        "Ridley Scott",
        "Spike Lee",
        "Harrison Ford",
    ];
    let seeds: Vec<Vec<(u32, f32)>> = names
        .iter()
        .map(|n| vec![(kg.entity_id(n).unwrap(), 1.0)])
        .collect();
    let params = SepprParams {
        k: 40,
        ..SepprParams::default()
    };
    // Alone, without the batcher.
    let plain = model(r);
    let alone: Vec<(Vec<u32>, Vec<f32>)> = seeds
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let g = Subgraph::induced(&kg, top_nodes(&kg, s, &params));
            let h: Vec<f32> = g
                .nodes
                .iter()
                .map(|v| if *v == s[0].0 { 1.0 } else { 0.0 })
                .collect();
            let rel = i % (2 * r);
            let q = ModelQuery {
                condition: rel,
                relation: rel,
                h_prob: &h,
            };
            let l = plain.logits(&g, &[q]).unwrap().remove(0);
            (g.nodes, l)
        })
        .collect();
    for batch in [false, true] {
        let mut m = model(r);
        m.set_batching(Some(BatchConfig {
            batch,
            max_nodes: 100,
            parallel: 1,
        }));
        let b = m.batcher().unwrap();
        std::thread::scope(|scope| {
            for round in 0..4 {
                for (i, s) in seeds.iter().enumerate() {
                    let (b, m, kg, alone) = (b, &m, &kg, &alone);
                    scope.spawn(move || {
                        let p = Projection {
                            seeds: s.clone(),
                            relation: i % (2 * r),
                            params,
                        };
                        let (nodes, logits) = b.project(kg, m, p).unwrap();
                        assert_eq!(nodes, alone[i].0, "batch {batch}, round {round}, set {i}");
                        for (x, y) in logits.iter().zip(&alone[i].1) {
                            assert!((x - y).abs() < 1e-4, "batch {batch}: {x} vs {y}");
                        }
                    });
                }
            }
        });
        let (batches, projections) = b.counts();
        assert_eq!(projections, 4 * seeds.len());
        if !batch {
            assert_eq!(batches, projections, "unbatched: one projection per run");
        }
        eprintln!("batch {batch}: {projections} projections in {batches} runs");
    }
}
