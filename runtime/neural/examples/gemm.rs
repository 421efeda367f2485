//! Times the native encoder's packed products (`native::bert::gemm`):
//! GFLOP/s for a product of the encoder's shapes.
//!
//! `cargo run --release -p kgbox-neural --example gemm -- [ROWS]`
#![allow(clippy::unwrap_used)]

use kgbox_neural::native::bert::gemm::{Matrix, Packed};

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(256);
    for (k, n) in [(384, 1152), (384, 1536), (1536, 384)] {
        let a: Vec<f32> = (0..rows * k).map(|i| (i % 7) as f32 * 0.1).collect();
        let q: Vec<i8> = (0..k * n).map(|i| (i % 200) as i8).collect();
        let m = Matrix::I8(Packed::new(&q, k, n, Some(vec![0.01; n])));
        let mut out = vec![0f32; rows * n];
        let runs = 50;
        let t = std::time::Instant::now();
        for _ in 0..runs {
            m.apply(&a, &mut out);
        }
        let s = t.elapsed().as_secs_f64() / runs as f64;
        println!(
            "{rows}x{k}x{n}: {:.3} ms, {:.1} GFLOP/s",
            s * 1e3,
            2.0 * (rows * k * n) as f64 / s / 1e9
        );
    }
}
