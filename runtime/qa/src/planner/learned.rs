//! The learned planner: a softmax classifier from question features
//! ([`super::features`]) to query templates ([`super::template`]), trained by
//! the packager (`super::train`) and stored in the bundle as two sections:
//! `planner.meta` (JSON: [`PlannerMeta`]) and `planner.weights` (`f32`
//! little-endian, `[class][feature + 1]`, the bias last).

use serde::{Deserialize, Serialize};

use super::features::{FeatureSpec, Features};
use super::template::Template;

/// The arbitrator's cut when nothing was calibrated (and without a learned
/// planner).
pub const DEFAULT_THRESHOLD: f32 = 0.5;

/// The `planner.meta` format this build reads and writes.
pub const FORMAT: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum PlannerError {
    #[error("planner.meta is invalid: {0}")]
    Meta(String),
    #[error("planner.weights holds {got} bytes, the meta needs {want}")]
    Weights { got: usize, want: usize },
    #[error("the planner needs the bundle's sentence encoder, which {0}")]
    Encoder(String),
}

/// An example question of one template, shown to an LLM planner as a
/// demonstration (a question and its query; never answers or facts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Demo {
    /// Index into `templates`.
    pub class: usize,
    /// The question with its topic written `[Name]`.
    pub question: String,
    /// The topic entity's name in the graph.
    pub topic: String,
}

/// The `planner.meta` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannerMeta {
    pub format: u32,
    pub features: FeatureSpec,
    /// Class `i` predicts `templates[i]`.
    pub templates: Vec<Template>,
    /// The arbitrator's cut without an LLM: answers scoring at least this
    /// fraction of the best answer's score (calibrated by the packager).
    pub answer_threshold: f32,
    /// Per template: whether its queries keep anchor entities in answers
    /// (calibrated by the packager on the examples' answers; empty: none do).
    #[serde(default)]
    pub keep_anchors: Vec<bool>,
    /// Up to a few example questions per template, for LLM planners
    /// ([`super::guided`]); empty in bundles packed before they existed.
    #[serde(default)]
    pub demos: Vec<Demo>,
    /// The encoder the embeddings came from (`None`: no embedding block).
    pub encoder: Option<String>,
    /// Training report, for `kgbox-pack inspect` and the logs.
    pub trained_on: usize,
    /// Accuracy on the examples held out while training (`None` if too few).
    pub heldout_accuracy: Option<f32>,
}

/// A loaded planner.
#[derive(Debug, Clone)]
pub struct LearnedPlanner {
    pub meta: PlannerMeta,
    /// `[class][dim + 1]`.
    weights: Vec<f32>,
}

/// One template's probability.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub class: usize,
    pub template: Template,
    pub probability: f32,
}

impl LearnedPlanner {
    pub fn new(meta: PlannerMeta, weights: Vec<f32>) -> Result<LearnedPlanner, PlannerError> {
        let want = meta.templates.len() * (meta.features.dim() + 1);
        if weights.len() != want {
            return Err(PlannerError::Weights {
                got: weights.len() * 4,
                want: want * 4,
            });
        }
        if meta.templates.is_empty() {
            return Err(PlannerError::Meta("no templates".into()));
        }
        if let Some(d) = meta.demos.iter().find(|d| d.class >= meta.templates.len()) {
            return Err(PlannerError::Meta(format!(
                "a demonstration names template {} of {}",
                d.class,
                meta.templates.len()
            )));
        }
        if !(0.0..=1.0).contains(&meta.answer_threshold) {
            return Err(PlannerError::Meta(format!(
                "answer_threshold {} is outside 0..1",
                meta.answer_threshold
            )));
        }
        Ok(LearnedPlanner { meta, weights })
    }

    /// Parses the two sections.
    pub fn from_sections(meta: &[u8], weights: &[u8]) -> Result<LearnedPlanner, PlannerError> {
        let meta: PlannerMeta =
            serde_json::from_slice(meta).map_err(|e| PlannerError::Meta(e.to_string()))?;
        if meta.format != FORMAT {
            return Err(PlannerError::Meta(format!(
                "format {} (this build reads {FORMAT})",
                meta.format
            )));
        }
        let want = meta.templates.len() * (meta.features.dim() + 1) * 4;
        if weights.len() != want {
            return Err(PlannerError::Weights {
                got: weights.len(),
                want,
            });
        }
        let weights = weights
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        LearnedPlanner::new(meta, weights)
    }

    /// The two sections' bytes: (`planner.meta`, `planner.weights`).
    #[cfg(any(test, feature = "train"))]
    pub fn to_sections(&self) -> (Vec<u8>, Vec<u8>) {
        let meta = serde_json::to_vec_pretty(&self.meta).unwrap_or_default();
        let weights = self.weights.iter().flat_map(|w| w.to_le_bytes()).collect();
        (meta, weights)
    }

    /// Whether queries of template `class` keep anchors in their answers.
    pub fn keeps_anchors(&self, class: usize) -> bool {
        self.meta.keep_anchors.get(class).copied().unwrap_or(false)
    }

    /// Sets the per-template anchor policy (the packager's calibration).
    #[cfg(feature = "train")]
    pub fn set_keep_anchors(&mut self, keep: Vec<bool>) {
        self.meta.keep_anchors = keep;
    }

    /// Sets the arbitrator's calibrated threshold.
    #[cfg(feature = "train")]
    pub fn set_answer_threshold(&mut self, threshold: f32) {
        self.meta.answer_threshold = threshold.clamp(0.0, 1.0);
    }

    pub fn spec(&self) -> &FeatureSpec {
        &self.meta.features
    }

    fn row(&self, class: usize) -> &[f32] {
        let d = self.meta.features.dim() + 1;
        &self.weights[class * d..(class + 1) * d]
    }

    /// Class probabilities, best first.
    pub fn predict(&self, x: &Features) -> Vec<Prediction> {
        let d = self.meta.features.dim();
        let logits: Vec<f32> = (0..self.meta.templates.len())
            .map(|c| {
                let row = self.row(c);
                x.dot(&row[..d]) + row[d]
            })
            .collect();
        let probs = softmax(&logits);
        let mut out: Vec<Prediction> = probs
            .into_iter()
            .enumerate()
            .map(|(class, probability)| Prediction {
                class,
                template: self.meta.templates[class].clone(),
                probability,
            })
            .collect();
        out.sort_by(|a, b| b.probability.total_cmp(&a.probability));
        out
    }
}

pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    exps.into_iter()
        .map(|e| e / sum.max(f32::MIN_POSITIVE))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planner() -> LearnedPlanner {
        let spec = FeatureSpec {
            embed_dim: 2,
            ngram_buckets: 2,
            signature_buckets: 1,
        };
        let meta = PlannerMeta {
            format: FORMAT,
            features: spec,
            templates: vec![
                Template("{topic} -> a".into()),
                Template("{topic} -> b".into()),
            ],
            answer_threshold: 0.5,
            keep_anchors: vec![],
            demos: vec![],
            encoder: None,
            trained_on: 2,
            heldout_accuracy: None,
        };
        // class 0 likes dense[0], class 1 likes sparse index 3.
        let w = vec![3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0];
        LearnedPlanner::new(meta, w).expect("valid")
    }

    #[test]
    fn predicts_and_round_trips() {
        let p = planner();
        let x = Features {
            dense: vec![1.0, 0.0],
            sparse: vec![],
        };
        let pred = p.predict(&x);
        assert_eq!(pred[0].class, 0);
        assert!(pred[0].probability > 0.9);
        let y = Features {
            dense: vec![0.0, 0.0],
            sparse: vec![(3, 1.0)],
        };
        assert_eq!(p.predict(&y)[0].class, 1);
        let (m, w) = p.to_sections();
        let q = LearnedPlanner::from_sections(&m, &w).expect("round trip");
        assert_eq!(q.predict(&y), p.predict(&y));
    }

    #[test]
    fn bad_sections_are_refused() {
        let (m, w) = planner().to_sections();
        assert!(matches!(
            LearnedPlanner::from_sections(&m, &w[..w.len() - 4]),
            Err(PlannerError::Weights { .. })
        ));
        assert!(matches!(
            LearnedPlanner::from_sections(b"{", &w),
            Err(PlannerError::Meta(_))
        ));
    }
}
