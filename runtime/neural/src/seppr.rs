//! SEPPR (ULTRAG, Algorithm 2): personalized PageRank from fuzzy seeds, to
//! cut the subgraph a neural projection runs on.
//!
//! `x0` is the seeds' memberships normalized to sum 1; then `T` times
//! `x ← α·diffuse(x) + (1 - α)·x0`, where `diffuse` spreads each node's mass
//! evenly over its edges in both directions. The `k` nodes with the most mass
//! are kept (ties by id); seeds are always kept.

use kgbox_bundle::Kg;

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

impl Default for SepprParams {
    fn default() -> Self {
        SepprParams {
            alpha: 0.85,
            iterations: 5,
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
    for _ in 0..params.iterations {
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
    let mut ranked: Vec<(u32, f32)> = touched.iter().map(|&u| (u, x[u as usize])).collect();
    let by_mass = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let k = params.k.max(1);
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
