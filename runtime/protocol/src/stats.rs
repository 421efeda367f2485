//! The one percentile rule behind every latency and timing figure kgbox and
//! its benches report (`kgbox eval`, `kgbox bench`, `kgbox-load`,
//! `kgbox-mqtt-bench`, `kgbox-perf`), so that a p50 in one table means what
//! it means in another.

/// The `p`-th percentile (`p` in percent, 0 to 100) of `sorted` values in
/// ascending order, by the **nearest-rank** rule: the value at 1-based rank
/// `ceil(p / 100 * n)`, clamped to `1..=n`. It is always one of the values
/// (never an interpolation); p0 is the smallest, p100 the largest, and p50
/// of an even count is the lower of the two middle values (the "median"
/// of the benches). `None` for no values. A `p` outside 0..=100 (or NaN)
/// is clamped to the nearest end.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    // `p * n` first: for a whole `p` and any count below 2^53 it is exact,
    // so the division by 100 is exact whenever the rank is a whole number.
    let rank = (p * n as f64 / 100.0).ceil();
    // `as` saturates (NaN and negatives to 0, too large to usize::MAX).
    let rank = (rank as usize).clamp(1, n);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn no_values_have_no_percentile() {
        assert_eq!(percentile::<u64>(&[], 50.0), None);
        assert_eq!(percentile::<f64>(&[], 0.0), None);
    }

    #[test]
    fn one_value_is_every_percentile() {
        for p in [0.0, 1.0, 50.0, 95.0, 99.0, 100.0] {
            assert_eq!(percentile(&[7u64], p), Some(7));
            assert_eq!(percentile(&[2.5f64], p), Some(2.5));
        }
    }

    #[test]
    fn p0_is_the_smallest_and_p100_the_largest() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&v, 100.0), Some(10));
        assert_eq!(percentile(&[0.5, 1.5, 9.0], 0.0), Some(0.5));
        assert_eq!(percentile(&[0.5, 1.5, 9.0], 100.0), Some(9.0));
    }

    #[test]
    fn p50_is_the_middle_value_or_the_lower_of_two() {
        assert_eq!(percentile(&[1u64, 2, 3], 50.0), Some(2));
        assert_eq!(percentile(&[1u64, 2, 3, 4], 50.0), Some(2));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 50.0), Some(2.0));
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
    }

    #[test]
    fn nearest_rank_is_ceil_of_p_times_n() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 95.0), Some(95));
        assert_eq!(percentile(&v, 99.0), Some(99));
        assert_eq!(percentile(&v, 99.5), Some(100));
        assert_eq!(percentile(&v, 0.5), Some(1));
        // 20 values: p95 is rank 19 exactly, not 20 (no rounding drift).
        let w: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&w, 95.0), Some(19));
        // 10 values: p99 is rank ceil(9.9) = 10.
        assert_eq!(percentile(&w[..10], 99.0), Some(10));
        // Every whole p over many counts: exactly ceil(p * n / 100).
        for n in 1..=300usize {
            let v: Vec<usize> = (1..=n).collect();
            for p in 0..=100usize {
                let want = (p * n).div_ceil(100).clamp(1, n);
                assert_eq!(percentile(&v, p as f64), Some(want), "p{p} of {n}");
            }
        }
    }

    #[test]
    fn p_outside_the_range_is_clamped() {
        let v = [1u64, 2, 3];
        assert_eq!(percentile(&v, -5.0), Some(1));
        assert_eq!(percentile(&v, 250.0), Some(3));
        assert_eq!(percentile(&v, f64::NAN), Some(1));
    }
}
