//! The sentence encoder that dense entity linking and the planners use: a
//! WordPiece tokenizer (`tokenizers`) and a BERT-style ONNX model run by an
//! [`Engine`] (tract by default, ONNX Runtime with the `ort` feature).
//!
//! Embeddings are the mean of the model's last hidden state over the
//! attention mask, L2-normalized (the sentence-transformers recipe for
//! all-MiniLM-L6-v2).
//!
//! Sequences are as long as the longest text of a batch on ONNX Runtime. tract
//! needs a concrete sequence length (see
//! [`engine::tract::TractEngine::for_tokens`]) and builds one plan per length,
//! so there texts are padded up to the next multiple of [`SEQ_STEP`] tokens
//! (a question of 19 tokens runs at 24, not at 32 or 64). The attention mask
//! keeps padding out of the result.
//!
//! The vectors of the last [`CACHE_TEXTS`] texts asked for alone or in
//! small groups (questions, mentions) are kept, so a repeated question costs
//! a lookup.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Mutex;

use kgbox_query::dense::{EncodeError, TextEncoder};
use tokenizers::{Tokenizer, TruncationParams};

use crate::engine::{self, Arg, Device, Engine, EngineKind};
use crate::NeuralError;

/// Longest tokenized text (special tokens included); entity names and
/// mentions are far shorter.
pub const MAX_TOKENS: usize = 64;

/// Texts run through the model at once.
pub const BATCH: usize = 32;

/// On tract, sequences are padded to a multiple of this many tokens, and the
/// model is optimized once per length used (at most `MAX_TOKENS / SEQ_STEP`).
pub const SEQ_STEP: usize = 8;

/// Texts whose vectors are kept (see [`VectorCache`]).
pub const CACHE_TEXTS: usize = 1024;

/// Calls of at most this many texts use the cache; bulk embedding (the
/// packager's names) would only churn it.
const CACHE_CALL_TEXTS: usize = 4;

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

/// Vectors of recent texts, in two generations: lookups search both, inserts
/// go to the newer, and when it holds half the capacity it becomes the older
/// one (the older is dropped). O(1) per operation, at most `capacity` texts.
#[derive(Debug, Default)]
pub struct VectorCache {
    capacity: usize,
    newer: HashMap<String, Vec<f32>>,
    older: HashMap<String, Vec<f32>>,
    hits: u64,
    misses: u64,
}

impl VectorCache {
    pub fn new(capacity: usize) -> VectorCache {
        VectorCache {
            capacity,
            ..VectorCache::default()
        }
    }

    pub fn get(&mut self, text: &str) -> Option<Vec<f32>> {
        let found = self
            .newer
            .get(text)
            .or_else(|| self.older.get(text))
            .cloned();
        match found {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        found
    }

    pub fn put(&mut self, text: &str, vector: &[f32]) {
        if self.capacity == 0 {
            return;
        }
        if self.newer.len() >= self.capacity.div_ceil(2) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(text.to_string(), vector.to_vec());
    }

    /// Lookups that found a vector, and lookups that did not.
    pub fn counts(&self) -> (u64, u64) {
        (self.hits, self.misses)
    }
}

/// A sentence encoder: tokenizer + ONNX model on an engine.
pub struct Encoder {
    engine: Box<dyn Engine>,
    tokenizer: Tokenizer,
    /// Which of [`INPUTS`] the model takes.
    takes: [bool; 3],
    /// Pad to a multiple of [`SEQ_STEP`] (tract) rather than to the longest text.
    stepped: bool,
    /// Components per embedding (the model's hidden size).
    dim: usize,
    cache: Mutex<VectorCache>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("engine", &self.engine.name())
            .field("device", &self.engine.device())
            .finish_non_exhaustive()
    }
}

/// A `tokenizer.json` as the encoder uses it: texts truncated to
/// [`MAX_TOKENS`], no padding (padding is done here, see the module docs).
pub fn load_tokenizer(tokenizer_json: &[u8]) -> Result<Tokenizer, EncoderError> {
    let mut tokenizer = Tokenizer::from_bytes(tokenizer_json).map_err(tok_err)?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(tok_err)?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

impl Encoder {
    /// Loads an ONNX model (BERT-style inputs `input_ids`, `attention_mask`,
    /// optionally `token_type_ids`, all int64 `[batch, sequence]`; first
    /// output `[batch, sequence, dim]`) and a `tokenizer.json`, on tract.
    pub fn from_bytes(onnx: &[u8], tokenizer_json: &[u8]) -> Result<Encoder, EncoderError> {
        Encoder::load(EngineKind::Tract, Device::Cpu, onnx, tokenizer_json)
    }

    /// [`Encoder::from_bytes`] on the chosen engine. The model runs once on
    /// a probe text, for the embedding dimension ([`TextEncoder::dim`]).
    pub fn load(
        kind: EngineKind,
        device: Device,
        onnx: &[u8],
        tokenizer_json: &[u8],
    ) -> Result<Encoder, EncoderError> {
        let tokenizer = load_tokenizer(tokenizer_json)?;

        // tract builds the plan for names and short mentions now, so that a
        // load error shows here and not on first use.
        let engine = engine::load_tokens(kind, device, onnx, 2 * SEQ_STEP).map_err(model_err)?;
        let stepped = engine.name() == "tract";
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
        let mut encoder = Encoder {
            engine,
            tokenizer,
            takes,
            stepped,
            dim: 0,
            cache: Mutex::new(VectorCache::new(CACHE_TEXTS)),
        };
        encoder.dim = encoder.states(&["dimension probe"])?.dim;
        Ok(encoder)
    }

    /// Keeps the vectors of the last `texts` texts (0: none); empties the cache.
    pub fn set_cache(&mut self, texts: usize) {
        self.cache = Mutex::new(VectorCache::new(texts));
    }

    /// Lookups of the vector cache that found a vector, and that did not.
    pub fn cache_counts(&self) -> (u64, u64) {
        self.cache.lock().map(|c| c.counts()).unwrap_or((0, 0))
    }

    /// The engine that runs the model (`tract`, `ort`).
    pub fn engine(&self) -> &'static str {
        self.engine.name()
    }

    /// Unit-length embeddings of `texts`, in order.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        if texts.len() <= CACHE_CALL_TEXTS {
            return self.embed_cached(texts);
        }
        self.embed_all(texts)
    }

    fn embed_cached(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let mut found: Vec<Option<Vec<f32>>> = match self.cache.lock() {
            Ok(mut c) => texts.iter().map(|t| c.get(t)).collect(),
            Err(_) => vec![None; texts.len()],
        };
        let missing: Vec<&str> = texts
            .iter()
            .zip(&found)
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| *t)
            .collect();
        if missing.is_empty() {
            return Ok(found.into_iter().flatten().collect());
        }
        let mut fresh = self.embed_all(&missing)?.into_iter();
        if let Ok(mut c) = self.cache.lock() {
            for (text, slot) in texts.iter().zip(found.iter_mut()) {
                if slot.is_none() {
                    let v = fresh.next().unwrap_or_default();
                    c.put(text, &v);
                    *slot = Some(v);
                }
            }
        } else {
            for slot in found.iter_mut().filter(|s| s.is_none()) {
                *slot = Some(fresh.next().unwrap_or_default());
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// Texts in batches of [`BATCH`], of texts of about the same length
    /// (by characters), so that little of a batch is padding; in order.
    fn embed_all(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, v) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let states = self.states(texts)?;
        Ok((0..states.encodings.len())
            .map(|b| states.whole(b))
            .collect())
    }

    /// Unit-length vectors of each text and of spans of it: for `(text,
    /// spans)`, first the vector of the whole text (as [`Encoder::embed`]
    /// gives it), then one per span (byte ranges of `text`), the mean of the
    /// text's token states over the tokens inside the span. One pass of the
    /// model reads the text once, in context, for all of them. A span
    /// without a token gets the whole text's vector.
    pub fn embed_spans(
        &self,
        items: &[(&str, Vec<Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, EncoderError> {
        if let [(text, spans)] = items {
            let key = span_key(text, spans);
            let cached = self.cache.lock().ok().and_then(|mut c| c.get(&key));
            if let Some(flat) = cached {
                let dim = flat.len() / (spans.len() + 1);
                if dim > 0 {
                    return Ok(vec![flat.chunks(dim).map(<[f32]>::to_vec).collect()]);
                }
            }
            let out = self.embed_spans_all(items)?;
            if let (Some(first), Ok(mut c)) = (out.first(), self.cache.lock()) {
                c.put(&key, &first.concat());
            }
            return Ok(out);
        }
        self.embed_spans_all(items)
    }

    fn embed_spans_all(
        &self,
        items: &[(&str, Vec<Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, EncoderError> {
        let mut out = Vec::with_capacity(items.len());
        for chunk in items.chunks(BATCH) {
            let texts: Vec<&str> = chunk.iter().map(|(t, _)| *t).collect();
            let states = self.states(&texts)?;
            for (b, (_, spans)) in chunk.iter().enumerate() {
                let whole = states.whole(b);
                let offsets = states.encodings[b].get_offsets();
                let mut vectors: Vec<Vec<f32>> = spans
                    .iter()
                    .map(|span| {
                        let inside = |t: usize| {
                            offsets
                                .get(t)
                                .is_some_and(|&(a, z)| a < z && a >= span.start && z <= span.end)
                        };
                        states.pool(b, inside).unwrap_or_else(|| whole.clone())
                    })
                    .collect();
                vectors.insert(0, whole);
                out.push(vectors);
            }
        }
        Ok(out)
    }

    /// Tokenizes `texts` and runs the model on them as one batch.
    fn states(&self, texts: &[&str]) -> Result<States, EncoderError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(tok_err)?;
        let batch = encodings.len();
        if batch == 0 {
            return Ok(States {
                encodings,
                mask: Vec::new(),
                hidden: Vec::new(),
                seq: 0,
                dim: 0,
            });
        }
        let longest = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        if longest > MAX_TOKENS {
            return Err(EncoderError::Tokenizer(format!(
                "{longest} tokens after truncation"
            )));
        }
        let seq = if self.stepped {
            longest.div_ceil(SEQ_STEP).max(1) * SEQ_STEP
        } else {
            longest.max(1)
        };
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
        if hidden.len() != batch * seq * dim {
            return Err(EncoderError::Model(format!(
                "the output holds {} values, not {batch} x {seq} x {dim}",
                hidden.len()
            )));
        }
        Ok(States {
            encodings,
            mask,
            hidden,
            seq,
            dim,
        })
    }
}

/// The model's last hidden states for a batch of texts.
struct States {
    encodings: Vec<tokenizers::Encoding>,
    /// `[batch][seq]` attention mask.
    mask: Vec<i64>,
    /// `[batch][seq][dim]`.
    hidden: Vec<f32>,
    seq: usize,
    dim: usize,
}

impl States {
    /// The unit-length mean of all of text `b`'s unmasked token states.
    fn whole(&self, b: usize) -> Vec<f32> {
        self.pool(b, |_| true)
            .unwrap_or_else(|| vec![0.0; self.dim])
    }

    /// The unit-length mean of text `b`'s unmasked token states at the
    /// positions `keep` accepts; `None` when it accepts none.
    fn pool(&self, b: usize, keep: impl Fn(usize) -> bool) -> Option<Vec<f32>> {
        let (seq, dim) = (self.seq, self.dim);
        let mut v = vec![0f32; dim];
        let mut count = 0f32;
        for t in 0..seq {
            if self.mask[b * seq + t] == 0 || !keep(t) {
                continue;
            }
            count += 1.0;
            let row = &self.hidden[(b * seq + t) * dim..][..dim];
            for (x, h) in v.iter_mut().zip(row) {
                *x += h;
            }
        }
        if count == 0.0 {
            return None;
        }
        v.iter_mut().for_each(|x| *x /= count);
        normalize(&mut v);
        Some(v)
    }
}

/// The cache key of a text with spans (not a text anyone embeds alone).
fn span_key(text: &str, spans: &[Range<usize>]) -> String {
    let mut key = String::from("\u{0}spans");
    for s in spans {
        key.push_str(&format!(" {}..{}", s.start, s.end));
    }
    key.push('\u{0}');
    key.push_str(text);
    key
}

impl TextEncoder for Encoder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        Encoder::embed(self, texts).map_err(EncodeError::failed)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_spans(
        &self,
        items: &[(&str, Vec<Range<usize>>)],
    ) -> Result<Vec<Vec<Vec<f32>>>, EncodeError> {
        Encoder::embed_spans(self, items).map_err(EncodeError::failed)
    }
}

/// Scales `v` to unit length (leaves a zero vector as it is).
pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}
