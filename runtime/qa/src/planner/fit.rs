//! The optimiser the planner's classifiers share (the template classifier,
//! [`super::train`], and the relation heads, [`super::train_heads`]):
//! softmax regression fitted with AdamW, scored on held-out examples, and
//! the encoder run once per distinct text.

use std::collections::HashMap;

use super::features::{check_dim, embed_all, FeatureSpec, Features};
use super::heads::{check_pooled, pooled_spans};
use super::learned::softmax;
use kgbox_query::dense::TextEncoder;

/// Knobs of the fit.
#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    pub epochs: usize,
    pub batch: usize,
    pub learning_rate: f32,
    pub weight_decay: f32,
    /// Optimizer steps at least (small example sets get more epochs, up to 400).
    pub min_steps: usize,
    /// One example in this many is held out for the accuracy report.
    pub holdout_every: u64,
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: 12,
            batch: 64,
            learning_rate: 0.01,
            weight_decay: 1e-4,
            min_steps: 3000,
            holdout_every: 10,
            seed: 0x006b_6762_6f78,
        }
    }
}

/// Fits `[classes][dim + 1]` weights with AdamW on softmax cross-entropy.
pub(super) fn fit(
    xs: &[&Features],
    ys: &[usize],
    classes: usize,
    dim: usize,
    opts: &TrainOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Vec<f32> {
    let d1 = dim + 1;
    let n_params = classes * d1;
    let mut w = vec![0.0f32; n_params];
    let mut m = vec![0.0f32; n_params];
    let mut v = vec![0.0f32; n_params];
    let mut grad = vec![0.0f32; n_params];
    let mut order: Vec<usize> = (0..xs.len()).collect();
    let mut rng = crate::rng::SplitMix64::new(opts.seed);
    let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
    let mut step = 0i32;
    let batches_per_epoch = xs.len().div_ceil(opts.batch.max(1)).max(1);
    let epochs = opts
        .epochs
        .max(opts.min_steps.div_ceil(batches_per_epoch).min(400));
    let total = epochs * batches_per_epoch;
    for epoch in 0..epochs {
        rng.shuffle(&mut order);
        for (bi, batch) in order.chunks(opts.batch.max(1)).enumerate() {
            grad.iter_mut().for_each(|g| *g = 0.0);
            let scale = 1.0 / batch.len() as f32;
            for &i in batch {
                let x = xs[i];
                let logits: Vec<f32> = (0..classes)
                    .map(|c| {
                        let row = &w[c * d1..(c + 1) * d1];
                        x.dot(&row[..dim]) + row[dim]
                    })
                    .collect();
                let p = softmax(&logits);
                for (c, pc) in p.iter().enumerate() {
                    let g = (pc - if c == ys[i] { 1.0 } else { 0.0 }) * scale;
                    if g.abs() < 1e-7 {
                        continue;
                    }
                    let row = &mut grad[c * d1..(c + 1) * d1];
                    x.add_to(&mut row[..dim], g);
                    row[dim] += g;
                }
            }
            step += 1;
            // Linear decay to a tenth of the rate over the run.
            let progress_frac = (epoch * batches_per_epoch + bi) as f32 / total.max(1) as f32;
            let lr = opts.learning_rate * (1.0 - 0.9 * progress_frac);
            let bc1 = 1.0 - b1.powi(step);
            let bc2 = 1.0 - b2.powi(step);
            for k in 0..n_params {
                let g = grad[k];
                m[k] = b1 * m[k] + (1.0 - b1) * g;
                v[k] = b2 * v[k] + (1.0 - b2) * g * g;
                let update = (m[k] / bc1) / ((v[k] / bc2).sqrt() + eps);
                w[k] -= lr * (update + opts.weight_decay * w[k]);
            }
            progress(epoch * batches_per_epoch + bi + 1, total);
        }
    }
    w
}

/// The encoder's vector of each distinct text (none without an encoder).
pub(super) fn embed_distinct(
    texts: &[&str],
    embedder: Option<&dyn TextEncoder>,
    spec: &FeatureSpec,
    stage: &str,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<HashMap<String, Vec<f32>>, String> {
    each_distinct(texts, stage, progress, |chunk| {
        embed_all(embedder, chunk, spec)
    })
}

/// [`embed_distinct`] for [`super::heads::WindowVectors::Pooled`]: each
/// distinct masked question's vector, then its head windows' (in
/// [`super::heads::HeadKind::ALL`] order), from one pass of the encoder per text.
pub(super) fn embed_pooled(
    texts: &[&str],
    embedder: &dyn TextEncoder,
    spec: &FeatureSpec,
    stage: &str,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<HashMap<String, Vec<Vec<f32>>>, String> {
    check_dim(embedder, spec)?;
    each_distinct(texts, stage, progress, |chunk| {
        let items: Vec<(&str, Vec<std::ops::Range<usize>>)> =
            chunk.iter().map(|t| (*t, pooled_spans(t))).collect();
        let vectors = embedder.embed_spans(&items).map_err(|e| e.to_string())?;
        check_pooled(&vectors, chunk.len())?;
        Ok(vectors.into_iter().map(Some).collect())
    })
}

/// `embed` of each distinct text of `texts`, in chunks, with progress;
/// texts it gives `None` are left out.
fn each_distinct<T>(
    texts: &[&str],
    stage: &str,
    progress: &mut dyn FnMut(&str, usize, usize),
    mut embed: impl FnMut(&[&str]) -> Result<Vec<Option<T>>, String>,
) -> Result<HashMap<String, T>, String> {
    let mut distinct: Vec<&str> = texts.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let mut embedded = HashMap::with_capacity(distinct.len());
    const CHUNK: usize = 256;
    for (ci, chunk) in distinct.chunks(CHUNK).enumerate() {
        for (text, e) in chunk.iter().zip(embed(chunk)?) {
            if let Some(e) = e {
                embedded.insert(text.to_string(), e);
            }
        }
        progress(
            stage,
            (ci * CHUNK + chunk.len()).min(distinct.len()),
            distinct.len(),
        );
    }
    Ok(embedded)
}

/// Fits `[classes][dim + 1]` weights on the examples not `held` and scores
/// the held ones (when there are at least 10), then fits on all of them.
/// Progress stages: `{stage}-holdout`, then `stage`.
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_scored(
    xs: &[&Features],
    ys: &[usize],
    classes: usize,
    dim: usize,
    held: &[bool],
    opts: &TrainOptions,
    stage: &str,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> (Vec<f32>, Option<f32>) {
    let heldout = held.iter().filter(|h| **h).count();
    let mut accuracy = None;
    if heldout >= 10 && heldout < xs.len() {
        let (mut train_x, mut train_y) = (Vec::new(), Vec::new());
        for i in 0..xs.len() {
            if !held[i] {
                train_x.push(xs[i]);
                train_y.push(ys[i]);
            }
        }
        let hold_stage = format!("{stage}-holdout");
        let w = fit(&train_x, &train_y, classes, dim, opts, &mut |d, t| {
            progress(&hold_stage, d, t)
        });
        let right = (0..xs.len())
            .filter(|&i| held[i] && argmax(&w, xs[i], classes, dim) == ys[i])
            .count();
        accuracy = Some(right as f32 / heldout as f32);
    }
    let w = fit(xs, ys, classes, dim, opts, &mut |d, t| {
        progress(stage, d, t)
    });
    (w, accuracy)
}

fn argmax(w: &[f32], x: &Features, classes: usize, dim: usize) -> usize {
    let d1 = dim + 1;
    (0..classes)
        .map(|c| {
            let row = &w[c * d1..(c + 1) * d1];
            (c, x.dot(&row[..dim]) + row[dim])
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_separates_two_classes() {
        let xs: Vec<Features> = (0..40)
            .map(|i| Features {
                dense: vec![],
                sparse: vec![(if i % 2 == 0 { 0 } else { 1 }, 1.0)],
            })
            .collect();
        let refs: Vec<&Features> = xs.iter().collect();
        let ys: Vec<usize> = (0..40).map(|i| i % 2).collect();
        let opts = TrainOptions {
            epochs: 20,
            batch: 8,
            ..TrainOptions::default()
        };
        let w = fit(&refs, &ys, 2, 2, &opts, &mut |_, _| {});
        for (x, y) in xs.iter().zip(&ys) {
            assert_eq!(argmax(&w, x, 2, 2), *y);
        }
    }
}
