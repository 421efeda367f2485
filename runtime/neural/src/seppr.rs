//! SEPPR (ULTRAG, Algorithm 2): personalized PageRank from fuzzy seeds, to
//! cut the subgraph a neural projection runs on.
//!
//! `x0` is the seeds' memberships normalized to sum 1; then `T` times
//! `x ← α·diffuse(x) + (1 - α)·x0`, where `diffuse` spreads each node's mass
//! evenly over its edges in both directions. The `k` nodes with the most mass
//! are kept (ties by id); seeds are always kept.
//!
//! The diffusion is direction-optimizing, as breadth-first search is: while
//! the mass covers few nodes, those nodes push it along their edges; once it
//! covers more than 1/`DENSE_FRACTION` of the graph, every node pulls from
//! its neighbours instead (the same sums, without scattered writes, on all
//! cores).

use kgbox_bundle::Kg;
use rayon::prelude::*;

/// The diffusion turns dense once the mass covers 1/this of the nodes.
const DENSE_FRACTION: usize = 16;

/// Nodes per block of the dense step.
const DENSE_BLOCK: usize = 4096;

/// [`top_nodes_many`] diffuses several seed sets at once while they hold at
/// most this many values in all (`nodes × sets`, 32 MB of f32 per buffer).
const MANY_VALUES: usize = 8 << 20;

/// Below this many seed sets, [`top_nodes_many`] runs them one by one.
const MANY_MIN_SETS: usize = 4;

/// SEPPR's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SepprParams {
    /// Damping factor α.
    pub alpha: f32,
    /// Diffusion steps T.
    pub iterations: usize,
    /// Nodes kept.
    pub k: usize,
}

/// Default subgraph size on a CPU (see `docs/performance.md`).
pub const DEFAULT_K: usize = 500;

/// ULTRAG's diffusion steps T, which [`SepprParams::default`] and the
/// PyTorch reference (`benches/neural/torch_reference.py`) use.
pub const REFERENCE_STEPS: usize = 5;

/// The steps a device runs by default (`executor.seppr_steps`): on the
/// MetaQA half KB, held-out Hits@1 within half a point of T = 5 at every
/// hop count, and a 3-hop projection a third faster (docs/results.md).
pub const DEFAULT_STEPS: usize = 3;

impl Default for SepprParams {
    fn default() -> Self {
        SepprParams {
            alpha: 0.85,
            iterations: REFERENCE_STEPS,
            k: DEFAULT_K,
        }
    }
}

/// The top-`k` nodes around `seeds` (`(entity, membership)` pairs), sorted by id.
pub fn top_nodes(kg: &Kg<'_>, seeds: &[(u32, f32)], params: &SepprParams) -> Vec<u32> {
    let n = kg.entity_count();
    let total: f32 = seeds.iter().map(|s| s.1.max(0.0)).sum();
    if n == 0 || total <= 0.0 {
        return Vec::new();
    }
    let mut x0 = vec![0f32; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut seen = vec![false; n];
    for &(v, w) in seeds {
        if let Some(slot) = x0.get_mut(v as usize) {
            *slot += w.max(0.0) / total;
            if !seen[v as usize] {
                seen[v as usize] = true;
                touched.push(v);
            }
        }
    }
    let mut x = x0.clone();
    let mut next = vec![0f32; n];
    // The dense state, once the diffusion turns dense: `1 / degree` of
    // every node and the shares `x / degree` the next step pulls.
    let mut dense: Option<Dense> = None;
    for _ in 0..params.iterations {
        if dense.is_none() && touched.len() * DENSE_FRACTION > n {
            dense = Some(Dense::new(kg, &x, std::mem::take(&mut next)));
        }
        if let Some(d) = dense.as_mut() {
            d.step(kg, &mut x, &x0, params.alpha);
            continue;
        }
        let frontier = touched.len();
        for i in 0..frontier {
            let u = touched[i];
            let mass = x[u as usize];
            if mass <= 0.0 {
                continue;
            }
            let (_, outs) = kg.out.edges(u);
            let (_, ins) = kg.inc.edges(u);
            let degree = outs.len() + ins.len();
            if degree == 0 {
                continue;
            }
            let share = mass / degree as f32;
            for &v in outs.iter().chain(ins) {
                let vi = v as usize;
                next[vi] += share;
                if !seen[vi] {
                    seen[vi] = true;
                    touched.push(v);
                }
            }
        }
        for &u in &touched {
            let ui = u as usize;
            x[ui] = params.alpha * next[ui] + (1.0 - params.alpha) * x0[ui];
            next[ui] = 0.0;
        }
    }
    let ranked: Vec<(u32, f32)> = if dense.is_some() {
        (0..n as u32)
            .map(|u| (u, x[u as usize]))
            .filter(|p| p.1 > 0.0)
            .collect()
    } else {
        touched.iter().map(|&u| (u, x[u as usize])).collect()
    };
    keep_top(ranked, seeds, params.k, n)
}

/// The `k` nodes of `ranked` with the most mass (ties by id), plus the
/// seeds, sorted by id.
fn keep_top(mut ranked: Vec<(u32, f32)>, seeds: &[(u32, f32)], k: usize, n: usize) -> Vec<u32> {
    let by_mass = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let k = k.max(1);
    if ranked.len() > k {
        ranked.select_nth_unstable_by(k - 1, by_mass);
        ranked.truncate(k);
    }
    let mut nodes: Vec<u32> = ranked.into_iter().map(|p| p.0).collect();
    // Seeds stay even when their mass ranks below k (a large fuzzy input).
    nodes.extend(seeds.iter().map(|s| s.0).filter(|&v| (v as usize) < n));
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// [`top_nodes`] for several seed sets (of one `alpha` and `iterations`;
/// each its own `k`). With enough sets and a graph small enough to hold a
/// vector of each, they diffuse together: one dense pull per step reads
/// each node's neighbours once for all sets, which is several times cheaper
/// per set than one diffusion each. Otherwise they run one by one.
pub fn top_nodes_many(kg: &Kg<'_>, sets: &[(&[(u32, f32)], SepprParams)]) -> Vec<Vec<u32>> {
    let n = kg.entity_count();
    let b = sets.len();
    let same = sets
        .windows(2)
        .all(|w| w[0].1.alpha == w[1].1.alpha && w[0].1.iterations == w[1].1.iterations);
    if b < MANY_MIN_SETS || !same || n.saturating_mul(b) > MANY_VALUES || n == 0 {
        return sets.iter().map(|(s, p)| top_nodes(kg, s, p)).collect();
    }
    let (alpha, iterations) = (sets[0].1.alpha, sets[0].1.iterations);
    // x0 of each set, as (node, set, mass); sets without mass get nothing.
    let mut starts: Vec<(usize, usize, f32)> = Vec::new();
    for (j, (seeds, _)) in sets.iter().enumerate() {
        let total: f32 = seeds.iter().map(|s| s.1.max(0.0)).sum();
        if total <= 0.0 {
            continue;
        }
        for &(v, w) in seeds.iter() {
            if (v as usize) < n {
                starts.push((v as usize, j, w.max(0.0) / total));
            }
        }
    }
    let mut x = vec![0f32; n * b];
    for &(v, j, m) in &starts {
        x[v * b + j] += m;
    }
    let mut share = vec![0f32; n * b];
    let block = (DENSE_BLOCK / b).max(1) * b;
    for _ in 0..iterations {
        share
            .par_chunks_mut(block)
            .zip(x.par_chunks(block))
            .enumerate()
            .for_each(|(c, (out, mass))| {
                for (i, (s, m)) in out
                    .chunks_exact_mut(b)
                    .zip(mass.chunks_exact(b))
                    .enumerate()
                {
                    let inv = inverse_degree(kg, (c * block / b + i) as u32);
                    for (s, m) in s.iter_mut().zip(m) {
                        *s = m * inv;
                    }
                }
            });
        let share: &[f32] = &share;
        x.par_chunks_mut(block).enumerate().for_each(|(c, out)| {
            pull_many(kg, out, c * block / b, b, share, alpha);
        });
        for &(v, j, m) in &starts {
            x[v * b + j] += (1.0 - alpha) * m;
        }
    }
    sets.par_iter()
        .enumerate()
        .map(|(j, (seeds, p))| {
            let total: f32 = seeds.iter().map(|s| s.1.max(0.0)).sum();
            if total <= 0.0 {
                return Vec::new();
            }
            let ranked = (0..n)
                .map(|v| (v as u32, x[v * b + j]))
                .filter(|p| p.1 > 0.0)
                .collect();
            keep_top(ranked, seeds, p.k, n)
        })
        .collect()
}

/// `1 / degree` of `u` (edges in both directions), 0 without edges.
fn inverse_degree(kg: &Kg<'_>, u: u32) -> f32 {
    match kg.out.degree(u) + kg.inc.degree(u) {
        0 => 0.0,
        d => 1.0 / d as f32,
    }
}

/// The dense diffusion's own state: each step is one parallel pass over the
/// nodes that pulls the neighbours' shares and writes the node's next mass
/// and next share together.
struct Dense {
    /// `1 / degree` per node.
    inverse: Vec<f32>,
    /// `x[u] / degree(u)`, read by this step.
    share: Vec<f32>,
    /// The shares this step writes.
    next: Vec<f32>,
}

impl Dense {
    /// From the mass `x`; `scratch` (any content) becomes a buffer.
    fn new(kg: &Kg<'_>, x: &[f32], mut scratch: Vec<f32>) -> Dense {
        let n = x.len();
        let inverse: Vec<f32> = (0..n as u32).map(|u| inverse_degree(kg, u)).collect();
        let share = x.iter().zip(&inverse).map(|(m, d)| m * d).collect();
        scratch.resize(n, 0.0);
        Dense {
            inverse,
            share,
            next: scratch,
        }
    }

    /// `x[v] = α·Σ share[u] + (1 - α)·x0[v]` over `v`'s neighbours `u`
    /// (both directions, with multiplicity), and `v`'s next share.
    fn step(&mut self, kg: &Kg<'_>, x: &mut [f32], x0: &[f32], alpha: f32) {
        let share: &[f32] = &self.share;
        x.par_chunks_mut(DENSE_BLOCK)
            .zip(self.next.par_chunks_mut(DENSE_BLOCK))
            .zip(x0.par_chunks(DENSE_BLOCK))
            .zip(self.inverse.par_chunks(DENSE_BLOCK))
            .enumerate()
            .for_each(|(b, (((out, shares), start), inv))| {
                let first = b * DENSE_BLOCK;
                for (i, (((xv, sv), &s0), &d)) in
                    out.iter_mut().zip(shares).zip(start).zip(inv).enumerate()
                {
                    let v = (first + i) as u32;
                    let (_, outs) = kg.out.edges(v);
                    let (_, ins) = kg.inc.edges(v);
                    let gather = |ends: &[u32]| {
                        ends.iter()
                            .map(|&u| share.get(u as usize).copied().unwrap_or(0.0))
                            .sum::<f32>()
                    };
                    let m = alpha * (gather(outs) + gather(ins)) + (1.0 - alpha) * s0;
                    *xv = m;
                    *sv = m * d;
                }
            });
        std::mem::swap(&mut self.share, &mut self.next);
    }
}

/// The dense step of [`top_nodes_many`] for the rows of nodes `first..`:
/// `out[v] = α·Σ share[u]` over `v`'s neighbours, `b` sets per row.
#[inline(always)]
fn pull_many_impl(kg: &Kg<'_>, out: &mut [f32], first: usize, b: usize, share: &[f32], alpha: f32) {
    for (i, acc) in out.chunks_exact_mut(b).enumerate() {
        let v = (first + i) as u32;
        acc.fill(0.0);
        let (_, outs) = kg.out.edges(v);
        let (_, ins) = kg.inc.edges(v);
        for ends in [outs, ins] {
            for &u in ends {
                let u = u as usize;
                for (a, s) in acc.iter_mut().zip(&share[u * b..(u + 1) * b]) {
                    *a += s;
                }
            }
        }
        for a in acc.iter_mut() {
            *a *= alpha;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pull_many_avx2(
    kg: &Kg<'_>,
    out: &mut [f32],
    first: usize,
    b: usize,
    share: &[f32],
    alpha: f32,
) {
    pull_many_impl(kg, out, first, b, share, alpha);
}

/// [`pull_many_impl`], in 256-bit vectors when the CPU has AVX2.
fn pull_many(kg: &Kg<'_>, out: &mut [f32], first: usize, b: usize, share: &[f32], alpha: f32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the only
        // requirement `pull_many_avx2` adds to `pull_many_impl`.
        unsafe { pull_many_avx2(kg, out, first, b, share, alpha) };
        return;
    }
    pull_many_impl(kg, out, first, b, share, alpha);
}
