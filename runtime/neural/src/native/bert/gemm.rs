//! The encoder's products, `x · W` for a constant `W`, with `W` packed once
//! at load time: in panels of [`NR`] columns, each panel's `k` rows stored
//! one after the other, so that a panel (for 384 rows: 6 KiB of int8, 24 KiB of f32) stays
//! in the cache while every block of [`MR`] input rows goes through it. Weights
//! stored as int8 with a scale per column stay int8 (a quarter of the
//! memory traffic; the scale is applied to each finished sum, which equals
//! scaling the weights first up to rounding).
//!
//! The micro-kernel keeps a block of sums, rows × [`NR`], in registers. It is
//! written once, generically, and compiled three times, chosen at run time:
//! for AVX-512 ([`MR_WIDE`] rows: one register per row, enough independent
//! sums to keep both multiply-add units busy), for AVX2 with FMA ([`MR`]
//! rows, two registers per row) and for the baseline target.
//! Panels are split over the rayon pool when the product is large enough.

use rayon::prelude::*;

/// Columns per panel.
pub const NR: usize = 16;
/// Input rows per block of sums (AVX2 and the baseline).
pub const MR: usize = 6;
/// Input rows per block of sums with AVX-512.
pub const MR_WIDE: usize = 12;
/// Products of fewer multiply-adds than this run on one thread.
const PAR_WORK: usize = 1 << 19;

/// A weight element: `f32`, or `i8` with a scale per column.
pub trait Elem: Copy + Send + Sync + Default {
    fn to_f32(self) -> f32;
    /// The first sixteen values of `v` as `f32` lanes.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(v: &[Self]) -> std::arch::x86_64::__m512;
}

impl Elem for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load16(v: &[f32]) -> std::arch::x86_64::__m512 {
        assert!(v.len() >= NR);
        // SAFETY: 16 values are readable from `v` (asserted).
        unsafe { std::arch::x86_64::_mm512_loadu_ps(v.as_ptr()) }
    }
}

impl Elem for i8 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from(self)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load16(v: &[i8]) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        assert!(v.len() >= NR);
        // SAFETY: 16 bytes are readable from `v` (asserted).
        let bytes = unsafe { _mm_loadu_si128(v.as_ptr().cast()) };
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes))
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
            Matrix::F32(p) => apply(Kernel::detect(), p, a, out),
            Matrix::I8(p) => apply(Kernel::detect(), p, a, out),
        }
    }
}

fn apply<T: Elem>(kernel: Kernel, w: &Packed<T>, a: &[f32], out: &mut [f32]) {
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
    // Whole blocks of rows are read from `a` in place; the rows left over
    // are copied into one block padded with zeros, so the kernel has no
    // edge case (and a large input is not copied whole).
    let mr = kernel.rows();
    let whole = rows - rows % mr;
    let tail: Vec<f32> = if whole == rows {
        Vec::new()
    } else {
        let mut t = vec![0f32; mr * k];
        t[..(rows - whole) * k].copy_from_slice(&a[whole * k..]);
        t
    };
    let padded_rows = rows.next_multiple_of(mr);
    let panels = n.div_ceil(NR);
    let threads = rayon::current_num_threads();
    let out_ptr = OutPtr(out.as_mut_ptr());
    let run = |p: usize| {
        let mut sums = [0f32; MR_WIDE * NR];
        let col = p * NR;
        let cols = NR.min(n - col);
        for r0 in (0..padded_rows).step_by(mr) {
            if r0 < whole {
                kernel.panel_product(w, a, r0, p, &mut sums);
            } else {
                kernel.panel_product(w, &tail, 0, p, &mut sums);
            }
            for r in 0..mr.min(rows.saturating_sub(r0)) {
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

/// The micro-kernel this CPU runs.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Baseline,
}

impl Kernel {
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Kernel::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Kernel::Avx2;
            }
        }
        Kernel::Baseline
    }

    /// Every kernel this CPU can run, the detected one first.
    #[cfg(test)]
    fn available() -> Vec<Kernel> {
        let mut all = vec![Kernel::Baseline];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                all.insert(0, Kernel::Avx2);
            }
            if std::is_x86_feature_detected!("avx512f") {
                all.insert(0, Kernel::Avx512);
            }
        }
        all
    }

    /// Input rows per block of sums.
    fn rows(self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => MR_WIDE,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => MR,
            Kernel::Baseline => MR,
        }
    }

    /// The sums of panel `p` for the block of [`Kernel::rows`] rows from `r0`.
    fn panel_product<T: Elem>(
        self,
        w: &Packed<T>,
        a: &[f32],
        r0: usize,
        p: usize,
        sums: &mut [f32],
    ) {
        match self {
            // SAFETY: `detect` chose these only where the CPU has the
            // features they are compiled for.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { panel_product_avx512(w, a, r0, p, sums) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, AVX2 and FMA.
            Kernel::Avx2 => unsafe { panel_product_avx2(w, a, r0, p, sums) },
            Kernel::Baseline => panel_product_generic::<T, MR, false>(w, a, r0, p, sums),
        }
    }
}

/// The AVX-512 block: one 16-lane register of sums per row, written with
/// the intrinsics (the compiler's own vectorizer keeps to 256-bit registers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn panel_product_avx512<T: Elem>(
    w: &Packed<T>,
    a: &[f32],
    r0: usize,
    p: usize,
    sums: &mut [f32],
) {
    use std::arch::x86_64::*;
    let k = w.k;
    let panel = w.panel(p);
    let block = &a[r0 * k..(r0 + MR_WIDE) * k];
    assert!(panel.len() == k * NR && sums.len() >= MR_WIDE * NR);
    let mut acc = [_mm512_setzero_ps(); MR_WIDE];
    for kk in 0..k {
        // SAFETY: the CPU has AVX-512F (this function's contract).
        let wk = unsafe { T::load16(&panel[kk * NR..kk * NR + NR]) };
        for (r, acc_r) in acc.iter_mut().enumerate() {
            // SAFETY: `block` holds MR_WIDE rows of `k` values.
            let av = _mm512_set1_ps(*unsafe { block.get_unchecked(r * k + kk) });
            *acc_r = _mm512_fmadd_ps(av, wk, *acc_r);
        }
    }
    for (r, acc_r) in acc.iter().enumerate() {
        // SAFETY: `sums` holds at least MR_WIDE × NR values (asserted).
        unsafe { _mm512_storeu_ps(sums.as_mut_ptr().add(r * NR), *acc_r) };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn panel_product_avx2<T: Elem>(
    w: &Packed<T>,
    a: &[f32],
    r0: usize,
    p: usize,
    sums: &mut [f32],
) {
    panel_product_generic::<T, MR, true>(w, a, r0, p, sums);
}

/// One panel's sums for the block of `M` rows from `r0`, into `sums`
/// (`M × NR`). `FMA`: fused multiply-adds (`mul_add` is one instruction
/// only where the target has FMA).
#[inline(always)]
fn panel_product_generic<T: Elem, const M: usize, const FMA: bool>(
    w: &Packed<T>,
    a: &[f32],
    r0: usize,
    p: usize,
    sums: &mut [f32],
) {
    let k = w.k;
    let panel = w.panel(p);
    let mut acc = [[0f32; NR]; M];
    let block = &a[r0 * k..(r0 + M) * k];
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
        for (rows, k, n) in [
            (1, 5, 3),
            (7, 40, 33),
            (13, 384, 1152),
            (25, 1536, 384),
            (64, 64, 16),
        ] {
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
            let tol = 1e-4 * k as f32;
            let wf = Packed::new(&w, k, n, None);
            let wq = Packed::new(&q, k, n, Some(scale));
            for kernel in Kernel::available() {
                let mut got = vec![f32::NAN; rows * n];
                apply(kernel, &wf, &a, &mut got);
                for (x, y) in got.iter().zip(&want) {
                    assert!(
                        (x - y).abs() <= tol,
                        "{kernel:?} f32 {rows}x{k}x{n}: {x} vs {y}"
                    );
                }
                let mut got = vec![f32::NAN; rows * n];
                apply(kernel, &wq, &a, &mut got);
                for (x, y) in got.iter().zip(&want) {
                    assert!(
                        (x - y).abs() <= tol,
                        "{kernel:?} i8 {rows}x{k}x{n}: {x} vs {y}"
                    );
                }
            }
        }
    }
}
