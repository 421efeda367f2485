//! The learned planner's input: one vector per (masked question, topic
//! entity), made of three blocks, each L2-normalized on its own:
//!
//! 1. the sentence encoder's embedding of the masked question (when the
//!    bundle has an encoder; generalises to paraphrases);
//! 2. hashed word unigrams and bigrams of the masked question (cheap, exact
//!    about the words that tell question kinds apart);
//! 3. the topic entity's relation signature: one bucket per (relation,
//!    direction) the entity has edges of, so that "who wrote X" can tell a
//!    film from a book by what the graph knows of X.
//!
//! The packager computes the same features to train (`super::train`, feature
//! `train`);
//! both sides call [`featurize`].

use kgbox_bundle::Kg;
use serde::{Deserialize, Serialize};

#[cfg(feature = "train")]
use kgbox_query::dense::TextEncoder;

/// Sizes of the feature blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureSpec {
    /// Embedding components (0: no encoder).
    pub embed_dim: usize,
    /// Hash buckets for word n-grams.
    pub ngram_buckets: usize,
    /// Buckets for (relation, direction) pairs.
    pub signature_buckets: usize,
}

impl FeatureSpec {
    pub const DEFAULT_NGRAM_BUCKETS: usize = 4096;
    pub const DEFAULT_SIGNATURE_BUCKETS: usize = 512;

    pub fn new(embed_dim: usize) -> FeatureSpec {
        FeatureSpec {
            embed_dim,
            ngram_buckets: Self::DEFAULT_NGRAM_BUCKETS,
            signature_buckets: Self::DEFAULT_SIGNATURE_BUCKETS,
        }
    }

    /// Length of the whole vector.
    pub fn dim(&self) -> usize {
        self.embed_dim + self.ngram_buckets + self.signature_buckets
    }
}

/// A feature vector: a dense head (the embedding) and sparse rest.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Features {
    /// `embed_dim` components (empty when there is no encoder).
    pub dense: Vec<f32>,
    /// (index into the whole vector, value); indices >= `embed_dim`.
    pub sparse: Vec<(u32, f32)>,
}

impl Features {
    /// `w · x` for a row `w` of length `spec.dim()`.
    pub fn dot(&self, w: &[f32]) -> f32 {
        let mut s: f32 = self.dense.iter().zip(w).map(|(a, b)| a * b).sum();
        for &(i, v) in &self.sparse {
            s += w.get(i as usize).copied().unwrap_or(0.0) * v;
        }
        s
    }

    /// `w += alpha · x`.
    pub fn add_to(&self, w: &mut [f32], alpha: f32) {
        for (wi, x) in w.iter_mut().zip(&self.dense) {
            *wi += alpha * x;
        }
        for &(i, v) in &self.sparse {
            if let Some(wi) = w.get_mut(i as usize) {
                *wi += alpha * v;
            }
        }
    }
}

/// FNV-1a, 64 bit: stable across builds and platforms (train and serve agree).
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0x1f;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for b in p.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Words of a masked question: lowercase alphanumeric runs (the mask is kept
/// as one word).
pub fn words(masked: &str) -> Vec<String> {
    masked
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn ngram_indices(masked: &str, spec: &FeatureSpec) -> Vec<u32> {
    let ws = words(masked);
    let mut out = Vec::with_capacity(ws.len() * 2 + 2);
    let base = spec.embed_dim as u64;
    let n = spec.ngram_buckets.max(1) as u64;
    let mut prev = "<s>";
    for w in &ws {
        out.push((base + fnv1a(&["1", w]) % n) as u32);
        out.push((base + fnv1a(&["2", prev, w]) % n) as u32);
        prev = w;
    }
    out.push((base + fnv1a(&["2", prev, "</s>"]) % n) as u32);
    out
}

/// Bucket of (relation, direction): forward `2r`, inverse `2r + 1`.
fn signature_indices(kg: &Kg<'_>, entity: u32, spec: &FeatureSpec) -> Vec<u32> {
    let base = (spec.embed_dim + spec.ngram_buckets) as u64;
    let n = spec.signature_buckets.max(1) as u64;
    let mut out = Vec::new();
    let (out_rels, _) = kg.out.edges(entity);
    let (in_rels, _) = kg.inc.edges(entity);
    for (rels, dir) in [(out_rels, 0u64), (in_rels, 1u64)] {
        for &r in rels {
            out.push((base + (2 * u64::from(r) + dir) % n) as u32);
        }
    }
    // Presence, not edge counts: a prolific actor is still an actor.
    out.sort_unstable();
    out.dedup();
    out
}

/// Sorts, merges duplicates (summing) and scales to unit length.
fn unit_sparse(mut idx: Vec<u32>) -> Vec<(u32, f32)> {
    idx.sort_unstable();
    let mut out: Vec<(u32, f32)> = Vec::with_capacity(idx.len());
    for i in idx {
        match out.last_mut() {
            Some((j, v)) if *j == i => *v += 1.0,
            _ => out.push((i, 1.0)),
        }
    }
    let norm = out.iter().map(|(_, v)| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        for (_, v) in &mut out {
            *v /= norm;
        }
    }
    out
}

/// The feature vector of a masked question about `entity`. `embedding` is the
/// encoder's output for `masked` (required when `spec.embed_dim > 0`).
pub fn featurize(
    kg: &Kg<'_>,
    masked: &str,
    entity: u32,
    embedding: Option<&[f32]>,
    spec: &FeatureSpec,
) -> Features {
    let mut dense = vec![0.0; spec.embed_dim];
    if let Some(e) = embedding {
        for (d, x) in dense.iter_mut().zip(e) {
            *d = *x;
        }
    }
    let mut sparse = unit_sparse(ngram_indices(masked, spec));
    sparse.extend(unit_sparse(signature_indices(kg, entity, spec)));
    Features { dense, sparse }
}

/// Embeds masked questions with `embedder` when the spec wants embeddings.
#[cfg(feature = "train")]
pub fn embed_all(
    embedder: Option<&dyn TextEncoder>,
    masked: &[&str],
    spec: &FeatureSpec,
) -> Result<Vec<Option<Vec<f32>>>, String> {
    if spec.embed_dim == 0 {
        return Ok(vec![None; masked.len()]);
    }
    let embedder =
        embedder.ok_or_else(|| "the planner needs the bundle's sentence encoder".to_string())?;
    check_dim(embedder, spec)?;
    Ok(embedder
        .embed(masked)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(Some)
        .collect())
}

/// An error unless `embedder` gives the vectors `spec` was trained on.
#[cfg(feature = "train")]
pub fn check_dim(embedder: &dyn TextEncoder, spec: &FeatureSpec) -> Result<(), String> {
    if embedder.dim() != spec.embed_dim {
        return Err(format!(
            "the planner was trained on {}-dimensional embeddings, the encoder gives {}",
            spec.embed_dim,
            embedder.dim()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ngrams_are_stable_and_in_range() {
        let spec = FeatureSpec::new(8);
        let a = ngram_indices("who directed ENTITY", &spec);
        let b = ngram_indices("who   directed ENTITY", &spec);
        assert_eq!(a, b);
        assert_eq!(a.len(), 7, "3 unigrams, 3 bigrams, 1 end bigram");
        assert!(a.iter().all(|&i| (8..8 + 4096).contains(&(i as usize))));
        assert_ne!(a, ngram_indices("who wrote ENTITY", &spec));
        // Pinned: a change to the hashing would silently break every bundle.
        assert_eq!(fnv1a(&["1", "who"]), fnv1a(&["1", "who"]));
        assert_eq!(fnv1a(&["a"]), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn unit_sparse_merges_and_normalizes() {
        let v = unit_sparse(vec![5, 3, 5]);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, 3);
        let norm: f32 = v.iter().map(|(_, x)| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-6);
        assert!(v[1].1 > v[0].1);
    }

    #[test]
    fn dot_and_add_agree() {
        let f = Features {
            dense: vec![1.0, 2.0],
            sparse: vec![(3, 0.5)],
        };
        let mut w = vec![0.0; 4];
        f.add_to(&mut w, 2.0);
        assert_eq!(w, vec![2.0, 4.0, 0.0, 1.0]);
        assert!((f.dot(&w) - (2.0 + 8.0 + 0.5)).abs() < 1e-6);
    }
}
