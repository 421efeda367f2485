//! The native engine: ULTRA's entity model written out in Rust, reading its
//! weights from the same ONNX file the other engines run.
//!
//! Per layer (`models/ultra/ultra.py`): the relation vectors are projected
//! (`Linear, ReLU, Linear`), every node sums the DistMult messages
//! `x[src] ⊙ rel[type]` of its incoming edges onto the boundary condition,
//! and `ReLU(LayerNorm(Linear([x, agg]))) + x` is its next state. The
//! messages are summed per destination over a CSR built once per call, so
//! there is no scatter and no atomic; rows are processed in blocks on the
//! rayon pool, and the dense products run on `matrixmultiply`'s SGEMM.
//!
//! Several graphs run as one disjoint batch ([`Part`]s): their node rows are
//! stacked, and each part keeps its own query and relation vectors. Only the
//! relation types a part's edges use are projected, so the cost does not
//! grow with the graph's relation count.

pub mod bert;
mod kernel;
pub mod weights;

use rayon::prelude::*;

use crate::{NeuralError, Result};
use kernel::{add_bias, aggregate, matmul, norm_relu_shortcut, relu, Messages};
pub use weights::Weights;

/// PyTorch's LayerNorm epsilon, as in the export.
const LN_EPS: f32 = 1e-5;

/// Node rows per block of work; below two blocks everything runs on the
/// calling thread.
const BLOCK_ROWS: usize = 128;

/// One graph to score: message edges in local node ids (`src` → `dst`, of
/// relation type `kind` < 2R), the fuzzy start set over its nodes, the query
/// vector `[D]`, and the relation representations `[2R, D]` it is
/// conditioned on.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    pub nodes: usize,
    pub src: &'a [i64],
    pub dst: &'a [i64],
    pub kind: &'a [i64],
    pub h_prob: &'a [f32],
    pub query: &'a [f32],
    pub rel_reps: &'a [f32],
}

/// The entity model, ready to run from any thread.
#[derive(Debug, Clone)]
pub struct NativeUltra {
    w: Weights,
    /// Relation types (2R) the model is run with.
    relations: usize,
}

/// The batch's graph: stacked node rows, incoming edges per row as
/// `(source row, used-relation index)`, and the relation vectors used.
struct Batch {
    rows: usize,
    /// `rows + 1` offsets into `edges`.
    offsets: Vec<u32>,
    edges: Vec<(u32, u32)>,
    /// `[used, D]`: the raw relation representations the edges use.
    rel_in: Vec<f32>,
    /// The part each row belongs to.
    part_of: Vec<u32>,
}

fn run_err(msg: String) -> NeuralError {
    NeuralError::Run(msg)
}

impl NativeUltra {
    /// Reads the model from an exported entity ONNX file; `dim` and
    /// `relations` (2R) come from the bundle's `model.ultra.meta`.
    pub fn from_onnx(onnx: &[u8], dim: usize, relations: usize) -> Result<NativeUltra> {
        Ok(NativeUltra {
            w: Weights::from_onnx(onnx, dim)?,
            relations,
        })
    }

    pub fn weights(&self) -> &Weights {
        &self.w
    }

    fn batch(&self, parts: &[Part<'_>]) -> Result<Batch> {
        let d = self.w.dim;
        let nr = self.relations;
        let rows: usize = parts.iter().map(|p| p.nodes).sum();
        let edge_count: usize = parts.iter().map(|p| p.src.len()).sum();
        if rows >= u32::MAX as usize || edge_count >= u32::MAX as usize {
            return Err(run_err(format!(
                "{rows} nodes and {edge_count} edges in one batch (at most {} each)",
                u32::MAX - 1
            )));
        }
        let mut counts = vec![0u32; rows + 1];
        let mut part_of = Vec::with_capacity(rows);
        let mut base = 0usize;
        for (pi, p) in parts.iter().enumerate() {
            let e = p.src.len();
            if p.dst.len() != e || p.kind.len() != e {
                return Err(run_err(format!(
                    "edge arrays of different lengths: {e}, {}, {}",
                    p.dst.len(),
                    p.kind.len()
                )));
            }
            if p.h_prob.len() != p.nodes || p.query.len() != d || p.rel_reps.len() != nr * d {
                return Err(run_err(format!(
                    "part of {} nodes with a start set of {}, a query of {} and relation vectors of {} values (dim {d}, {nr} relation types)",
                    p.nodes,
                    p.h_prob.len(),
                    p.query.len(),
                    p.rel_reps.len()
                )));
            }
            for &v in p.dst {
                let v = usize::try_from(v)
                    .ok()
                    .filter(|&v| v < p.nodes)
                    .ok_or_else(|| run_err(format!("edge into node {v} of {}", p.nodes)))?;
                counts[base + v + 1] += 1;
            }
            part_of.extend(std::iter::repeat_n(pi as u32, p.nodes));
            base += p.nodes;
        }
        for i in 0..rows {
            counts[i + 1] += counts[i];
        }
        let total = counts[rows] as usize;
        let mut fill = counts.clone();
        let mut edges = vec![(0u32, 0u32); total];
        let mut rel_in = Vec::new();
        let mut used = vec![u32::MAX; nr];
        base = 0;
        for p in parts {
            used.fill(u32::MAX);
            for ((&s, &t), &k) in p.src.iter().zip(p.dst).zip(p.kind) {
                let s = usize::try_from(s)
                    .ok()
                    .filter(|&s| s < p.nodes)
                    .ok_or_else(|| run_err(format!("edge from node {s} of {}", p.nodes)))?;
                let k = usize::try_from(k)
                    .ok()
                    .filter(|&k| k < nr)
                    .ok_or_else(|| run_err(format!("edge of type {k} ({nr} types)")))?;
                if used[k] == u32::MAX {
                    used[k] = (rel_in.len() / d) as u32;
                    rel_in.extend_from_slice(&p.rel_reps[k * d..(k + 1) * d]);
                }
                // `t` was checked in the first pass.
                let row = base + t as usize;
                let slot = &mut fill[row];
                edges[*slot as usize] = ((base + s) as u32, used[k]);
                *slot += 1;
            }
            base += p.nodes;
        }
        Ok(Batch {
            rows,
            offsets: counts,
            edges,
            rel_in,
            part_of,
        })
    }

    /// Logits of every node of every part, in order.
    pub fn forward(&self, parts: &[Part<'_>]) -> Result<Vec<Vec<f32>>> {
        let d = self.w.dim;
        let g = self.batch(parts)?;
        let rows = g.rows;
        if rows == 0 {
            return Ok(parts.iter().map(|_| Vec::new()).collect());
        }
        let mut boundary = Vec::with_capacity(rows * d);
        for p in parts {
            for &h in p.h_prob {
                boundary.extend(p.query.iter().map(|q| h * q));
            }
        }
        let mut x = boundary.clone();
        let mut next = vec![0f32; rows * d];
        let used = g.rel_in.len() / d;
        let mut rel_hidden = vec![0f32; used * d];
        let mut rel = vec![0f32; used * d];
        for layer in &self.w.layers {
            matmul(&g.rel_in, d, &layer.rel_w1, d, &mut rel_hidden, false);
            add_bias(&mut rel_hidden, &layer.rel_b1);
            relu(&mut rel_hidden);
            matmul(&rel_hidden, d, &layer.rel_w2, d, &mut rel, false);
            add_bias(&mut rel, &layer.rel_b2);

            let (x_ref, rel_ref, b_ref, graph) = (&x, &rel, &boundary, &g);
            let step = |(block, out): (usize, &mut [f32])| {
                let first = block * BLOCK_ROWS;
                let n = out.len() / d;
                let mut agg = b_ref[first * d..(first + n) * d].to_vec();
                let messages = Messages {
                    offsets: &graph.offsets,
                    edges: &graph.edges,
                    x: x_ref,
                    rel: rel_ref,
                    d,
                };
                aggregate(&mut agg, first, messages);
                let x_rows = &x_ref[first * d..(first + n) * d];
                matmul(x_rows, d, &layer.lin_w[..d * d], d, out, false);
                matmul(&agg, d, &layer.lin_w[d * d..], d, out, true);
                add_bias(out, &layer.lin_b);
                norm_relu_shortcut(out, x_rows, &layer.ln_w, &layer.ln_b, LN_EPS);
            };
            if rows > BLOCK_ROWS {
                next.par_chunks_mut(BLOCK_ROWS * d)
                    .enumerate()
                    .for_each(step);
            } else {
                next.chunks_mut(BLOCK_ROWS * d).enumerate().for_each(step);
            }
            std::mem::swap(&mut x, &mut next);
        }
        Ok(self.readout(parts, &x, &g.part_of))
    }

    /// The MLP over `[state, query]`; the query half is the same for every
    /// node of a part, so it is computed once per part.
    fn readout(&self, parts: &[Part<'_>], x: &[f32], part_of: &[u32]) -> Vec<Vec<f32>> {
        let d = self.w.dim;
        let h = 2 * d;
        let mut per_part = vec![0f32; parts.len() * h];
        let queries: Vec<f32> = parts.iter().flat_map(|p| p.query.iter().copied()).collect();
        matmul(
            &queries,
            d,
            &self.w.mlp_w1[d * h..],
            h,
            &mut per_part,
            false,
        );
        add_bias(&mut per_part, &self.w.mlp_b1);
        let mut logits = vec![0f32; part_of.len()];
        let step = |(block, out): (usize, &mut [f32])| {
            let first = block * BLOCK_ROWS;
            let n = out.len();
            let mut hidden = vec![0f32; n * h];
            matmul(
                &x[first * d..(first + n) * d],
                d,
                &self.w.mlp_w1[..d * h],
                h,
                &mut hidden,
                false,
            );
            for (i, (row, logit)) in hidden.chunks_exact_mut(h).zip(out.iter_mut()).enumerate() {
                let p = part_of[first + i] as usize;
                let c = &per_part[p * h..(p + 1) * h];
                let mut sum = self.w.mlp_b2;
                for ((v, c), w) in row.iter_mut().zip(c).zip(&self.w.mlp_w2) {
                    sum += (*v + c).max(0.0) * w;
                }
                *logit = sum;
            }
        };
        if logits.len() > BLOCK_ROWS {
            logits.par_chunks_mut(BLOCK_ROWS).enumerate().for_each(step);
        } else {
            logits.chunks_mut(BLOCK_ROWS).enumerate().for_each(step);
        }
        let mut out = Vec::with_capacity(parts.len());
        let mut rest = logits.as_slice();
        for p in parts {
            let (mine, tail) = rest.split_at(p.nodes);
            out.push(mine.to_vec());
            rest = tail;
        }
        out
    }
}
