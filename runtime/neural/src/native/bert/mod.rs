//! The native sentence encoder: a BERT-style transformer (all-MiniLM-L6-v2)
//! written out in Rust, reading its weights from the ONNX file the other
//! engines run ([`weights`]). It computes what that graph computes: the
//! embeddings (word + position + token type, LayerNorm), then per layer
//! self-attention (scaled dot products, padding masked out, softmax), its
//! output projection with a residual and LayerNorm, the feed-forward
//! (exact, erf-based GELU) with a residual and LayerNorm; its output is the
//! last hidden state `[batch, seq, hidden]`.
//!
//! The products run on weights packed once at load ([`gemm`]: int8 weights
//! stay int8), split by column panels over the rayon pool when large
//! enough; a batch of several texts is split into groups run in parallel.

pub mod gemm;
pub mod weights;

use std::sync::Mutex;

use rayon::prelude::*;

use crate::engine::api::{Arg, Engine};
use crate::{NeuralError, Result};
pub use weights::BertWeights;
use weights::Layer;

/// The engine for [`crate::engine::load_tokens`].
pub struct BertEngine {
    w: BertWeights,
    inputs: Vec<String>,
    /// Scratch space of finished runs, reused by the next ones (a run
    /// allocating its own megabytes each time spends much of its time in
    /// page faults where large blocks are mapped and unmapped).
    scratch: Mutex<Vec<Buffers>>,
}

impl BertEngine {
    /// Reads the model; an error (with the reason) when it is not a BERT
    /// encoder of the layout [`weights`] reads.
    pub fn from_onnx(onnx: &[u8]) -> Result<BertEngine> {
        let w = BertWeights::from_onnx(onnx)?;
        let inputs = w.inputs.clone();
        for name in &inputs {
            if !matches!(
                name.as_str(),
                "input_ids" | "attention_mask" | "token_type_ids"
            ) {
                return Err(NeuralError::Invalid(format!(
                    "the encoder takes an input `{name}` the native engine does not know"
                )));
            }
        }
        Ok(BertEngine {
            w,
            inputs,
            scratch: Mutex::new(Vec::new()),
        })
    }

    pub fn weights(&self) -> &BertWeights {
        &self.w
    }
}

impl Engine for BertEngine {
    fn name(&self) -> &'static str {
        "native"
    }

    fn device(&self) -> &'static str {
        "cpu"
    }

    fn inputs(&self) -> &[String] {
        &self.inputs
    }

    fn run(&self, inputs: &[(&str, Arg<'_>)]) -> Result<(Vec<usize>, Vec<f32>)> {
        let find = |name: &str| -> Result<Option<(&[usize], &[i64])>> {
            match inputs.iter().find(|(n, _)| *n == name) {
                None => Ok(None),
                Some((n, a)) => {
                    a.check(n)?;
                    match a {
                        Arg::I64(s, v) => Ok(Some((*s, *v))),
                        Arg::F32(..) => Err(NeuralError::Run(format!("input `{n}` must be int64"))),
                    }
                }
            }
        };
        let (shape, ids) =
            find("input_ids")?.ok_or_else(|| NeuralError::Run("no input `input_ids`".into()))?;
        let [batch, seq] = *shape else {
            return Err(NeuralError::Run(format!(
                "input_ids of shape {shape:?}: expected [batch, seq]"
            )));
        };
        let mask = match find("attention_mask")? {
            Some((s, m)) if s == shape => m.to_vec(),
            Some((s, _)) => {
                return Err(NeuralError::Run(format!(
                    "attention_mask of shape {s:?}, not {shape:?}"
                )))
            }
            None => vec![1; ids.len()],
        };
        let types = match find("token_type_ids")? {
            Some((s, t)) if s == shape => t.to_vec(),
            Some((s, _)) => {
                return Err(NeuralError::Run(format!(
                    "token_type_ids of shape {s:?}, not {shape:?}"
                )))
            }
            None => vec![0; ids.len()],
        };
        let out = self.forward(ids, &mask, &types, batch, seq)?;
        Ok((vec![batch, seq, self.w.hidden], out))
    }
}

/// The tokens the model reads: those the attention mask keeps, text by
/// text. Masked positions are neither computed nor attended to; their
/// output rows are zero (a masked position's state is never used).
struct Tokens {
    /// Per kept token: its place in the `[batch, seq]` input.
    at: Vec<usize>,
    /// Per text: its first kept token and how many it has.
    texts: Vec<(usize, usize)>,
}

impl Tokens {
    fn new(mask: &[i64], batch: usize, seq: usize) -> Tokens {
        let mut at = Vec::with_capacity(mask.len());
        let mut texts = Vec::with_capacity(batch);
        for b in 0..batch {
            let first = at.len();
            at.extend((b * seq..(b + 1) * seq).filter(|&i| mask[i] != 0));
            texts.push((first, at.len() - first));
        }
        Tokens { at, texts }
    }
}

impl BertEngine {
    /// The last hidden state of `batch` texts of `seq` tokens.
    pub fn forward(
        &self,
        ids: &[i64],
        mask: &[i64],
        types: &[i64],
        batch: usize,
        seq: usize,
    ) -> Result<Vec<f32>> {
        let w = &self.w;
        let h = w.hidden;
        let max_pos = w.positions.len() / h;
        if seq > max_pos {
            return Err(NeuralError::Run(format!(
                "{seq} tokens: the model takes at most {max_pos}"
            )));
        }
        let type_count = w.types.len() / h;
        let bad = |what: &str, v: i64| NeuralError::Run(format!("{what} {v} is out of range"));
        if ids.len() != batch * seq || mask.len() != ids.len() || types.len() != ids.len() {
            return Err(NeuralError::Run("inputs of different shapes".into()));
        }
        for &id in ids {
            if usize::try_from(id).map_or(true, |i| i >= w.vocab) {
                return Err(bad("token id", id));
            }
        }
        for &t in types {
            if usize::try_from(t).map_or(true, |i| i >= type_count) {
                return Err(bad("token type", t));
            }
        }
        let tokens = Tokens::new(mask, batch, seq);
        let rows = tokens.at.len();
        let mut x = vec![0f32; rows * h];
        for (row, &i) in x.chunks_mut(h).zip(&tokens.at) {
            w.word(ids[i] as usize, row);
            let s = i % seq;
            let ty = types[i] as usize;
            let pos = &w.positions[s * h..(s + 1) * h];
            let typ = &w.types[ty * h..(ty + 1) * h];
            for ((o, p), q) in row.iter_mut().zip(pos).zip(typ) {
                *o += p + q;
            }
            layer_norm(row, &w.emb_ln_w, &w.emb_ln_b, w.eps);
        }
        let mut buf = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut kept| kept.pop())
            .unwrap_or_default();
        buf.size(rows, h, w.inter);
        for layer in &w.layers {
            self.layer(layer, &mut x, &tokens, &mut buf);
        }
        if let Ok(mut kept) = self.scratch.lock() {
            if kept.len() < MAX_SCRATCH {
                kept.push(buf);
            }
        }
        let mut out = vec![0f32; batch * seq * h];
        for (row, &i) in x.chunks(h).zip(&tokens.at) {
            out[i * h..(i + 1) * h].copy_from_slice(row);
        }
        Ok(out)
    }

    fn layer(&self, l: &Layer, x: &mut [f32], tokens: &Tokens, buf: &mut Buffers) {
        let w = &self.w;
        let h = w.hidden;
        l.qkv_w.apply(x, &mut buf.qkv);
        add_bias(&mut buf.qkv, &l.qkv_b);
        attention(&buf.qkv, &mut buf.ctx, tokens, h, w.heads);
        l.out_w.apply(&buf.ctx, &mut buf.tmp);
        add_bias(&mut buf.tmp, &l.out_b);
        residual_norm(x, &buf.tmp, &l.ln1_w, &l.ln1_b, w.eps);
        l.up_w.apply(x, &mut buf.up);
        bias_gelu(&mut buf.up, &l.up_b);
        l.down_w.apply(&buf.up, &mut buf.tmp);
        add_bias(&mut buf.tmp, &l.down_b);
        residual_norm(x, &buf.tmp, &l.ln2_w, &l.ln2_b, w.eps);
    }
}

/// Scratch spaces kept for reuse (one per run at the same time).
const MAX_SCRATCH: usize = 4;

/// A layer's scratch space.
#[derive(Default)]
struct Buffers {
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    up: Vec<f32>,
    tmp: Vec<f32>,
}

impl Buffers {
    /// Sized for `rows` tokens (each buffer is written whole before it is
    /// read, so what an earlier run left in it does not matter).
    fn size(&mut self, rows: usize, h: usize, inter: usize) {
        self.qkv.resize(rows * 3 * h, 0.0);
        self.ctx.resize(rows * h, 0.0);
        self.up.resize(rows * inter, 0.0);
        self.tmp.resize(rows * h, 0.0);
    }
}

/// Self-attention of each text over its own tokens: `ctx` from the rows of
/// `qkv` (query, key, value side by side); texts run in parallel.
fn attention(qkv: &[f32], ctx: &mut [f32], tokens: &Tokens, h: usize, heads: usize) {
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    // Each text's rows of `ctx`, apart, so that texts can run in parallel.
    let mut parts: Vec<(&(usize, usize), &mut [f32])> = Vec::with_capacity(tokens.texts.len());
    let mut rest = ctx;
    for t in &tokens.texts {
        let (mine, after) = rest.split_at_mut(t.1 * h);
        parts.push((t, mine));
        rest = after;
    }
    let one = |&(first, len): &(usize, usize), out: &mut [f32]| {
        let mut scores = vec![0f32; len];
        for head in 0..heads {
            for s in 0..len {
                let q = &qkv[(first + s) * 3 * h + head * d..][..d];
                let mut top = f32::NEG_INFINITY;
                for (t, score) in scores.iter_mut().enumerate() {
                    let k = &qkv[(first + t) * 3 * h + h + head * d..][..d];
                    *score = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
                    top = top.max(*score);
                }
                let mut sum = 0.0;
                for score in scores.iter_mut() {
                    *score = (*score - top).exp();
                    sum += *score;
                }
                let o = &mut out[s * h + head * d..][..d];
                o.fill(0.0);
                for (t, &p) in scores.iter().enumerate() {
                    let v = &qkv[(first + t) * 3 * h + 2 * h + head * d..][..d];
                    let p = p / sum;
                    for (a, b) in o.iter_mut().zip(v) {
                        *a += p * b;
                    }
                }
            }
        }
    };
    if parts.len() > 1 {
        parts.into_par_iter().for_each(|(t, out)| one(t, out));
    } else {
        for (t, out) in parts {
            one(t, out);
        }
    }
}

/// `x = LayerNorm(x + y)`, row by row.
fn residual_norm(x: &mut [f32], y: &[f32], scale: &[f32], shift: &[f32], eps: f32) {
    let h = scale.len();
    for (row, add) in x.chunks_mut(h).zip(y.chunks(h)) {
        for (a, b) in row.iter_mut().zip(add) {
            *a += b;
        }
        layer_norm(row, scale, shift, eps);
    }
}

/// `0.5 x (1 + erf(x / sqrt 2))`, as the graph computes it.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// erf for `f32`: a rational approximation on `[-4, 4]` (beyond, erf is
/// ±1 in `f32`), within a few units in the last place of the libm value,
/// and with no call or branch, so a loop over it vectorizes (the
/// coefficients of Eigen's `generic_fast_erf_float`).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    for c in [
        2.770_681_4e-8,
        -2.101_024e-6,
        -5.692_506_4e-5,
        -7.349_906_3e-4,
        -2.954_6e-3,
        -1.609_603_3e-2,
    ] {
        p = p * x2 + c;
    }
    let mut q = -1.456_607_2e-5_f32;
    for c in [
        -2.133_740_6e-4,
        -1.682_827e-3,
        -7.373_329e-3,
        -1.426_473_9e-2,
    ] {
        q = q * x2 + c;
    }
    x * p / q
}

/// `v = gelu(v + bias)` row by row; rows in parallel when many (the
/// feed-forward's widest step after its product).
fn bias_gelu(rows: &mut [f32], bias: &[f32]) {
    let one = |row: &mut [f32]| {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = gelu(*v + b);
        }
    };
    if rows.len() >= 64 * bias.len() {
        rows.par_chunks_mut(16 * bias.len())
            .for_each(|block| block.chunks_mut(bias.len()).for_each(one));
    } else {
        rows.chunks_mut(bias.len()).for_each(one);
    }
}

fn add_bias(rows: &mut [f32], bias: &[f32]) {
    for row in rows.chunks_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// LayerNorm over one row (population variance, as ONNX's).
fn layer_norm(row: &mut [f32], scale: &[f32], shift: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, s), b) in row.iter_mut().zip(scale).zip(shift) {
        *v = (*v - mean) * inv * s + b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_libm() {
        let mut worst = 0f32;
        for i in -6000..=6000 {
            let x = i as f32 / 1000.0;
            worst = worst.max((erf(x) - libm::erff(x)).abs());
        }
        assert!(worst < 1e-6, "max |erf - libm erff| {worst}");
    }

    #[test]
    fn gelu_and_layer_norm() {
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!(gelu(-10.0).abs() < 1e-6);
        let mut row = [1.0f32, 2.0, 3.0, 4.0];
        layer_norm(&mut row, &[1.0; 4], &[0.0; 4], 1e-12);
        let mean: f32 = row.iter().sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6);
        assert!((row[3] - 1.341_640_8).abs() < 1e-5, "{row:?}");
    }
}
