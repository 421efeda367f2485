//! The learned planner: a softmax classifier from question features
//! ([`super::features`]) to query templates ([`super::template`]), trained by
//! the packager (`super::train`) and stored in the bundle as two sections:
//! `planner.meta` (JSON: [`PlannerMeta`]) and `planner.weights` (`f32`
//! little-endian, `[class][feature + 1]`, the bias last; then each relation
//! head's rows the same way; then, when `demo_vectors` is set, each
//! demonstration's unit-length sentence vector).

use serde::{Deserialize, Serialize};

use super::features::{FeatureSpec, Features};
use super::heads::{HeadMeta, WindowVectors};
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
    /// Whether `planner.weights` ends with each demonstration's sentence
    /// vector (of its masked question), for retrieving the nearest ones.
    /// False in bundles packed before they existed, and without an encoder.
    #[serde(default)]
    pub demo_vectors: bool,
    /// Weight of the nearest demonstration in the learned plan: each
    /// template scores its log-probability plus this times the cosine of the
    /// question to its nearest stored demonstration ([`Self::demo_vectors`]).
    /// The packager sets it for a planner trained on questions synthesised
    /// from the graph, whose phrasings are narrower than people's; 0 (the
    /// classifier alone) otherwise and in older bundles.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub demo_weight: f32,
    /// Per path length (index 0: one hop), whether the questions the
    /// planner was trained on left paths of that length out (the
    /// packager's synthesis keeps a quota of the graph's paths): a path of
    /// such a length that is no template is unknown to the planner, not
    /// unlikely ([`super::path_plan`]). Empty when trained on examples and
    /// in older bundles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_hops: Vec<bool>,
    /// Relation heads ([`super::heads`]); their weights follow the
    /// templates' in `planner.weights`. Empty in bundles packed before
    /// they existed.
    #[serde(default)]
    pub heads: Vec<HeadMeta>,
    /// How the heads' windows get their sentence vectors (`alone` in
    /// bundles packed before pooling, and left out when `alone`, as a
    /// planner without an encoder has it).
    #[serde(default, skip_serializing_if = "WindowVectors::is_alone")]
    pub window_vectors: WindowVectors,
    /// The encoder the embeddings came from (`None`: no embedding block).
    pub encoder: Option<String>,
    /// Training report, for `kgbox-pack inspect` and the logs.
    pub trained_on: usize,
    /// Accuracy on the examples held out while training (`None` if too few).
    pub heldout_accuracy: Option<f32>,
}

fn is_zero(w: &f32) -> bool {
    *w == 0.0
}

/// A loaded planner.
#[derive(Debug, Clone)]
pub struct LearnedPlanner {
    pub meta: PlannerMeta,
    /// `[class][dim + 1]`, then each head's `[label][dim + 1]`.
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
        let want = meta.weight_count();
        if weights.len() != want {
            return Err(PlannerError::Weights {
                got: weights.len() * 4,
                want: want * 4,
            });
        }
        if meta.templates.is_empty() {
            return Err(PlannerError::Meta("no templates".into()));
        }
        if let Some(h) = meta
            .heads
            .iter()
            .find(|h| h.labels.is_empty() || !h.weight.is_finite() || h.weight < 0.0)
        {
            return Err(PlannerError::Meta(format!(
                "the {:?} head has no labels or a weight that is not a number >= 0",
                h.kind
            )));
        }
        if meta.demo_vectors && meta.features.embed_dim == 0 {
            return Err(PlannerError::Meta(
                "demo_vectors is set but the planner has no embedding block".into(),
            ));
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
        let want = meta.weight_count() * 4;
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

    /// The sentence vector of demonstration `i` (unit length), when the
    /// bundle stores them.
    pub fn demo_vector(&self, i: usize) -> Option<&[f32]> {
        if !self.meta.demo_vectors || i >= self.meta.demos.len() {
            return None;
        }
        let d = self.meta.features.embed_dim;
        let start = self.meta.model_weight_count() + i * d;
        self.weights.get(start..start + d)
    }

    /// Sets [`PlannerMeta::demo_weight`] (packager), when the bundle keeps
    /// the demonstrations' vectors.
    pub fn set_demo_weight(&mut self, weight: f32) {
        if self.meta.demo_vectors && weight.is_finite() {
            self.meta.demo_weight = weight.max(0.0);
        }
    }

    /// `preds` rescored by each template's nearest demonstration to the
    /// question vector `question` ([`PlannerMeta::demo_weight`]), best
    /// first and renormalised. Unchanged when the weight is 0 or the bundle
    /// keeps no demonstration vectors.
    pub fn by_nearest_demo(&self, preds: Vec<Prediction>, question: &[f32]) -> Vec<Prediction> {
        let weight = self.meta.demo_weight;
        if weight <= 0.0 || !self.meta.demo_vectors || preds.is_empty() {
            return preds;
        }
        let mut nearest = vec![-1.0f32; self.meta.templates.len()];
        for (i, demo) in self.meta.demos.iter().enumerate() {
            let (Some(v), Some(best)) = (self.demo_vector(i), nearest.get_mut(demo.class)) else {
                continue;
            };
            let cos: f32 = v.iter().zip(question).map(|(a, b)| a * b).sum();
            *best = best.max(cos);
        }
        let mut scored: Vec<(f32, Prediction)> = preds
            .into_iter()
            .map(|pr| {
                let cos = nearest.get(pr.class).copied().unwrap_or(-1.0);
                (pr.probability.max(1e-12).ln() + weight * cos, pr)
            })
            .collect();
        let top = scored.iter().map(|s| s.0).fold(f32::MIN, f32::max);
        let total: f32 = scored.iter().map(|s| (s.0 - top).exp()).sum();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .map(|(score, pr)| Prediction {
                probability: (score - top).exp() / total,
                ..pr
            })
            .collect()
    }

    /// Row `class` of the block that starts at row `first`.
    fn row(&self, first: usize, class: usize) -> &[f32] {
        let d = self.meta.features.dim() + 1;
        &self.weights[(first + class) * d..(first + class + 1) * d]
    }

    fn logits(&self, first: usize, classes: usize, x: &Features) -> Vec<f32> {
        let d = self.meta.features.dim();
        (0..classes)
            .map(|c| {
                let row = self.row(first, c);
                x.dot(&row[..d]) + row[d]
            })
            .collect()
    }

    /// Class probabilities by the template classifier alone, best first.
    pub fn predict(&self, x: &Features) -> Vec<Prediction> {
        self.predict_with(x, &[])
    }

    /// Class probabilities, best first: the template classifier on `x`
    /// times each head on its window's features (`heads[i]` for
    /// `meta.heads[i]`; heads without features are left out), raised to the
    /// head's weight and normalised.
    pub fn predict_with(&self, x: &Features, heads: &[Features]) -> Vec<Prediction> {
        let templates = &self.meta.templates;
        let mut logits = self.logits(0, templates.len(), x);
        let mut first = templates.len();
        for (head, hx) in self.meta.heads.iter().zip(heads) {
            let probs = softmax(&self.logits(first, head.labels.len(), hx));
            first += head.labels.len();
            for (l, t) in logits.iter_mut().zip(templates) {
                let p = head
                    .kind
                    .label(t)
                    .and_then(|r| head.labels.iter().position(|x| x == r))
                    .map_or(0.0, |i| probs[i]);
                *l += head.weight * p.max(1e-6).ln();
            }
        }
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

impl PlannerMeta {
    /// A meta with `templates` over `features` and nothing else (tests).
    #[cfg(test)]
    pub(crate) fn bare(features: FeatureSpec, templates: &[&str]) -> PlannerMeta {
        PlannerMeta {
            format: FORMAT,
            features,
            templates: templates.iter().map(|t| Template(t.to_string())).collect(),
            answer_threshold: 0.5,
            keep_anchors: vec![],
            demos: vec![],
            demo_vectors: false,
            demo_weight: 0.0,
            partial_hops: Vec::new(),
            heads: vec![],
            window_vectors: WindowVectors::Alone,
            encoder: None,
            trained_on: templates.len(),
            heldout_accuracy: None,
        }
    }

    /// Floats in `planner.weights`: the templates' rows and the heads'.
    pub fn weight_count(&self) -> usize {
        self.model_weight_count() + self.demo_vector_count()
    }

    /// Floats of the templates' and heads' rows.
    fn model_weight_count(&self) -> usize {
        let rows = self.templates.len() + self.heads.iter().map(|h| h.labels.len()).sum::<usize>();
        rows * (self.features.dim() + 1)
    }

    /// Floats of the demonstrations' vectors.
    fn demo_vector_count(&self) -> usize {
        if self.demo_vectors {
            self.demos.len() * self.features.embed_dim
        } else {
            0
        }
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
        let meta = PlannerMeta::bare(spec, &["{topic} -> a", "{topic} -> b"]);
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

    /// The planner above with an answer head over relations a and b that
    /// likes b when dense[1] is set.
    fn with_head(weight: f32) -> LearnedPlanner {
        let p = planner();
        let mut meta = p.meta.clone();
        meta.heads = vec![HeadMeta {
            kind: super::super::heads::HeadKind::Answer,
            labels: vec!["a".into(), "b".into()],
            weight,
            heldout_accuracy: None,
        }];
        let mut w = p.weights.clone();
        w.extend([0.0; 6]);
        w.extend([0.0, 6.0, 0.0, 0.0, 0.0, 0.0]);
        LearnedPlanner::new(meta, w).expect("valid")
    }

    #[test]
    fn heads_reweigh_the_templates() {
        let x = Features {
            dense: vec![0.5, 0.0],
            sparse: vec![],
        };
        let head_x = Features {
            dense: vec![0.0, 1.0],
            sparse: vec![],
        };
        let p = with_head(1.0);
        assert_eq!(p.predict(&x)[0].class, 0, "the templates alone prefer a");
        let both = p.predict_with(&x, std::slice::from_ref(&head_x));
        assert_eq!(both[0].class, 1, "the head's preference for b wins");
        let sum: f32 = both.iter().map(|p| p.probability).sum();
        assert!((sum - 1.0).abs() < 1e-5);
        assert_eq!(
            with_head(0.0).predict_with(&x, &[head_x])[0].class,
            0,
            "a head of weight 0 changes nothing"
        );
        let (m, w) = p.to_sections();
        let q = LearnedPlanner::from_sections(&m, &w).expect("round trip with a head");
        assert_eq!(q.meta.heads, p.meta.heads);
        assert!(matches!(
            LearnedPlanner::from_sections(&m, &w[..w.len() - 4]),
            Err(PlannerError::Weights { .. })
        ));
        let mut bad = p.meta.clone();
        bad.heads[0].weight = f32::NAN;
        assert!(matches!(
            LearnedPlanner::new(bad, p.weights.clone()),
            Err(PlannerError::Meta(_))
        ));
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

    #[test]
    fn window_vectors_round_trip_and_default_to_alone() {
        let p = with_head(1.0);
        let (m, w) = p.to_sections();
        let meta: serde_json::Value = serde_json::from_slice(&m).expect("json");
        assert!(meta.get("window_vectors").is_none(), "alone is left out");
        let q = LearnedPlanner::from_sections(&m, &w).expect("round trip");
        assert_eq!(q.meta.window_vectors, WindowVectors::Alone);

        let mut pooled = p.clone();
        pooled.meta.window_vectors = WindowVectors::Pooled;
        let (m, w) = pooled.to_sections();
        let q = LearnedPlanner::from_sections(&m, &w).expect("round trip");
        assert_eq!(q.meta.window_vectors, WindowVectors::Pooled);

        let mut meta: serde_json::Value = serde_json::from_slice(&m).expect("json");
        meta["window_vectors"] = "sideways".into();
        let bad = serde_json::to_vec(&meta).expect("json");
        let err = LearnedPlanner::from_sections(&bad, &w)
            .expect_err("an unknown kind")
            .to_string();
        assert!(err.contains("planner.meta is invalid"), "{err}");
        assert!(err.contains("sideways"), "{err}");
    }
}
