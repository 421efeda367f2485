//! The committed reranker (`models/reranker/fixtures/metaqa`) loads into
//! tract and scores the fixture rows as onnxruntime did when it was made
//! (`models/reranker/make_fixture.sh`).
#![allow(clippy::unwrap_used)]

use kgbox_neural::{Device, EngineKind};
use kgbox_qa::rerank::{Reranker, FEATURE_NAMES, WIDTH};

#[test]
fn tract_matches_onnxruntime_on_the_fixture() {
    let dir = kgbox_testkit::repo_root().join("models/reranker/fixtures");
    let meta = std::fs::read(dir.join("metaqa.json")).unwrap();
    let onnx = std::fs::read(dir.join("metaqa.onnx")).unwrap();
    let r = Reranker::load(&meta, &onnx, EngineKind::Tract, Device::Cpu).unwrap();
    let text = std::fs::read_to_string(dir.join("metaqa-scores.tsv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    assert_eq!(&header[..WIDTH], FEATURE_NAMES);
    let (mut rows, mut expected) = (Vec::new(), Vec::new());
    for line in lines {
        let v: Vec<f32> = line.split('\t').map(|x| x.parse().unwrap()).collect();
        let mut row = [0f32; WIDTH];
        row.copy_from_slice(&v[..WIDTH]);
        rows.push(row);
        expected.push(v[WIDTH]);
    }
    assert_eq!(rows.len(), 64);
    let got = r.score(&rows).unwrap();
    let worst = got
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-4, "max |tract - onnxruntime| = {worst}");
    // The fixture separates: some rows likely, some unlikely.
    assert!(expected.iter().any(|&p| p > 0.5) && expected.iter().any(|&p| p < 0.5));
    // Damaged models and wrong shapes are errors, not panics.
    assert!(Reranker::load(&meta, b"not onnx", EngineKind::Tract, Device::Cpu).is_err());
}
