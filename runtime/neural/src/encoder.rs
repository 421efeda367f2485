//! The sentence encoder that dense entity linking and the planners use: a
//! WordPiece tokenizer (`tokenizers`) and a BERT-style ONNX model run by an
//! [`Engine`] (tract by default, ONNX Runtime with the `ort` feature).
//!
//! Embeddings are the mean of the model's last hidden state over the
//! attention mask, L2-normalized (the sentence-transformers recipe for
//! all-MiniLM-L6-v2). Token sequences are padded to the first of
//! [`SEQ_BUCKETS`] that holds them: tract needs a concrete sequence length
//! (see [`engine::tract::TractEngine::for_tokens`]), and ONNX Runtime gets
//! the same padding so that both see the same inputs.

use kgbox_query::dense::{EncodeError, TextEncoder};
use tokenizers::{Tokenizer, TruncationParams};

use crate::engine::{self, Arg, Device, Engine, EngineKind};
use crate::NeuralError;

/// Longest tokenized text (special tokens included); entity names and
/// mentions are far shorter.
pub const MAX_TOKENS: usize = 64;

/// Texts run through the model at once.
pub const BATCH: usize = 32;

/// Token sequences are padded to the first of these lengths that holds them,
/// and tract optimizes the model once per length used.
pub const SEQ_BUCKETS: [usize; 3] = [16, 32, MAX_TOKENS];

/// The model inputs the encoder fills, by name; the first two are required.
const INPUTS: [&str; 3] = ["input_ids", "attention_mask", "token_type_ids"];

#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    #[error("the encoder model cannot be loaded or run: {0}")]
    Model(String),
    #[error("the tokenizer cannot be loaded or run: {0}")]
    Tokenizer(String),
}

fn model_err(e: NeuralError) -> EncoderError {
    EncoderError::Model(match e {
        NeuralError::Load(m) | NeuralError::Run(m) | NeuralError::Invalid(m) => m,
        other => other.to_string(),
    })
}

fn tok_err(e: impl std::fmt::Display) -> EncoderError {
    EncoderError::Tokenizer(e.to_string())
}

/// A sentence encoder: tokenizer + ONNX model on an engine.
pub struct Encoder {
    engine: Box<dyn Engine>,
    tokenizer: Tokenizer,
    /// Which of [`INPUTS`] the model takes.
    takes: [bool; 3],
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("engine", &self.engine.name())
            .field("device", &self.engine.device())
            .finish_non_exhaustive()
    }
}

impl Encoder {
    /// Loads an ONNX model (BERT-style inputs `input_ids`, `attention_mask`,
    /// optionally `token_type_ids`, all int64 `[batch, sequence]`; first
    /// output `[batch, sequence, dim]`) and a `tokenizer.json`, on tract.
    pub fn from_bytes(onnx: &[u8], tokenizer_json: &[u8]) -> Result<Encoder, EncoderError> {
        Encoder::load(EngineKind::Tract, Device::Cpu, onnx, tokenizer_json)
    }

    /// [`Encoder::from_bytes`] on the chosen engine.
    pub fn load(
        kind: EngineKind,
        device: Device,
        onnx: &[u8],
        tokenizer_json: &[u8],
    ) -> Result<Encoder, EncoderError> {
        let mut tokenizer = Tokenizer::from_bytes(tokenizer_json).map_err(tok_err)?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(tok_err)?;
        // Padding is done here, to a bucket length (see [`SEQ_BUCKETS`]).
        tokenizer.with_padding(None);

        // Names and mentions nearly always fit the first bucket: tract builds
        // its plan now, so that a load error shows here and not on first use.
        let engine = engine::load_tokens(kind, device, onnx, SEQ_BUCKETS[0]).map_err(model_err)?;
        let mut takes = [false; 3];
        for name in engine.inputs() {
            let slot = INPUTS
                .iter()
                .position(|i| i == name)
                .ok_or_else(|| EncoderError::Model(format!("unexpected model input `{name}`")))?;
            takes[slot] = true;
        }
        if !takes[0] || !takes[1] {
            return Err(EncoderError::Model(
                "the model needs inputs `input_ids` and `attention_mask`".into(),
            ));
        }
        Ok(Encoder {
            engine,
            tokenizer,
            takes,
        })
    }

    /// The engine that runs the model (`tract`, `ort`).
    pub fn engine(&self) -> &'static str {
        self.engine.name()
    }

    /// Unit-length embeddings of `texts`, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.embed_batch(chunk)?);
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(tok_err)?;
        let batch = encodings.len();
        let longest = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let seq = SEQ_BUCKETS
            .iter()
            .copied()
            .find(|&b| b >= longest)
            .ok_or_else(|| EncoderError::Tokenizer(format!("{longest} tokens after truncation")))?;
        let mut ids = Vec::with_capacity(batch * seq);
        let mut mask = Vec::with_capacity(batch * seq);
        let mut types = Vec::with_capacity(batch * seq);
        for e in &encodings {
            let pad = seq - e.len();
            ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
            mask.extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            types.extend(e.get_type_ids().iter().map(|&x| i64::from(x)));
            // Padding: id 0 (`[PAD]`), masked out.
            for v in [&mut ids, &mut mask, &mut types] {
                v.extend(std::iter::repeat_n(0, pad));
            }
        }
        let shape = [batch, seq];
        let values = [&ids, &mask, &types];
        let args: Vec<(&str, Arg<'_>)> = INPUTS
            .iter()
            .zip(values)
            .zip(self.takes)
            .filter(|(_, takes)| *takes)
            .map(|((name, v), _)| (*name, Arg::I64(&shape, v)))
            .collect();
        let (out_shape, hidden) = self.engine.run(&args).map_err(model_err)?;
        if out_shape.len() != 3 || out_shape[0] != batch || out_shape[1] != seq {
            return Err(EncoderError::Model(format!(
                "expected an output of shape [{batch}, {seq}, dim], got {out_shape:?}"
            )));
        }
        let dim = out_shape[2];
        let mut result = Vec::with_capacity(batch);
        for b in 0..batch {
            let mut v = vec![0f32; dim];
            let mut count = 0f32;
            for t in 0..seq {
                if mask[b * seq + t] == 0 {
                    continue;
                }
                count += 1.0;
                let row = &hidden[(b * seq + t) * dim..][..dim];
                for (x, h) in v.iter_mut().zip(row) {
                    *x += h;
                }
            }
            let count = count.max(1.0);
            v.iter_mut().for_each(|x| *x /= count);
            normalize(&mut v);
            result.push(v);
        }
        Ok(result)
    }
}

impl TextEncoder for Encoder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        Encoder::embed(self, texts).map_err(Into::into)
    }
}

/// Scales `v` to unit length (leaves a zero vector as it is).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}
