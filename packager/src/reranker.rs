//! `--reranker PREFIX`: adds the answer reranker trained by
//! `models/reranker/train.py` (PREFIX.onnx and PREFIX.json) as the
//! `rerank.meta` and `model.rerank.onnx` sections, after checking that this
//! build computes the features it was trained on and that it runs.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kgbox_bundle::sections as s;
use kgbox_bundle::ModelInfo;
use kgbox_neural::engine::{tract::opset, Device, EngineKind};
use kgbox_qa::rerank::Reranker;

pub struct RerankerSections {
    pub sections: Vec<(&'static str, Vec<u8>)>,
    pub model: ModelInfo,
    pub note: String,
}

fn with_ext(prefix: &Path, ext: &str) -> PathBuf {
    let mut p = prefix.as_os_str().to_owned();
    p.push(ext);
    PathBuf::from(p)
}

/// Reads, checks and returns the reranker's sections.
pub fn sections(prefix: &Path) -> Result<RerankerSections> {
    let onnx_path = with_ext(prefix, ".onnx");
    let meta_path = with_ext(prefix, ".json");
    let onnx = std::fs::read(&onnx_path)
        .with_context(|| format!("cannot read the reranker model {}", onnx_path.display()))?;
    let meta = std::fs::read(&meta_path)
        .with_context(|| format!("cannot read the reranker's meta {}", meta_path.display()))?;
    let reranker = Reranker::load(&meta, &onnx, EngineKind::Tract, Device::Cpu)
        .with_context(|| format!("the reranker {} cannot be used", prefix.display()))?;
    let m = &reranker.meta;
    let note = format!(
        "reranker: {} on {} features, trained on {} questions ({} rows), reranks the best {} candidates",
        m.model,
        m.features.len(),
        m.trained_questions,
        m.trained_rows,
        m.candidates
    );
    let model = ModelInfo {
        name: m.model.clone(),
        section: s::RERANK_ONNX.to_string(),
        engine: "onnx".into(),
        opset: opset(&onnx)?,
        role: "reranker".into(),
        training: None,
    };
    Ok(RerankerSections {
        sections: vec![(s::RERANK_META, meta), (s::RERANK_ONNX, onnx)],
        model,
        note,
    })
}
