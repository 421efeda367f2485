//! The ULTRA model of a bundle: the entity half (an ONNX graph in an
//! [`Engine`]) and the relation representations the packager precomputed.

use kgbox_bundle::sections;

use crate::batcher::{BatchConfig, Batcher, Scorer};
use crate::engine::{self, Arg, Device, Engine, EngineKind};
use crate::f32le::decode_f32s;
use crate::meta::UltraMeta;
use crate::native::{NativeUltra, Part};
use crate::subgraph::Subgraph;
use crate::{NeuralError, Result};

/// Conditioning relations run through the relation model at once.
pub const RELATION_BATCH: usize = 32;

/// One projection to score: the relation representations are conditioned on
/// `condition`, the query vector is that of `relation` (equal for
/// UltraQuery's projection; `condition = r`, `relation = r + R` for a head
/// query in link prediction), and `h_prob` is the fuzzy start set over the
/// graph's nodes.
#[derive(Debug, Clone, Copy)]
pub struct ModelQuery<'a> {
    pub condition: usize,
    pub relation: usize,
    pub h_prob: &'a [f32],
}

/// What runs the entity model: the native engine, or an ONNX engine.
enum Runner {
    Native(NativeUltra),
    Onnx(Box<dyn Engine>),
}

pub struct UltraModel {
    runner: Runner,
    /// Gathers concurrent projections into batches, when enabled.
    batcher: Option<Batcher>,
    meta: UltraMeta,
    /// `[condition][relation][dim]`.
    relreps: Vec<f32>,
}

impl std::fmt::Debug for UltraModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UltraModel")
            .field("engine", &self.engine_name())
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl UltraModel {
    pub fn new(engine: Box<dyn Engine>, meta: UltraMeta, relreps: Vec<f32>) -> Result<UltraModel> {
        UltraModel::with_runner(Runner::Onnx(engine), meta, relreps)
    }

    /// The model on the native engine (see [`crate::native`]).
    pub fn native(onnx: &[u8], meta: UltraMeta, relreps: Vec<f32>) -> Result<UltraModel> {
        let native = NativeUltra::from_onnx(onnx, meta.dim, meta.relations)?;
        UltraModel::with_runner(Runner::Native(native), meta, relreps)
    }

    fn with_runner(runner: Runner, meta: UltraMeta, relreps: Vec<f32>) -> Result<UltraModel> {
        let want = meta.relations * meta.relations * meta.dim;
        if meta.dim == 0 || meta.relations == 0 || relreps.len() != want {
            return Err(NeuralError::Invalid(format!(
                "relation representations hold {} values, expected {} relations² × {} dims = {want}",
                relreps.len(),
                meta.relations,
                meta.dim
            )));
        }
        if relreps.iter().any(|v| !v.is_finite()) {
            return Err(NeuralError::Invalid(
                "relation representations contain NaN or infinity".into(),
            ));
        }
        Ok(UltraModel {
            runner,
            batcher: None,
            meta,
            relreps,
        })
    }

    /// The bundle's model, if it has one (`Ok(None)` when it has none).
    /// `relations` is the KG's direct relation count R.
    pub fn from_sections<'a>(
        get: impl Fn(&str) -> Option<&'a [u8]>,
        relations: usize,
        kind: EngineKind,
        device: Device,
    ) -> Result<Option<UltraModel>> {
        let Some(meta) = get(sections::ULTRA_META) else {
            return Ok(None);
        };
        let meta = UltraMeta::from_json(meta)?;
        if meta.relations != 2 * relations {
            return Err(NeuralError::Invalid(format!(
                "the model covers {} relation types, the graph has {} (×2 with inverses)",
                meta.relations, relations
            )));
        }
        let onnx = get(sections::ULTRA_ENTITY_ONNX).ok_or_else(|| {
            NeuralError::Invalid(format!(
                "{} without {}",
                sections::ULTRA_META,
                sections::ULTRA_ENTITY_ONNX
            ))
        })?;
        let relreps = get(sections::ULTRA_RELREPS).ok_or_else(|| {
            NeuralError::Invalid(format!(
                "{} without {}",
                sections::ULTRA_META,
                sections::ULTRA_RELREPS
            ))
        })?;
        let relreps = decode_f32s(relreps)?;
        if engine::native_runs(kind, device) {
            return UltraModel::native(onnx, meta, relreps).map(Some);
        }
        let engine = engine::load(kind, device, onnx)?;
        UltraModel::new(engine, meta, relreps).map(Some)
    }

    pub fn meta(&self) -> &UltraMeta {
        &self.meta
    }

    /// `native`, `tract` or `ort`.
    pub fn engine_name(&self) -> &'static str {
        match &self.runner {
            Runner::Native(_) => "native",
            Runner::Onnx(e) => e.name(),
        }
    }

    /// `cpu` or `cuda`.
    pub fn device(&self) -> &'static str {
        match &self.runner {
            Runner::Native(_) => "cpu",
            Runner::Onnx(e) => e.device(),
        }
    }

    /// Admits concurrent projections in turn and batches them (see
    /// [`crate::batcher`]); `None` lets every projection run at once. Only
    /// the native engine batches (an ONNX engine would run the items one by
    /// one anyway), so with another engine `batch` is off.
    pub fn set_batching(&mut self, config: Option<BatchConfig>) {
        let batches = self.batches();
        self.batcher = config.map(|c| {
            Batcher::new(BatchConfig {
                batch: c.batch && batches,
                ..c
            })
        });
    }

    /// The gate and batcher, when set.
    pub fn batcher(&self) -> Option<&Batcher> {
        self.batcher.as_ref()
    }

    /// Whether several graphs can run as one disjoint batch
    /// ([`UltraModel::logits_batch`]) at the cost of their sizes summed.
    pub fn batches(&self) -> bool {
        matches!(self.runner, Runner::Native(_))
    }

    /// Relation representations conditioned on `condition`: `[relation][dim]`.
    pub fn rel_reps(&self, condition: usize) -> Option<&[f32]> {
        let size = self.meta.relations * self.meta.dim;
        self.relreps.get(condition * size..(condition + 1) * size)
    }

    /// The query vector and the relation representations of one query.
    fn vectors(&self, q: &ModelQuery<'_>) -> Result<(&[f32], &[f32])> {
        let (nr, d) = (self.meta.relations, self.meta.dim);
        let reps = self.rel_reps(q.condition).ok_or_else(|| {
            NeuralError::Run(format!(
                "relation {} out of range ({nr} types)",
                q.condition
            ))
        })?;
        let vector = reps
            .get(q.relation * d..(q.relation + 1) * d)
            .ok_or_else(|| {
                NeuralError::Run(format!("relation {} out of range ({nr} types)", q.relation))
            })?;
        Ok((vector, reps))
    }

    /// Logits of every node of `graph` for each query.
    pub fn logits(&self, graph: &Subgraph, queries: &[ModelQuery<'_>]) -> Result<Vec<Vec<f32>>> {
        let items: Vec<(&Subgraph, ModelQuery<'_>)> = queries.iter().map(|q| (graph, *q)).collect();
        match &self.runner {
            Runner::Native(_) => self.logits_batch(&items),
            Runner::Onnx(engine) => self.logits_onnx(engine.as_ref(), graph, queries),
        }
    }

    /// Logits of every node of each item's graph, for its query. The native
    /// engine runs them as one disjoint batch; an ONNX engine one by one.
    pub fn logits_batch(&self, items: &[(&Subgraph, ModelQuery<'_>)]) -> Result<Vec<Vec<f32>>> {
        let native = match &self.runner {
            Runner::Native(n) => n,
            Runner::Onnx(engine) => {
                let mut out = Vec::with_capacity(items.len());
                for (g, q) in items {
                    out.extend(self.logits_onnx(engine.as_ref(), g, std::slice::from_ref(q))?);
                }
                return Ok(out);
            }
        };
        let mut parts = Vec::with_capacity(items.len());
        for (g, q) in items {
            let (query, rel_reps) = self.vectors(q)?;
            if q.h_prob.len() != g.nodes.len() {
                return Err(NeuralError::Run(format!(
                    "start set over {} nodes for a graph of {}",
                    q.h_prob.len(),
                    g.nodes.len()
                )));
            }
            parts.push(Part {
                nodes: g.nodes.len(),
                src: &g.src,
                dst: &g.dst,
                kind: &g.kind,
                h_prob: q.h_prob,
                query,
                rel_reps,
            });
        }
        native.forward(&parts)
    }

    fn logits_onnx(
        &self,
        engine: &dyn Engine,
        graph: &Subgraph,
        queries: &[ModelQuery<'_>],
    ) -> Result<Vec<Vec<f32>>> {
        let n = graph.nodes.len();
        let (nr, d) = (self.meta.relations, self.meta.dim);
        let b = queries.len();
        if b == 0 || n == 0 {
            return Ok(vec![Vec::new(); b]);
        }
        let mut h_prob = Vec::with_capacity(b * n);
        let mut query = Vec::with_capacity(b * d);
        let mut rel_reps = Vec::with_capacity(b * nr * d);
        for q in queries {
            let (vector, reps) = self.vectors(q)?;
            if q.h_prob.len() != n {
                return Err(NeuralError::Run(format!(
                    "start set over {} nodes for a graph of {n}",
                    q.h_prob.len()
                )));
            }
            h_prob.extend_from_slice(q.h_prob);
            query.extend_from_slice(vector);
            rel_reps.extend_from_slice(reps);
        }
        let e = graph.edge_count();
        let (shape, out) = engine.run(&[
            ("h_prob", Arg::F32(&[b, n], &h_prob)),
            ("query", Arg::F32(&[b, d], &query)),
            ("rel_reps", Arg::F32(&[b, nr, d], &rel_reps)),
            ("edge_src", Arg::I64(&[e], &graph.src)),
            ("edge_dst", Arg::I64(&[e], &graph.dst)),
            ("edge_type", Arg::I64(&[e], &graph.kind)),
        ])?;
        if shape != [b, n] {
            return Err(NeuralError::Run(format!(
                "the model returned shape {shape:?}, expected [{b}, {n}]"
            )));
        }
        Ok(out.chunks_exact(n).map(<[f32]>::to_vec).collect())
    }
}

/// A projection along `r` conditions on `r` and queries `r`
/// (UltraQuery's projection).
impl Scorer for UltraModel {
    fn score(&self, items: &[(&Subgraph, usize, &[f32])]) -> Result<Vec<Vec<f32>>> {
        let items: Vec<(&Subgraph, ModelQuery<'_>)> = items
            .iter()
            .map(|&(graph, r, h_prob)| {
                let query = ModelQuery {
                    condition: r,
                    relation: r,
                    h_prob,
                };
                (graph, query)
            })
            .collect();
        self.logits_batch(&items)
    }
}

/// Runs ULTRA's relation model (an ONNX graph in `engine`) once per
/// conditioning relation over the relation graph `edges` (`(dst, src, type)`):
/// `[condition][relation][dim]` for `relations` = 2R types.
pub fn relation_reps(
    engine: &dyn Engine,
    relations: usize,
    dim: usize,
    edges: &[[u32; 3]],
) -> Result<Vec<f32>> {
    let src: Vec<i64> = edges.iter().map(|e| i64::from(e[1])).collect();
    let dst: Vec<i64> = edges.iter().map(|e| i64::from(e[0])).collect();
    let kind: Vec<i64> = edges.iter().map(|e| i64::from(e[2])).collect();
    let mut out = Vec::with_capacity(relations * relations * dim);
    let conditions: Vec<usize> = (0..relations).collect();
    for chunk in conditions.chunks(RELATION_BATCH) {
        let b = chunk.len();
        let mut boundary = vec![0f32; b * relations];
        for (i, &c) in chunk.iter().enumerate() {
            boundary[i * relations + c] = 1.0;
        }
        let e = edges.len();
        let (shape, reps) = engine.run(&[
            ("boundary", Arg::F32(&[b, relations], &boundary)),
            ("rel_src", Arg::I64(&[e], &src)),
            ("rel_dst", Arg::I64(&[e], &dst)),
            ("rel_type", Arg::I64(&[e], &kind)),
        ])?;
        if shape != [b, relations, dim] {
            return Err(NeuralError::Run(format!(
                "the relation model returned shape {shape:?}, expected [{b}, {relations}, {dim}]"
            )));
        }
        out.extend(reps);
    }
    Ok(out)
}

/// The logistic function.
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}
