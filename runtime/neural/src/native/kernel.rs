//! The numeric building blocks of the native entity model: a dense product
//! on `matrixmultiply`'s SGEMM (AVX2/FMA or AVX-512 picked at run time), and
//! the row operations around it. Rows are `dim` wide and contiguous.

/// `out = a · w (+ out when `accumulate`)`, with `a` `[rows, k]`, `w` `[k, n]`
/// and `out` `[rows, n]`, all row-major.
pub fn matmul(a: &[f32], k: usize, w: &[f32], n: usize, out: &mut [f32], accumulate: bool) {
    let rows = a.len().checked_div(k).unwrap_or(0);
    assert!(
        a.len() == rows * k && w.len() == k * n && out.len() == rows * n,
        "matmul shapes: a {} (k {k}), w {} (n {n}), out {}",
        a.len(),
        w.len(),
        out.len()
    );
    if rows == 0 || n == 0 {
        return;
    }
    let beta = if accumulate { 1.0 } else { 0.0 };
    // SAFETY: the assert above checks that `a` holds `rows × k`, `w` `k × n`
    // and `out` `rows × n` values; with row-major strides (k, 1), (n, 1) and
    // (n, 1) every element sgemm reads or writes lies inside its slice, and
    // `out` is borrowed mutably, so it aliases neither input.
    unsafe {
        matrixmultiply::sgemm(
            rows,
            k,
            n,
            1.0,
            a.as_ptr(),
            k as isize,
            1,
            w.as_ptr(),
            n as isize,
            1,
            beta,
            out.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// Adds `bias` to every row of `rows`.
pub fn add_bias(rows: &mut [f32], bias: &[f32]) {
    for row in rows.chunks_exact_mut(bias.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            *x += b;
        }
    }
}

/// ReLU in place.
pub fn relu(values: &mut [f32]) {
    for x in values {
        *x = x.max(0.0);
    }
}

/// `acc += a ⊙ b`, element-wise.
#[inline(always)]
fn mul_add(acc: &mut [f32], a: &[f32], b: &[f32]) {
    for ((o, x), y) in acc.iter_mut().zip(a).zip(b) {
        *o += x * y;
    }
}

/// The DistMult messages of a batch: incoming edges of each row `v` in
/// `edges[offsets[v]..offsets[v + 1]]` as (source row, relation row), node
/// states `x` and relation vectors `rel`, rows `d` wide.
#[derive(Clone, Copy)]
pub struct Messages<'a> {
    pub offsets: &'a [u32],
    pub edges: &'a [(u32, u32)],
    pub x: &'a [f32],
    pub rel: &'a [f32],
    pub d: usize,
}

/// Adds into rows `first..` of `agg` (which holds their boundary condition)
/// `Σ x[src] ⊙ rel[type]` over each row's incoming edges.
#[inline(always)]
fn aggregate_impl(agg: &mut [f32], first: usize, m: Messages<'_>) {
    let d = m.d;
    for (i, acc) in agg.chunks_exact_mut(d).enumerate() {
        let v = first + i;
        let span = m.offsets[v] as usize..m.offsets[v + 1] as usize;
        for &(s, u) in &m.edges[span] {
            let (s, u) = (s as usize, u as usize);
            mul_add(acc, &m.x[s * d..(s + 1) * d], &m.rel[u * d..(u + 1) * d]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn aggregate_avx2(agg: &mut [f32], first: usize, m: Messages<'_>) {
    aggregate_impl(agg, first, m);
}

/// [`aggregate_impl`], in 256-bit vectors when the CPU has AVX2 (a build
/// for baseline x86-64 gets 128-bit ones otherwise).
pub fn aggregate(agg: &mut [f32], first: usize, m: Messages<'_>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the only
        // requirement `aggregate_avx2` adds to `aggregate_impl`.
        unsafe { aggregate_avx2(agg, first, m) };
        return;
    }
    aggregate_impl(agg, first, m);
}

/// LayerNorm (biased variance, `eps` inside the square root) then ReLU,
/// then the shortcut: `out_row = relu(ln(out_row)) + shortcut_row`.
pub fn norm_relu_shortcut(
    out: &mut [f32],
    shortcut: &[f32],
    weight: &[f32],
    bias: &[f32],
    eps: f32,
) {
    let d = weight.len();
    for (row, prev) in out.chunks_exact_mut(d).zip(shortcut.chunks_exact(d)) {
        let mean = row.iter().sum::<f32>() / d as f32;
        let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / d as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for (((x, w), b), p) in row.iter_mut().zip(weight).zip(bias).zip(prev) {
            *x = (((*x - mean) * inv) * w + b).max(0.0) + p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_matches_the_definition() {
        // a [3, 2], w [2, 4]
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let w = [1.0, 0.0, -1.0, 2.0, 0.5, 1.0, 0.0, -2.0];
        let mut out = vec![1.0; 12];
        matmul(&a, 2, &w, 4, &mut out, false);
        let want: Vec<f32> = (0..3)
            .flat_map(|r| (0..4).map(move |c| (r, c)))
            .map(|(r, c)| a[r * 2] * w[c] + a[r * 2 + 1] * w[4 + c])
            .collect();
        assert_eq!(out, want);
        matmul(&a, 2, &w, 4, &mut out, true);
        let doubled: Vec<f32> = want.iter().map(|x| 2.0 * x).collect();
        assert_eq!(out, doubled);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let mut row = vec![1.0, 2.0, 3.0, 4.0];
        let shortcut = vec![10.0; 4];
        norm_relu_shortcut(&mut row, &shortcut, &[1.0; 4], &[0.0; 4], 0.0);
        // (x - 2.5) / sqrt(1.25): negatives clamp to 0, then + 10.
        let s = 1.25f32.sqrt();
        let want = [10.0, 10.0, 10.0 + 0.5 / s, 10.0 + 1.5 / s];
        for (x, w) in row.iter().zip(want) {
            assert!((x - w).abs() < 1e-6, "{row:?}");
        }
    }
}
