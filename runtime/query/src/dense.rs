//! The dense side of entity linking that needs no model: the bundle's
//! nearest-neighbour index of entity-name embeddings (`kg.dense.*`), its
//! quantization, and the [`TextEncoder`] trait through which linking and the
//! question-answering planners (`kgbox-qa`) get embeddings (the runtime
//! passes the bundle's sentence encoder, which `kgbox-neural` runs).
//!
//! Embeddings are unit vectors. The index stores one vector per entity, in
//! entity-id order, each component quantized to `i8` as `round(x * 127)`;
//! the search is brute force over all of them. For unit vectors
//! `d² = 2 - 2·cos`, and the candidates' probabilities follow ULTRAG's Eq. 1
//! (see [`crate::link::eq1`]).

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// The quantization the packager writes and this runtime reads.
pub const QUANTIZATION: &str = "i8-round-127";

/// What a [`TextEncoder`] fails with.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The encoder failed; its own message is shown as it is.
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// [`TextEncoder::embed_spans`] of an encoder that cannot pool spans.
    #[error("this encoder cannot pool spans of a text")]
    NoSpans,
}

impl EncodeError {
    /// An encoder's own error (or message).
    pub fn failed(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> EncodeError {
        EncodeError::Failed(e.into())
    }
}

/// A sentence encoder: unit-length embeddings of texts, in order. The
/// runtime passes the bundle's encoder (`model.encoder.*`).
pub trait TextEncoder: Send + Sync {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError>;

    /// Components per embedding.
    fn dim(&self) -> usize;

    /// For each `(text, spans)`: the whole text's vector, then one per span
    /// (byte ranges of the text) pooled from the same pass over the text
    /// (see `kgbox_neural::Encoder::embed_spans`). By default, an encoder
    /// cannot ([`EncodeError::NoSpans`]).
    fn embed_spans(
        &self,
        items: &[(&str, Vec<Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, EncodeError> {
        let _ = items;
        Err(EncodeError::NoSpans)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DenseError {
    /// The encoder failed (its own message).
    #[error(transparent)]
    Encoder(EncodeError),
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

/// Quantizes unit vectors for the `kg.dense.vectors` section: `round(x * 127)`
/// as `i8`, concatenated.
pub fn quantize(vectors: &[Vec<f32>]) -> Vec<u8> {
    vectors
        .iter()
        .flatten()
        .map(|&x| (x * 127.0).round().clamp(-127.0, 127.0) as i8 as u8)
        .collect()
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
    pub encoder: &'a dyn TextEncoder,
}

#[cfg(test)]
mod tests {
    use super::*;

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
