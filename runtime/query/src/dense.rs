//! Dense entity linking: a sentence encoder (an ONNX model run with `tract`,
//! WordPiece tokenization with `tokenizers`) and the bundle's nearest-neighbour
//! index of entity-name embeddings.
//!
//! Embeddings are the mean of the encoder's last hidden state over the
//! attention mask, L2-normalized (the sentence-transformers recipe for
//! all-MiniLM-L6-v2). The index stores one vector per entity, in entity-id
//! order, each component quantized to `i8` as `round(x * 127)`; the search is
//! brute force over all of them. For unit vectors `d² = 2 - 2·cos`, and the
//! candidates' probabilities follow ULTRAG's Eq. 1 (see [`eq1`]).
//!
//! Built only with the `dense` cargo feature.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokenizers::{Tokenizer, TruncationParams};
use tract_onnx::prelude::*;

use crate::link::SIGMA;

/// Longest tokenized text (special tokens included); entity names and
/// mentions are far shorter.
pub const MAX_TOKENS: usize = 64;

/// Texts run through the model at once.
pub const BATCH: usize = 32;

/// Token sequences are padded to the first of these lengths that holds them,
/// and the model is optimized once per length used. tract 0.23 computes a
/// wrong attention-mask shape for exports such as all-MiniLM-L6-v2's when
/// the sequence length is symbolic, so it must be concrete.
pub const SEQ_BUCKETS: [usize; 3] = [16, 32, MAX_TOKENS];

/// The quantization the packager writes and this runtime reads.
pub const QUANTIZATION: &str = "i8-round-127";

#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    #[error("the encoder model cannot be loaded or run: {0}")]
    Model(String),
    #[error("the tokenizer cannot be loaded or run: {0}")]
    Tokenizer(String),
    #[error("the dense index is invalid: {0}")]
    Index(String),
}

/// The `kg.dense.meta` section (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseMeta {
    /// The encoder that produced the vectors.
    pub model: String,
    /// Components per vector.
    pub dim: usize,
    /// Vectors, one per entity.
    pub count: u64,
    /// Always [`QUANTIZATION`].
    pub quantization: String,
}

impl DenseMeta {
    pub fn from_json(bytes: &[u8]) -> Result<DenseMeta, DenseError> {
        serde_json::from_slice(bytes).map_err(|e| DenseError::Index(format!("meta: {e}")))
    }

    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A sentence encoder: tokenizer + ONNX model.
pub struct Encoder {
    /// The parsed model, before shapes are fixed.
    model: InferenceModel,
    /// Optimized plans by padded sequence length.
    plans: Mutex<Vec<(usize, Arc<TypedRunnableModel>)>>,
    tokenizer: Tokenizer,
    /// Model input positions of (input_ids, attention_mask, token_type_ids).
    inputs: [Option<usize>; 3],
    opset: u32,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("opset", &self.opset)
            .finish_non_exhaustive()
    }
}

fn model_err(e: impl std::fmt::Display) -> DenseError {
    DenseError::Model(format!("{e:#}"))
}

fn tok_err(e: impl std::fmt::Display) -> DenseError {
    DenseError::Tokenizer(e.to_string())
}

impl Encoder {
    /// Loads an ONNX model (BERT-style inputs `input_ids`, `attention_mask`,
    /// optionally `token_type_ids`, all int64 `[batch, sequence]`; first
    /// output `[batch, sequence, dim]`) and a `tokenizer.json`.
    pub fn from_bytes(onnx: &[u8], tokenizer_json: &[u8]) -> Result<Encoder, DenseError> {
        let mut tokenizer = Tokenizer::from_bytes(tokenizer_json).map_err(tok_err)?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(tok_err)?;
        // Padding is done here, to a bucket length (see [`SEQ_BUCKETS`]).
        tokenizer.with_padding(None);

        // Exporters record intermediate shapes (`value_info`) that are not
        // always right (torch's attention-mask broadcast is one); tract
        // infers them itself.
        let framework = tract_onnx::onnx().with_ignore_value_info(true);
        let proto = framework
            .proto_model_for_read(&mut Cursor::new(onnx))
            .map_err(model_err)?;
        let opset = proto
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
            .map(|o| o.version.max(0) as u32)
            .unwrap_or(0);
        let model = framework.model_for_proto_model(&proto).map_err(model_err)?;
        let mut inputs = [None; 3];
        for (pos, outlet) in model.input_outlets().map_err(model_err)?.iter().enumerate() {
            let name = model.node(outlet.node).name.as_str();
            let slot = match name {
                "input_ids" => 0,
                "attention_mask" => 1,
                "token_type_ids" => 2,
                other => {
                    return Err(DenseError::Model(format!(
                        "unexpected model input `{other}`"
                    )))
                }
            };
            inputs[slot] = Some(pos);
        }
        if inputs[0].is_none() || inputs[1].is_none() {
            return Err(DenseError::Model(
                "the model needs inputs `input_ids` and `attention_mask`".into(),
            ));
        }
        let encoder = Encoder {
            model,
            plans: Mutex::new(Vec::new()),
            tokenizer,
            inputs,
            opset,
        };
        // Names and mentions nearly always fit the first bucket: build its
        // plan now, so that a load error shows here and not on first use.
        encoder.plan(SEQ_BUCKETS[0])?;
        Ok(encoder)
    }

    /// The plan for inputs of `seq` tokens (a bucket length), built on first use.
    fn plan(&self, seq: usize) -> Result<Arc<TypedRunnableModel>, DenseError> {
        let mut plans = self
            .plans
            .lock()
            .map_err(|_| DenseError::Model("a previous model build panicked".into()))?;
        if let Some((_, p)) = plans.iter().find(|(s, _)| *s == seq) {
            return Ok(p.clone());
        }
        let mut model = self.model.clone();
        let batch = model.symbols.sym("batch");
        for pos in self.inputs.iter().flatten() {
            model
                .set_input_fact(*pos, i64::fact([batch.to_dim(), seq.to_dim()]).into())
                .map_err(model_err)?;
        }
        let plan = model
            .into_optimized()
            .map_err(model_err)?
            .into_runnable()
            .map_err(model_err)?;
        plans.push((seq, plan.clone()));
        Ok(plan)
    }

    /// The model's default-domain ONNX opset.
    pub fn opset(&self) -> u32 {
        self.opset
    }

    /// Unit-length embeddings of `texts`, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, DenseError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.embed_batch(chunk)?);
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, DenseError> {
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
            .ok_or_else(|| DenseError::Tokenizer(format!("{longest} tokens after truncation")))?;
        let plan = self.plan(seq)?;
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
        let tensor = |v: Vec<i64>| -> Result<TValue, DenseError> {
            Ok(tract_ndarray::Array2::from_shape_vec((batch, seq), v)
                .map_err(model_err)?
                .into_tensor()
                .into_tvalue())
        };
        let mut values: Vec<Option<TValue>> = vec![None; 3];
        let given = [tensor(ids)?, tensor(mask.clone())?, tensor(types)?];
        for (slot, value) in given.into_iter().enumerate() {
            if let Some(pos) = self.inputs[slot] {
                values[pos] = Some(value);
            }
        }
        let inputs: TVec<TValue> = values.into_iter().flatten().collect();
        let outputs = plan.run(inputs).map_err(model_err)?;
        let hidden = outputs
            .first()
            .ok_or_else(|| DenseError::Model("the model has no output".into()))?
            .to_plain_array_view::<f32>()
            .map_err(model_err)?;
        let shape = hidden.shape();
        if shape.len() != 3 || shape[0] != batch || shape[1] != seq {
            return Err(DenseError::Model(format!(
                "expected an output of shape [{batch}, {seq}, dim], got {shape:?}"
            )));
        }
        let dim = shape[2];
        let mut result = Vec::with_capacity(batch);
        for b in 0..batch {
            let mut v = vec![0f32; dim];
            let mut count = 0f32;
            for t in 0..seq {
                if mask[b * seq + t] == 0 {
                    continue;
                }
                count += 1.0;
                for (d, x) in v.iter_mut().enumerate() {
                    *x += hidden[[b, t, d]];
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

/// Scales `v` to unit length (leaves a zero vector as it is).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Quantizes unit vectors for the `kg.dense.vectors` section: `round(x * 127)`
/// as `i8`, concatenated.
pub fn quantize(vectors: &[Vec<f32>]) -> Vec<u8> {
    vectors
        .iter()
        .flatten()
        .map(|&x| (x * 127.0).round().clamp(-127.0, 127.0) as i8 as u8)
        .collect()
}

/// ULTRAG Eq. 1: `p_j = exp(-d_j² / 2σ²) / Σ_k exp(-d_k² / 2σ²)` with
/// `σ =` [`SIGMA`], computed as a numerically stable softmax.
pub fn eq1(distances: &[f32]) -> Vec<f32> {
    let logit = |d: f32| -(d * d) / (2.0 * SIGMA * SIGMA);
    let top = distances
        .iter()
        .map(|&d| logit(d))
        .fold(f32::NEG_INFINITY, f32::max);
    let w: Vec<f32> = distances.iter().map(|&d| (logit(d) - top).exp()).collect();
    let total: f32 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

/// The entity-name vectors of a bundle (`kg.dense.meta` + `kg.dense.vectors`).
#[derive(Clone, Copy)]
pub struct DenseIndex<'a> {
    dim: usize,
    vectors: &'a [u8],
}

impl<'a> DenseIndex<'a> {
    /// Checks the meta section against the vectors and the entity count.
    pub fn new(meta: &[u8], vectors: &'a [u8], entities: usize) -> Result<Self, DenseError> {
        let meta = DenseMeta::from_json(meta)?;
        if meta.quantization != QUANTIZATION {
            return Err(DenseError::Index(format!(
                "unknown quantization `{}` (this runtime reads `{QUANTIZATION}`)",
                meta.quantization
            )));
        }
        if meta.dim == 0 || meta.count != entities as u64 {
            return Err(DenseError::Index(format!(
                "{} vectors of dimension {} for {entities} entities",
                meta.count, meta.dim
            )));
        }
        if Some(vectors.len()) != entities.checked_mul(meta.dim) {
            return Err(DenseError::Index(format!(
                "{} bytes of vectors, expected {entities} × {}",
                vectors.len(),
                meta.dim
            )));
        }
        Ok(DenseIndex {
            dim: meta.dim,
            vectors,
        })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.vectors.len() / self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cosine similarity of `query` to `entity`'s vector (dequantized).
    pub fn cosine(&self, query: &[f32], entity: u32) -> Option<f32> {
        if query.len() != self.dim {
            return None;
        }
        let start = (entity as usize).checked_mul(self.dim)?;
        let v = self.vectors.get(start..start + self.dim)?;
        let (mut dot, mut norm, mut qn) = (0f32, 0f32, 0f32);
        for (&q, &b) in query.iter().zip(v) {
            let x = f32::from(b as i8);
            dot += q * x;
            norm += x * x;
            qn += q * q;
        }
        (norm > 0.0 && qn > 0.0).then(|| dot / (norm.sqrt() * qn.sqrt()))
    }

    /// The `k` entities nearest to the unit vector `query`, nearest first, with
    /// their Euclidean distance `sqrt(2 - 2·cos)` (the stored vectors are
    /// dequantized and re-normalized for the cosine).
    pub fn nearest(&self, query: &[f32], k: usize) -> Vec<(u32, f32)> {
        if query.len() != self.dim || k == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(u32, f32)> = self
            .vectors
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, v)| {
                let (mut dot, mut norm) = (0f32, 0f32);
                for (&q, &b) in query.iter().zip(v) {
                    let x = f32::from(b as i8);
                    dot += q * x;
                    norm += x * x;
                }
                let cos = if norm > 0.0 { dot / norm.sqrt() } else { 0.0 };
                (i as u32, (2.0 - 2.0 * cos).max(0.0).sqrt())
            })
            .collect();
        let by = |a: &(u32, f32), b: &(u32, f32)| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0));
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, by);
            scored.truncate(k);
        }
        scored.sort_by(by);
        scored
    }
}

/// What the dense stage of linking needs: the index and the encoder.
#[derive(Clone, Copy)]
pub struct Dense<'a> {
    pub index: DenseIndex<'a>,
    pub encoder: &'a Encoder,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq1_on_hand_computed_distances() {
        // d = 0, 0.1, 0.2: logits 0, -0.5, -2.
        let p = eq1(&[0.0, 0.1, 0.2]);
        let z = 1.0 + (-0.5f32).exp() + (-2.0f32).exp();
        let want = [1.0 / z, (-0.5f32).exp() / z, (-2.0f32).exp() / z];
        for (a, b) in p.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{p:?} vs {want:?}");
        }
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        // Equal distances tie; a large common offset cancels out.
        assert_eq!(eq1(&[1.3, 1.3]), vec![0.5, 0.5]);
    }

    #[test]
    fn index_search() {
        let vs = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.6, 0.8]];
        let bytes = quantize(&vs);
        let meta = DenseMeta {
            model: "t".into(),
            dim: 2,
            count: 3,
            quantization: QUANTIZATION.into(),
        }
        .to_json();
        let index = DenseIndex::new(&meta, &bytes, 3).unwrap();
        let hits = index.nearest(&[0.0, 1.0], 2);
        assert_eq!(hits[0].0, 1);
        assert!(hits[0].1 < 1e-3);
        assert_eq!(hits[1].0, 2);
        // d² = 2 - 2·0.8 = 0.4
        assert!((hits[1].1 * hits[1].1 - 0.4).abs() < 1e-2);
        assert!(DenseIndex::new(&meta, &bytes, 4).is_err());
        assert!(DenseIndex::new(&meta, &bytes[1..], 3).is_err());
    }
}
