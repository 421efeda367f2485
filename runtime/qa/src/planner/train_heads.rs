//! Fitting the relation heads ([`super::heads`]) on the planner's examples:
//! the same features and optimiser as the template classifier, on each
//! head's window of the question, with the template's first or last
//! relation as the class.

use std::collections::HashMap;

use kgbox_bundle::Kg;

use super::features::{featurize, FeatureSpec, Features};
use super::fit::{embed_distinct, fit_scored, TrainOptions};
use super::heads::{HeadKind, HeadMeta};
use super::template::Template;
use kgbox_query::dense::TextEncoder;

/// The planner's examples as the heads see them (index `i` is one example).
pub(super) struct HeadExamples<'a> {
    /// Masked questions.
    pub masked: &'a [&'a str],
    /// Topic entities.
    pub entities: &'a [u32],
    /// The template classes and `ys[i]`, example `i`'s class.
    pub templates: &'a [Template],
    pub ys: &'a [usize],
    /// Examples scored, not fitted.
    pub held: &'a [bool],
}

/// Fits every head that has at least two labels; returns their metas and
/// their weights, in order, to follow the template classifier's (or the
/// encoder's error).
pub(super) fn train_heads(
    kg: &Kg<'_>,
    ex: &HeadExamples<'_>,
    embedder: Option<&dyn TextEncoder>,
    pooled: Option<&HashMap<String, Vec<Vec<f32>>>>,
    spec: &FeatureSpec,
    opts: &TrainOptions,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<(Vec<HeadMeta>, Vec<f32>), String> {
    let HeadExamples {
        masked,
        entities,
        templates,
        ys,
        held,
    } = *ex;
    let mut metas = Vec::new();
    let mut weights = Vec::new();
    for kind in HeadKind::ALL {
        let mut labels: Vec<&str> = templates.iter().filter_map(|t| kind.label(t)).collect();
        labels.sort_unstable();
        labels.dedup();
        if labels.len() < 2 {
            continue;
        }
        // The examples whose template has the head's relation, with its class.
        let mut rows: Vec<(usize, usize)> = Vec::new();
        for (i, &y) in ys.iter().enumerate() {
            let label = templates.get(y).and_then(|t| kind.label(t));
            if let Some(c) = label.and_then(|l| labels.iter().position(|x| *x == l)) {
                rows.push((i, c));
            }
        }
        let windows: Vec<String> = rows.iter().map(|&(i, _)| kind.window(masked[i])).collect();
        let features: Vec<Features> = match pooled {
            // The window's vector pooled from its question's pass.
            Some(pooled) => rows
                .iter()
                .zip(&windows)
                .map(|(&(i, _), w)| {
                    let e = pooled
                        .get(masked[i])
                        .and_then(|v| v.get(kind.slot()))
                        .map(Vec::as_slice);
                    featurize(kg, w, entities[i], e, spec)
                })
                .collect(),
            None => {
                let texts: Vec<&str> = windows.iter().map(String::as_str).collect();
                let stage = format!("embed {kind:?} head").to_lowercase();
                let embedded = embed_distinct(&texts, embedder, spec, &stage, progress)?;
                rows.iter()
                    .zip(&windows)
                    .map(|(&(i, _), w)| {
                        let e = embedded.get(w.as_str()).map(Vec::as_slice);
                        featurize(kg, w, entities[i], e, spec)
                    })
                    .collect()
            }
        };
        let stage = format!("{kind:?} head").to_lowercase();
        let xs: Vec<&Features> = features.iter().collect();
        let y: Vec<usize> = rows.iter().map(|&(_, c)| c).collect();
        let h: Vec<bool> = rows.iter().map(|&(i, _)| held[i]).collect();
        let (w, accuracy) = fit_scored(
            &xs,
            &y,
            labels.len(),
            spec.dim(),
            &h,
            opts,
            &stage,
            progress,
        );
        weights.extend(w);
        metas.push(HeadMeta {
            kind,
            labels: labels.into_iter().map(String::from).collect(),
            weight: kind.default_weight(),
            heldout_accuracy: accuracy,
        });
    }
    Ok((metas, weights))
}
