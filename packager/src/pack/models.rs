//! The model stages, each run only when its option is on: the sentence
//! encoder and the dense index of the entity names (`--embed`), the neural
//! query executor, given (`--ultra`) or trained here (`--train-executor`),
//! with its fusion fitted on the examples, the learned planner and the
//! answer reranker (`--reranker`).

use std::path::Path;

use anyhow::{Context, Result};
use kgbox_qa::planner::train::Example;

use super::bundle::Bundle;
use crate::embed::EmbedOptions;
use crate::planner::PlannerOptions;
use crate::section::SectionData;
use crate::train::TrainOptions;
use crate::ultra::UltraOptions;

/// `--embed`: the entity names embedded, and the encoder that did it.
pub(super) fn encoder(bundle: &mut Bundle, opts: &EmbedOptions, progress: bool) -> Result<()> {
    let names = entity_names(&bundle.sections)?;
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let embedded = crate::embed::embed(&names, opts, progress)?;
    bundle.add(embedded.sections, Some(embedded.model));
    Ok(())
}

/// The entity names of built sections, in id order.
fn entity_names(sections: &[(&'static str, SectionData)]) -> Result<Vec<String>> {
    let aligned = crate::graph::Aligned::new(sections)?;
    let get = |name: &str| {
        aligned
            .get(name)
            .with_context(|| format!("no section {name}"))
    };
    let offsets: Vec<usize> = get(kgbox_bundle::sections::ENTITY_OFFSETS)?
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()) as usize)
        .collect();
    let bytes = get(kgbox_bundle::sections::ENTITY_NAMES)?;
    offsets
        .windows(2)
        .map(|w| {
            let b = bytes
                .get(w[0]..w[1])
                .context("entity offsets out of range")?;
            Ok(String::from_utf8(b.to_vec())?)
        })
        .collect()
}

/// The neural executor's model: ULTRA as exported, given or trained here.
pub(super) struct Ultra {
    opts: UltraOptions,
    /// The record of a training run here (else read from beside the model).
    training: Option<serde_json::Value>,
}

impl Ultra {
    /// `--ultra`: a model trained elsewhere.
    pub(super) fn given(opts: UltraOptions) -> Ultra {
        Ultra {
            opts,
            training: None,
        }
    }
}

/// `--train-executor`: fine-tunes the executor on the graph and the
/// examples; the model it exports.
pub(super) fn train(
    bundle: &mut Bundle,
    opts: &TrainOptions,
    examples: &[Example],
) -> Result<Ultra> {
    let trained = crate::train::train(&bundle.sections, examples, opts, &mut bundle.notes)?;
    let mut ultra = UltraOptions::from_prefix(&trained.prefix);
    ultra.checkpoint = trained_checkpoint(&trained.record);
    Ok(Ultra {
        opts: ultra,
        training: Some(trained.record),
    })
}

/// The checkpoint name of a model trained here: the one it started from
/// (the record's `init`), marked `+trained`.
fn trained_checkpoint(record: &serde_json::Value) -> String {
    record.get("init").and_then(|v| v.as_str()).map_or_else(
        || "ultra".to_string(),
        |s| s.trim_end_matches(".pth").to_string(),
    ) + "+trained"
}

/// The neural executor's sections, and its fusion with the symbolic
/// executor fitted on the held-out examples with answers.
pub(super) fn executor(bundle: &mut Bundle, ultra: Ultra, examples: &[Example]) -> Result<()> {
    let mut packed = crate::ultra::sections(&bundle.sections, &ultra.opts)?;
    packed.model.training = match ultra.training {
        Some(t) => Some(t),
        None => crate::ultra::training_record(&ultra.opts)?,
    };
    bundle.add(packed.sections, Some(packed.model));
    if let Some(fitted) = crate::fusion::fit(&bundle.sections, examples)? {
        bundle.notes.push(fitted.report());
        crate::ultra::set_fusion(&mut bundle.sections, fitted.fusion)?;
    }
    Ok(())
}

/// The planner's sections: the zero-shot relation vectors, and the planner
/// trained on the examples (or on questions synthesised from the graph).
pub(super) fn planner(
    bundle: &mut Bundle,
    opts: &PlannerOptions,
    examples: &[Example],
    progress: bool,
) -> Result<()> {
    let planner = crate::planner::sections(&bundle.sections, opts, examples, progress)?;
    bundle.add(planner.sections, planner.model);
    bundle.notes.extend(planner.report);
    Ok(())
}

/// `--reranker PREFIX`: the answer reranker, checked against this build's
/// features.
pub(super) fn reranker(bundle: &mut Bundle, prefix: &Path) -> Result<()> {
    let reranker = crate::reranker::sections(prefix)?;
    bundle.add(reranker.sections, Some(reranker.model));
    bundle.notes.push(reranker.note);
    Ok(())
}
