//! The answer reranker (the bundle's `rerank.*` sections): features of the
//! subgraph joining the question's entities to each candidate
//! ([`features`]), scored by a model trained on the operator's questions
//! (`models/reranker/`) and run by one of the ONNX engines ([`Scorer`]).

pub mod apply;
pub mod features;
pub mod measures;
pub mod subgraph;
#[cfg(test)]
pub(crate) mod test_graph;

use serde::{Deserialize, Serialize};

pub use features::{featurize, Candidate, FEATURE_NAMES, FEATURE_SET, WIDTH};
pub use subgraph::SubgraphLimits;

/// Cosine similarity of a question embedding to an entity's name vector
/// (the bundle's `kg.dense.*`), for the reranker's text feature.
pub type NameSimilarity<'a> = dyn Fn(&[f32], u32) -> Option<f32> + 'a;

/// The `rerank.meta` format this build reads.
pub const META_FORMAT: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    #[error("rerank.meta is not valid: {0}")]
    Meta(String),
    #[error(
        "the reranker was trained on feature set {found:?} with columns {columns:?}; this build computes {FEATURE_SET:?} (retrain it with models/reranker/train.py)"
    )]
    Features { found: String, columns: Vec<String> },
    #[error("the reranker model failed: {0}")]
    Model(String),
}

/// What the training script records beside the model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankMeta {
    pub format: u32,
    pub feature_set: String,
    pub features: Vec<String>,
    /// The model's input name.
    pub input: String,
    /// Which column of the model's first output is P(correct).
    pub output_column: usize,
    /// Candidates reranked per question (the executor's best).
    pub candidates: usize,
    /// Answers after the best are kept when P(correct) >= cut.
    pub cut: f32,
    /// The model family (for the operator).
    pub model: String,
    /// Questions and candidate rows it was trained on.
    pub trained_questions: usize,
    pub trained_rows: usize,
    /// Whether the training rows had text similarity (the bundle's entity
    /// vectors and encoder); without it the column is 0.
    pub text_similarity: bool,
    /// The training script's held-out figures, for the operator.
    #[serde(default)]
    pub validation: serde_json::Value,
}

impl RerankMeta {
    /// Parses `rerank.meta` and checks that this build computes the same
    /// features.
    pub fn from_json(bytes: &[u8]) -> Result<Self, RerankError> {
        let meta: RerankMeta =
            serde_json::from_slice(bytes).map_err(|e| RerankError::Meta(e.to_string()))?;
        if meta.format != META_FORMAT {
            return Err(RerankError::Meta(format!(
                "format {} (this build reads {META_FORMAT})",
                meta.format
            )));
        }
        if meta.feature_set != FEATURE_SET || meta.features != FEATURE_NAMES {
            return Err(RerankError::Features {
                found: meta.feature_set,
                columns: meta.features,
            });
        }
        if meta.candidates == 0 || !(0.0..=1.0).contains(&meta.cut) || meta.output_column > 1 {
            return Err(RerankError::Meta(format!(
                "candidates {} (must be > 0), cut {} (0..1), output_column {} (0 or 1)",
                meta.candidates, meta.cut, meta.output_column
            )));
        }
        Ok(meta)
    }
}

/// Runs the reranker model: `rows` is `n × WIDTH` row-major; returns the
/// model's first output (shape and values).
pub trait Scorer: Send + Sync {
    fn run(&self, input: &str, rows: &[f32], n: usize) -> Result<(Vec<usize>, Vec<f32>), String>;
    /// `tract` or `ort`.
    fn engine(&self) -> &'static str;
}

/// A [`Scorer`] over one of the ONNX engines of `kgbox-neural`.
pub struct EngineScorer(pub Box<dyn kgbox_neural::Engine>);

impl EngineScorer {
    pub fn load(
        kind: kgbox_neural::EngineKind,
        device: kgbox_neural::Device,
        onnx: &[u8],
    ) -> Result<Self, RerankError> {
        kgbox_neural::engine::load(kind, device, onnx)
            .map(EngineScorer)
            .map_err(|e| RerankError::Model(e.to_string()))
    }
}

impl Scorer for EngineScorer {
    fn run(&self, input: &str, rows: &[f32], n: usize) -> Result<(Vec<usize>, Vec<f32>), String> {
        let shape = [n, WIDTH];
        self.0
            .run(&[(input, kgbox_neural::engine::Arg::F32(&shape, rows))])
            .map_err(|e| e.to_string())
    }
    fn engine(&self) -> &'static str {
        self.0.name()
    }
}

/// A loaded reranker.
pub struct Reranker {
    pub meta: RerankMeta,
    pub scorer: Box<dyn Scorer>,
}

impl Reranker {
    /// Loads `rerank.meta` and the model into `kind`'s engine, and scores
    /// one row of zeros to check the model's input and output.
    pub fn load(
        meta: &[u8],
        onnx: &[u8],
        kind: kgbox_neural::EngineKind,
        device: kgbox_neural::Device,
    ) -> Result<Self, RerankError> {
        let reranker = Reranker {
            meta: RerankMeta::from_json(meta)?,
            scorer: Box::new(EngineScorer::load(kind, device, onnx)?),
        };
        reranker.score(&[[0.0; WIDTH]])?;
        Ok(reranker)
    }

    /// P(correct) for each row.
    pub fn score(&self, rows: &[[f32; WIDTH]]) -> Result<Vec<f32>, RerankError> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let (shape, values) = self
            .scorer
            .run(&self.meta.input, &flat, rows.len())
            .map_err(RerankError::Model)?;
        let col = self.meta.output_column;
        match shape.as_slice() {
            [n, 2] if *n == rows.len() => Ok(values.chunks_exact(2).map(|c| c[col]).collect()),
            [n] | [n, 1] if *n == rows.len() => Ok(values),
            other => Err(RerankError::Model(format!(
                "output shape {other:?} for {} rows (expected [{n}, 2] or [{n}])",
                rows.len(),
                n = rows.len()
            ))),
        }
    }
}

/// What the reranker did to one question's candidates.
#[derive(Debug, Clone, Serialize)]
pub struct RerankInfo {
    /// Candidates scored.
    pub candidates: usize,
    /// The best answer changed.
    pub changed_top: bool,
    pub engine: &'static str,
    pub ms: f64,
}

/// The order of `probabilities` (best first; ties keep the executor's order).
pub fn order(probabilities: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..probabilities.len()).collect();
    idx.sort_by(|&a, &b| {
        probabilities[b]
            .total_cmp(&probabilities[a])
            .then(a.cmp(&b))
    });
    idx
}

/// Indices of the answers kept, in order: of the reranked head (the first
/// `probabilities.len()` answers, best first), the best always and then each
/// with P(correct) >= `cut`; of the answers after it, which the reranker did
/// not see, those the executor scores at least `threshold` × its best score
/// (`scores` holds every answer's executor score). At most `top_k`.
pub fn cut(
    probabilities: &[f32],
    scores: &[f32],
    cut: f32,
    threshold: f32,
    top_k: usize,
) -> Vec<usize> {
    let best = scores.iter().copied().fold(0f32, f32::max);
    let head = probabilities
        .iter()
        .enumerate()
        .filter(|(i, p)| *i == 0 || **p >= cut)
        .map(|(i, _)| i);
    let tail = scores
        .iter()
        .enumerate()
        .skip(probabilities.len())
        .filter(|(_, s)| best > 0.0 && **s >= threshold * best)
        .map(|(i, _)| i);
    head.chain(tail).take(top_k.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> RerankMeta {
        RerankMeta {
            format: META_FORMAT,
            feature_set: FEATURE_SET.into(),
            features: FEATURE_NAMES.iter().map(|s| s.to_string()).collect(),
            input: "features".into(),
            output_column: 1,
            candidates: 20,
            cut: 0.5,
            model: "test".into(),
            trained_questions: 1,
            trained_rows: 2,
            text_similarity: false,
            validation: serde_json::Value::Null,
        }
    }

    #[test]
    fn meta_must_match_this_builds_features() {
        let ok = serde_json::to_vec(&meta()).unwrap_or_default();
        assert!(RerankMeta::from_json(&ok).is_ok());
        let mut m = meta();
        m.features.swap(0, 1);
        let err = RerankMeta::from_json(&serde_json::to_vec(&m).unwrap_or_default())
            .expect_err("columns differ");
        assert!(err.to_string().contains("retrain"), "{err}");
        let mut m = meta();
        m.cut = 2.0;
        assert!(RerankMeta::from_json(&serde_json::to_vec(&m).unwrap_or_default()).is_err());
        assert!(RerankMeta::from_json(b"{}").is_err());
    }

    struct Fixed(Vec<usize>, Vec<f32>);
    impl Scorer for Fixed {
        fn run(&self, _: &str, _: &[f32], _: usize) -> Result<(Vec<usize>, Vec<f32>), String> {
            Ok((self.0.clone(), self.1.clone()))
        }
        fn engine(&self) -> &'static str {
            "test"
        }
    }

    #[test]
    fn scores_take_the_configured_column_and_check_the_shape() {
        let rows = [[0f32; WIDTH]; 2];
        let r = Reranker {
            meta: meta(),
            scorer: Box::new(Fixed(vec![2, 2], vec![0.9, 0.1, 0.2, 0.8])),
        };
        assert_eq!(r.score(&rows).ok(), Some(vec![0.1, 0.8]));
        let bad = Reranker {
            meta: meta(),
            scorer: Box::new(Fixed(vec![3, 2], vec![0.0; 6])),
        };
        assert!(bad.score(&rows).is_err());
    }

    #[test]
    fn order_and_cut() {
        assert_eq!(order(&[0.2, 0.9, 0.2, 0.5]), vec![1, 3, 0, 2]);
        let ones = [1.0; 4];
        assert_eq!(cut(&[0.3, 0.2], &ones[..2], 0.5, 0.9, 5), vec![0]);
        assert_eq!(
            cut(&[0.9, 0.7, 0.4, 0.6], &ones, 0.5, 0.9, 5),
            vec![0, 1, 3]
        );
        assert_eq!(cut(&[0.9, 0.7, 0.6], &ones[..3], 0.5, 0.9, 2), vec![0, 1]);
        // Past the reranked head, the executor's threshold decides.
        assert_eq!(
            cut(&[0.9, 0.2], &[1.0, 1.0, 1.0, 0.1], 0.5, 0.9, 9),
            vec![0, 2]
        );
    }
}
