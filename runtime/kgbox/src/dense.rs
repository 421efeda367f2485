//! The served bundle's dense entity linking: the sentence encoder it carries
//! (`model.encoder.*`) and its index of entity-name vectors (`kg.dense.*`).
//!
//! The encoder is loaded once (in `serve`, at startup; in `kgbox link`, per
//! run). Without the `dense` cargo feature no encoder is ever loaded and
//! linking stays lexical.

use kgbox_bundle::Kg;
use kgbox_query::link::{LinkOptions, Mention};

use crate::loaded::LoadedBundle;

#[cfg(feature = "dense")]
pub use kgbox_neural::Encoder;

/// Stands in for the encoder in builds without the `dense` feature.
#[cfg(not(feature = "dense"))]
#[derive(Debug)]
pub enum Encoder {}

/// Whether the bundle carries an encoder.
pub fn has_encoder(bundle: &LoadedBundle) -> bool {
    bundle
        .section(kgbox_bundle::sections::ENCODER_ONNX)
        .is_some()
}

/// Loads the bundle's encoder on the configured engine (under `native`: ONNX
/// Runtime when built and its library loads, else tract) and checks its
/// dense index; `Ok(None)` when the bundle has none (or this build has no
/// `dense` feature).
#[cfg(feature = "dense")]
pub fn load_encoder(
    bundle: &LoadedBundle,
    cfg: &crate::config::ExecutorConfig,
) -> Result<Option<Encoder>, String> {
    use kgbox_bundle::sections as s;
    let Some(onnx) = bundle.section(s::ENCODER_ONNX) else {
        return Ok(None);
    };
    let tokenizer = bundle.section(s::ENCODER_TOKENIZER).ok_or_else(|| {
        format!(
            "the bundle has {} but no {}",
            s::ENCODER_ONNX,
            s::ENCODER_TOKENIZER
        )
    })?;
    let kg = bundle.kg().map_err(|e| e.to_string())?;
    index(bundle, &kg)?
        .ok_or_else(|| format!("the bundle has an encoder but no {}", s::DENSE_VECTORS))?;
    let mut encoder =
        Encoder::load(cfg.engine, cfg.device, onnx, tokenizer).map_err(|e| e.to_string())?;
    encoder.set_cache(cfg.encoder_cache);
    Ok(Some(encoder))
}

#[cfg(not(feature = "dense"))]
pub fn load_encoder(
    _bundle: &LoadedBundle,
    _cfg: &crate::config::ExecutorConfig,
) -> Result<Option<Encoder>, String> {
    Ok(None)
}

#[cfg(feature = "dense")]
fn index<'a>(
    bundle: &'a LoadedBundle,
    kg: &Kg<'_>,
) -> Result<Option<kgbox_query::dense::DenseIndex<'a>>, String> {
    use kgbox_bundle::sections as s;
    match (
        bundle.section(s::DENSE_META),
        bundle.section(s::DENSE_VECTORS),
    ) {
        (Some(meta), Some(vectors)) => {
            kgbox_query::dense::DenseIndex::new(meta, vectors, kg.entity_count())
                .map(Some)
                .map_err(|e| e.to_string())
        }
        _ => Ok(None),
    }
}

/// Links `text`, with the dense stage when `encoder` is given (see
/// [`kgbox_query::link::link_text_dense`]).
pub fn link_text(
    bundle: &LoadedBundle,
    kg: &Kg<'_>,
    encoder: Option<&Encoder>,
    text: &str,
    opts: &LinkOptions,
) -> Result<Vec<Mention>, String> {
    #[cfg(feature = "dense")]
    if let Some(encoder) = encoder {
        let dense = index(bundle, kg)?.map(|index| kgbox_query::dense::Dense { index, encoder });
        return kgbox_query::link::link_text_dense(kg, dense.as_ref(), text, opts)
            .map_err(|e| e.to_string());
    }
    let _ = (bundle, encoder);
    Ok(kgbox_query::link::link_text(kg, text, opts))
}

/// Cosine similarity of a unit question vector to an entity's name vector
/// (the bundle's `kg.dense.*`), for the reranker; `None` without them.
#[cfg(feature = "dense")]
pub fn name_similarity<'a>(
    bundle: &'a LoadedBundle,
    kg: &Kg<'_>,
) -> Option<impl Fn(&[f32], u32) -> Option<f32> + 'a> {
    let index = index(bundle, kg).ok().flatten()?;
    Some(move |q: &[f32], entity: u32| index.cosine(q, entity))
}

#[cfg(not(feature = "dense"))]
pub fn name_similarity<'a>(
    _bundle: &'a LoadedBundle,
    _kg: &Kg<'_>,
) -> Option<fn(&[f32], u32) -> Option<f32>> {
    None
}
