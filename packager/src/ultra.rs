//! `--ultra PREFIX`: adds the neural query executor to a bundle. The
//! relation half of ULTRA (`PREFIX.relation.onnx`) runs here, once per
//! relation over the bundle's relation graph, and only its output is stored;
//! the entity half (`PREFIX.entity.onnx`) is stored for the runtime.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use kgbox_bundle::sections as s;
use kgbox_bundle::ModelInfo;
use kgbox_neural::engine::{self, tract::opset, Device, EngineKind};
use kgbox_neural::model::{encode_f32s, relation_reps};
use kgbox_neural::{relgraph, UltraMeta};

/// Hidden size of the published ULTRA checkpoints.
pub const DIM: usize = 64;

#[derive(Debug, Clone)]
pub struct UltraOptions {
    pub relation_model: PathBuf,
    pub entity_model: PathBuf,
    /// Recorded in the meta section and the manifest, e.g. `ultraquery`.
    pub checkpoint: String,
    /// `PREFIX.train.json`, read into the manifest when it exists.
    pub training_record: Option<PathBuf>,
}

impl UltraOptions {
    /// `PREFIX.relation.onnx` and `PREFIX.entity.onnx`, as `models/ultra/export.py` writes them.
    pub fn from_prefix(prefix: &Path) -> UltraOptions {
        let with = |suffix: &str| {
            let mut p = prefix.as_os_str().to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        UltraOptions {
            relation_model: with(".relation.onnx"),
            entity_model: with(".entity.onnx"),
            training_record: Some(with(".train.json")),
            checkpoint: prefix
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "ultra".into()),
        }
    }
}

pub struct UltraSections {
    pub sections: Vec<(&'static str, Vec<u8>)>,
    pub model: ModelInfo,
    /// Relation-graph edges and the time the relation model took.
    pub relation_graph_edges: usize,
    pub seconds: f64,
}

/// Computes the `model.ultra.*` sections for the graph in `built`.
pub fn sections(built: &[(&'static str, Vec<u8>)], opts: &UltraOptions) -> Result<UltraSections> {
    let t0 = Instant::now();
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    let relation_onnx = read(&opts.relation_model)?;
    let entity_onnx = read(&opts.entity_model)?;
    let aligned = crate::graph::Aligned::new(built);
    let kg = aligned.kg()?;
    let relations = 2 * kg.relation_count();
    let edges = relgraph::build(&kg);
    let relation_engine = engine::load(EngineKind::Tract, Device::Cpu, &relation_onnx)
        .with_context(|| format!("cannot load {}", opts.relation_model.display()))?;
    let reps = relation_reps(relation_engine.as_ref(), relations, DIM, &edges)
        .with_context(|| format!("running {}", opts.relation_model.display()))?;
    if reps.iter().any(|v| !v.is_finite()) {
        bail!("the relation model produced NaN or infinite values");
    }
    // Load the entity model once here, so a model the runtime cannot run is
    // refused at pack time rather than on the device.
    engine::load(EngineKind::Tract, Device::Cpu, &entity_onnx)
        .with_context(|| format!("cannot load {}", opts.entity_model.display()))?;
    let opset = opset(&entity_onnx)?;
    let meta = UltraMeta {
        checkpoint: opts.checkpoint.clone(),
        dim: DIM,
        relations,
        relation_graph_edges: edges.len(),
        opset,
        fusion: None,
    };
    Ok(UltraSections {
        sections: vec![
            (s::ULTRA_META, meta.to_json()),
            (s::ULTRA_ENTITY_ONNX, entity_onnx),
            (s::ULTRA_RELREPS, encode_f32s(&reps)),
            (s::ULTRA_RELGRAPH, relgraph::encode(&edges)),
        ],
        model: ModelInfo {
            name: opts.checkpoint.clone(),
            section: s::ULTRA_ENTITY_ONNX.to_string(),
            engine: "onnx".into(),
            opset,
            role: "query-executor".into(),
            training: None,
        },
        relation_graph_edges: edges.len(),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The training record beside the model (`PREFIX.train.json`, written by
/// `models/ultra/train.py`), if there is one.
pub fn training_record(opts: &UltraOptions) -> Result<Option<serde_json::Value>> {
    match &opts.training_record {
        Some(path) if path.is_file() => crate::train::read_record(path).map(Some),
        _ => Ok(None),
    }
}

/// Stores `fusion` in the `model.ultra.meta` section of `sections`.
pub fn set_fusion(
    sections: &mut [(&'static str, Vec<u8>)],
    fusion: kgbox_query::Fusion,
) -> Result<()> {
    let Some((_, bytes)) = sections.iter_mut().find(|(name, _)| *name == s::ULTRA_META) else {
        bail!("no {} section to store the fusion in", s::ULTRA_META);
    };
    let mut meta = UltraMeta::from_json(bytes)?;
    meta.fusion = Some(fusion);
    *bytes = meta.to_json();
    Ok(())
}
