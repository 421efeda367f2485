//! The encoder's products, `x · W` for a constant `W`, with `W` packed once
//! at load time: in panels of [`NR`] columns, each panel's `k` rows stored
//! one after the other, so that a panel (for 384 rows: 6 KiB of int8, 24 KiB of f32) stays
//! in the cache while every block of [`MR`] input rows goes through it. Weights
//! stored as int8 with a scale per column stay int8 (a quarter of the
//! memory traffic; the scale is applied to each finished sum, which equals
//! scaling the weights first up to rounding).
//!
//! The micro-kernel keeps an `MR × NR` block of sums in registers. It is
//! written once, generically, and compiled twice: for AVX2 with FMA (chosen
//! at run time when the CPU has them) and for the baseline target.
//! Panels are split over the rayon pool when the product is large enough.

use rayon::prelude::*;

/// Columns per panel.
pub const NR: usize = 16;
/// Input rows per block of sums.
pub const MR: usize = 6;
/// Products of fewer multiply-adds than this run on one thread.
const PAR_WORK: usize = 1 << 19;

/// A weight element: `f32`, or `i8` with a scale per column.
pub trait Elem: Copy + Send + Sync + Default {
    fn to_f32(self) -> f32;
}

impl Elem for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
}

impl Elem for i8 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from(self)
    }
}

/// `W` (`k × n`) in panels; `scale` multiplies each column's sums.
#[derive(Debug, Clone)]
pub struct Packed<T> {
    pub k: usize,
    pub n: usize,
    data: Vec<T>,
    scale: Option<Vec<f32>>,
}

/// A weight matrix of either kind.
#[derive(Debug, Clone)]
pub enum Matrix {
    F32(Packed<f32>),
    I8(Packed<i8>),
}

impl<T: Elem> Packed<T> {
    /// Packs row-major `w` (`k × n`); `scale`: one per column, or none.
    pub fn new(w: &[T], k: usize, n: usize, scale: Option<Vec<f32>>) -> Packed<T> {
        assert_eq!(w.len(), k * n, "packed weight shape");
        let panels = n.div_ceil(NR);
        let mut data = vec![T::default(); panels * k * NR];
        for p in 0..panels {
            for kk in 0..k {
                for j in 0..NR {
                    let col = p * NR + j;
                    if col < n {
                        data[(p * k + kk) * NR + j] = w[kk * n + col];
                    }
                }
            }
        }
        Packed { k, n, data, scale }
    }

    fn panel(&self, p: usize) -> &[T] {
        &self.data[p * self.k * NR..(p + 1) * self.k * NR]
    }
}

impl Matrix {
    pub fn k(&self) -> usize {
        match self {
            Matrix::F32(p) => p.k,
            Matrix::I8(p) => p.k,
        }
    }

    pub fn n(&self) -> usize {
        match self {
            Matrix::F32(p) => p.n,
            Matrix::I8(p) => p.n,
        }
    }

    /// `out = a · W` (`a`: `rows × k`, `out`: `rows × n`, row-major).
    pub fn apply(&self, a: &[f32], out: &mut [f32]) {
        match self {
            Matrix::F32(p) => apply(p, a, out),
            Matrix::I8(p) => apply(p, a, out),
        }
    }
}

fn apply<T: Elem>(w: &Packed<T>, a: &[f32], out: &mut [f32]) {
    let (k, n) = (w.k, w.n);
    let rows = a.len() / k.max(1);
    assert!(
        a.len() == rows * k && out.len() == rows * n,
        "product shapes: a {} (k {k}), out {} (n {n})",
        a.len(),
        out.len()
    );
    if rows == 0 || n == 0 {
        return;
    }
    // Input rows padded to whole blocks, so the kernel has no edge case.
    let padded_rows = rows.next_multiple_of(MR);
    let mut padded;
    let a = if padded_rows == rows {
        a
    } else {
        padded = vec![0f32; padded_rows * k];
        padded[..rows * k].copy_from_slice(a);
        &padded[..]
    };
    let panels = n.div_ceil(NR);
    let threads = rayon::current_num_threads();
    let out_ptr = OutPtr(out.as_mut_ptr());
    let run = |p: usize| {
        let mut sums = [0f32; MR * NR];
        let col = p * NR;
        let cols = NR.min(n - col);
        for r0 in (0..padded_rows).step_by(MR) {
            panel_product(w, a, r0, p, &mut sums);
            for r in 0..MR.min(rows.saturating_sub(r0)) {
                let src = &sums[r * NR..r * NR + cols];
                // SAFETY: `out` holds `rows × n` values (asserted above);
                // row `r0 + r < rows` and columns `col..col + cols <= n`
                // are inside it, and each panel writes only its own
                // columns, so no two panels (threads) write the same value.
                let dst = unsafe {
                    std::slice::from_raw_parts_mut(out_ptr.get().add((r0 + r) * n + col), cols)
                };
                match &w.scale {
                    Some(scale) => {
                        for ((d, v), c) in dst.iter_mut().zip(src).zip(&scale[col..col + cols]) {
                            *d = v * c;
                        }
                    }
                    None => dst.copy_from_slice(src),
                }
            }
        }
    };
    if rows * k * n >= PAR_WORK && threads > 1 {
        (0..panels).into_par_iter().for_each(run);
    } else {
        (0..panels).for_each(run);
    }
}

/// `out`'s start, shared by the panels (each writes its own columns).
struct OutPtr(*mut f32);
impl OutPtr {
    fn get(&self) -> *mut f32 {
        self.0
    }
}
// SAFETY: the panels write disjoint columns through it (see `apply`).
unsafe impl Sync for OutPtr {}

fn panel_product<T: Elem>(w: &Packed<T>, a: &[f32], rows: usize, p: usize, sums: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { panel_product_avx2(w, a, rows, p, sums) };
            return;
        }
    }
    panel_product_generic::<T, false>(w, a, rows, p, sums);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn panel_product_avx2<T: Elem>(
    w: &Packed<T>,
    a: &[f32],
    rows: usize,
    p: usize,
    sums: &mut [f32],
) {
    panel_product_generic::<T, true>(w, a, rows, p, sums);
}

/// One panel's sums for the block of [`MR`] rows from `r0`, into `sums`
/// (`MR × NR`). `FMA`: fused multiply-adds (`mul_add` is one instruction
/// only where the target has FMA).
#[inline(always)]
fn panel_product_generic<T: Elem, const FMA: bool>(
    w: &Packed<T>,
    a: &[f32],
    r0: usize,
    p: usize,
    sums: &mut [f32],
) {
    let k = w.k;
    let panel = w.panel(p);
    let mut acc = [[0f32; NR]; MR];
    let block = &a[r0 * k..(r0 + MR) * k];
    for (kk, wrow) in panel.chunks_exact(NR).enumerate() {
        let mut wk = [0f32; NR];
        for (d, s) in wk.iter_mut().zip(wrow) {
            *d = s.to_f32();
        }
        for (r, acc_r) in acc.iter_mut().enumerate() {
            let av = block[r * k + kk];
            for (s, wv) in acc_r.iter_mut().zip(&wk) {
                *s = if FMA {
                    av.mul_add(*wv, *s)
                } else {
                    *s + av * wv
                };
            }
        }
    }
    for (r, acc_r) in acc.iter().enumerate() {
        sums[r * NR..(r + 1) * NR].copy_from_slice(acc_r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(a: &[f32], w: &[f32], k: usize, n: usize) -> Vec<f32> {
        let rows = a.len() / k;
        let mut out = vec![0f32; rows * n];
        for r in 0..rows {
            for c in 0..n {
                out[r * n + c] = (0..k).map(|i| a[r * k + i] * w[i * n + c]).sum();
            }
        }
        out
    }

    #[test]
    fn packed_products_equal_the_definition() {
        for (rows, k, n) in [(1, 5, 3), (7, 40, 33), (13, 384, 1152), (64, 64, 16)] {
            let a: Vec<f32> = (0..rows * k)
                .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5)
                .collect();
            let q: Vec<i8> = (0..k * n).map(|i| ((i * 5) % 255) as i8).collect();
            let scale: Vec<f32> = (0..n).map(|c| 0.01 + c as f32 * 1e-4).collect();
            let w: Vec<f32> = q
                .iter()
                .enumerate()
                .map(|(i, &v)| f32::from(v) * scale[i % n])
                .collect();
            let want = reference(&a, &w, k, n);
            let mut got = vec![0f32; rows * n];
            Matrix::F32(Packed::new(&w, k, n, None)).apply(&a, &mut got);
            let tol = 1e-4 * k as f32;
            for (x, y) in got.iter().zip(&want) {
                assert!((x - y).abs() <= tol, "f32 {rows}x{k}x{n}: {x} vs {y}");
            }
            Matrix::I8(Packed::new(&q, k, n, Some(scale))).apply(&a, &mut got);
            for (x, y) in got.iter().zip(&want) {
                assert!((x - y).abs() <= tol, "i8 {rows}x{k}x{n}: {x} vs {y}");
            }
        }
    }
}
