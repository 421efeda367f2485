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
use kgbox_neural::f32le::encode_f32s;
use kgbox_neural::model::relation_reps;
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
pub fn sections(
    built: &[(&'static str, crate::section::SectionData)],
    opts: &UltraOptions,
) -> Result<UltraSections> {
    let t0 = Instant::now();
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
    let relation_onnx = read(&opts.relation_model)?;
    let entity_onnx = read(&opts.entity_model)?;
    let aligned = crate::graph::Aligned::new(built)?;
    let kg = aligned.kg()?;
    let relations = 2 * kg.relation_count();
    let edges = relgraph::build(&kg);
    check_relation_work(relations, edges.len())?;
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

/// Most memory the relation model may take per batch, and the most its
/// output (one vector per pair of relations) may add to a bundle.
const MAX_RELATION_WORK: u64 = 4 << 30;
const MAX_RELREPS: u64 = 256 << 20;

/// Refuses, before running it, a relation model that would not fit: ULTRA's
/// relation half grows with the relation graph's edges (pairs of relations
/// sharing entities) and stores a vector per pair of relations, so a graph
/// with thousands of relations that all co-occur is out of its reach.
fn check_relation_work(relations: usize, edges: usize) -> Result<()> {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let work = (edges * kgbox_neural::model::RELATION_BATCH * DIM * 4) as u64;
    let relreps = (relations * relations * DIM * 4) as u64;
    if work > MAX_RELATION_WORK || relreps > MAX_RELREPS {
        bail!(
            "--ultra: the relation graph has {edges} edges over {relations} relations (with inverses); \
             ULTRA's relation model would need about {:.1} GiB per batch (at most {:.0}) and add \
             {:.2} GiB of relation vectors to the bundle (at most {:.2}). Build this graph \
             without --ultra (the symbolic executor serves it) or split it by relation",
            gib(work),
            gib(MAX_RELATION_WORK),
            gib(relreps),
            gib(MAX_RELREPS)
        );
    }
    Ok(())
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
    sections: &mut [(&'static str, crate::section::SectionData)],
    fusion: kgbox_query::Fusion,
) -> Result<()> {
    let Some((_, data)) = sections.iter_mut().find(|(name, _)| *name == s::ULTRA_META) else {
        bail!("no {} section to store the fusion in", s::ULTRA_META);
    };
    let Some(bytes) = data.heap() else {
        bail!("the {} section is not in memory", s::ULTRA_META);
    };
    let mut meta = UltraMeta::from_json(bytes)?;
    meta.fusion = Some(fusion);
    *data = meta.to_json().into();
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn relation_graphs_beyond_the_model_are_refused_up_front() {
        // MetaQA: 18 relations, a few hundred relation-graph edges.
        assert!(super::check_relation_work(36, 600).is_ok());
        // 1,000 relations that all share entities.
        let err = super::check_relation_work(2000, 16_000_000).unwrap_err();
        assert!(err.to_string().contains("without --ultra"), "{err}");
    }
}
