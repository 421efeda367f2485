//! Percentiles for every bench: one rule, read from exact samples or from a
//! latency histogram.
//!
//! **The rule.** The `p`-th percentile (`p` in percent) of `n` values is the
//! value at 1-based rank `ceil(p / 100 * n)` of the values in ascending
//! order, clamped to `1..=n` (nearest rank): always one of the measured
//! values, never an interpolation; p100 is the largest; the median of an
//! even count is the lower of the two middle values; no values have no
//! percentile. It is what kgbox has always reported, and the rule of
//! [`kgbox_protocol::stats::percentile`], the one function behind `kgbox
//! eval` and `kgbox bench` too, re-exported here as [`percentile`] so that
//! the runtime and the benches share it without the runtime depending on
//! the benches.
//!
//! - Exact samples (kgbox-perf's runs, kgbox-mqtt-bench, kgbox-soak, the
//!   server timings kgbox-load samples): sort them and call [`percentile`].
//! - kgbox-load's latencies, one per response over a run of any length:
//!   [`LatencyHistogram`], an HDR histogram with
//!   [`SIGNIFICANT_DIGITS`] = 3 significant digits, whose percentile is the
//!   same nearest rank taken over its buckets.
//!
//! `benches/peers/run_peers.py` and `benches/neural/torch_reference.py`
//! write the same rule once each in Python.

use hdrhistogram::Histogram;
pub use kgbox_protocol::stats::percentile;

/// Precision of [`LatencyHistogram`]: values are kept to 3 significant
/// digits (every value below 2,048 ns exactly, above that in buckets
/// narrower than 1/1,024 of their value).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// The 1-based rank that [`percentile`] picks among `n` values for the
/// `p`-th percentile: `ceil(p / 100 * n)` clamped to `1..=n` (a `p` below 0
/// or NaN counts as 0, above 100 as 100); `None` for `n = 0`. Computed as
/// [`percentile`] computes it (`p * n` first, so whole ranks are exact);
/// the tests check the two agree.
pub fn nearest_rank(p: f64, n: u64) -> Option<u64> {
    if n == 0 {
        return None;
    }
    let rank = (p * n as f64 / 100.0).ceil();
    // `as` saturates (NaN and negatives to 0, too large to u64::MAX).
    Some((rank as u64).clamp(1, n))
}

/// Latencies in nanoseconds: an HDR histogram (`hdrhistogram`,
/// [`SIGNIFICANT_DIGITS`] = 3, growing to the largest value recorded, so
/// its memory depends on the range of the values, not on their number),
/// plus the exact count, sum and maximum.
///
/// [`LatencyHistogram::percentile`] applies the nearest-rank rule of
/// [`percentile`] to the histogram: it finds the bucket that holds the
/// value of rank [`nearest_rank`] and returns the bucket's upper end
/// (`highest_equivalent`). So it is never below the exact nearest-rank
/// value of the same samples and exceeds it by less than 1/1,024 of it
/// (values below 2,048 ns exactly). hdrhistogram's own `value_at_quantile`
/// is the same nearest-rank walk over the buckets, but computes the rank as
/// `ceil(q * n)` from a fraction `q`, which for p99.9 of 1,000 values gives
/// rank 1,000 instead of 999; the rank here is the one [`percentile`] uses.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // Auto-resizing, lowest discernible value 1 ns; creation only fails
        // for more than 5 significant digits.
        let hist = Histogram::new(SIGNIFICANT_DIGITS)
            .unwrap_or_else(|e| unreachable!("3 significant digits are valid: {e}"));
        LatencyHistogram {
            hist,
            sum_ns: 0,
            max_ns: 0,
        }
    }

    /// Records one latency in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        if self.hist.record(ns).is_err() {
            // Only a value the histogram cannot grow to (near u64::MAX):
            // count it at the largest trackable value.
            self.hist.saturating_record(ns);
        }
        self.sum_ns += u128::from(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds every latency of `other` (merging the workers' histograms).
    pub fn add(&mut self, other: &LatencyHistogram) {
        if self.hist.add(&other.hist).is_err() {
            for v in other.hist.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        self.sum_ns += other.sum_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The `p`-th percentile (`p` in percent) in nanoseconds by the
    /// nearest-rank rule, to 3 significant digits (see the type's doc);
    /// `None` when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        let rank = nearest_rank(p, self.count())?;
        let mut seen = 0u64;
        for v in self.hist.iter_recorded() {
            seen += v.count_at_value();
            if seen >= rank {
                return Some(v.value_iterated_to());
            }
        }
        // Unreachable: the counts add up to `count()` >= `rank`.
        Some(self.max_ns)
    }

    /// The largest latency recorded, exactly; `None` when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count() > 0).then_some(self.max_ns)
    }

    /// The mean latency in nanoseconds, exactly (from the sum of the
    /// recorded values); `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        let n = self.count();
        (n > 0).then(|| self.sum_ns as f64 / n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact nearest-rank percentile of unsorted values.
    fn exact(values: &[u64], p: f64) -> Option<u64> {
        let mut v = values.to_vec();
        v.sort_unstable();
        percentile(&v, p)
    }

    #[test]
    fn empty_has_no_percentile() {
        assert_eq!(percentile::<u64>(&[], 50.0), None);
        assert_eq!(nearest_rank(50.0, 0), None);
        let h = LatencyHistogram::new();
        assert_eq!(
            (h.count(), h.percentile(50.0), h.max(), h.mean()),
            (0, None, None, None)
        );
    }

    #[test]
    fn one_value_is_every_percentile() {
        for p in [0.0, 50.0, 99.0, 100.0] {
            assert_eq!(percentile(&[42u64], p), Some(42));
            assert_eq!(nearest_rank(p, 1), Some(1));
        }
    }

    #[test]
    fn the_median_of_two_is_the_first() {
        assert_eq!(percentile(&[3u64, 8], 50.0), Some(3));
        assert_eq!(percentile(&[0.25f64, 0.75], 50.0), Some(0.25));
        assert_eq!(nearest_rank(50.0, 2), Some(1));
        // Past the half, the second.
        assert_eq!(percentile(&[3u64, 8], 51.0), Some(8));
    }

    #[test]
    fn p99_of_100_is_the_99th_and_p100_the_max() {
        let v: Vec<u64> = (1..=100).map(|i| i * 10).collect();
        assert_eq!(percentile(&v, 99.0), Some(990));
        assert_eq!(percentile(&v, 100.0), Some(1000));
        assert_eq!(percentile(&v, 50.0), Some(500));
        assert_eq!(percentile(&v, 95.0), Some(950));
        assert_eq!(nearest_rank(99.0, 100), Some(99));
        assert_eq!(nearest_rank(100.0, 100), Some(100));
    }

    #[test]
    fn nearest_rank_is_the_rank_percentile_picks() {
        for n in 1..=300u64 {
            let v: Vec<u64> = (1..=n).collect();
            for p in (0..=1000)
                .map(|t| f64::from(t) / 10.0)
                .chain([-1.0, 150.0, f64::NAN])
            {
                assert_eq!(nearest_rank(p, n), percentile(&v, p), "p{p} of {n}");
            }
        }
        // Where a fraction drifts: 0.999 * 1000 is just above 999.
        assert_eq!(nearest_rank(99.9, 1000), Some(999));
    }

    #[test]
    fn small_values_are_exact_in_the_histogram() {
        let mut h = LatencyHistogram::new();
        for v in [5u64, 1, 4, 2, 3, 0, 2047] {
            h.record(v);
        }
        let all = [5u64, 1, 4, 2, 3, 0, 2047];
        for p in [0.0, 10.0, 50.0, 90.0, 99.0, 100.0] {
            assert_eq!(h.percentile(p), exact(&all, p), "p{p}");
        }
        assert_eq!(h.max(), Some(2047));
        assert_eq!(h.mean(), Some(2062.0 / 7.0));
    }

    /// splitmix64: deterministic pseudo-random values without a dependency.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn histogram_percentiles_agree_with_the_exact_ones_to_3_digits() {
        let mut state = 7u64;
        for n in [1usize, 2, 99, 1000, 3000, 4321] {
            // Latency-like: 20 µs to about 20 ms, log-spread, some ties.
            let values: Vec<u64> = (0..n)
                .map(|_| {
                    let r = next(&mut state);
                    let exp = 20_000u64 << (r % 11);
                    exp + (r >> 20) % exp
                })
                .collect();
            // Recorded by four "workers", then merged.
            let mut parts = vec![LatencyHistogram::new(); 4];
            for (i, v) in values.iter().enumerate() {
                parts[i % 4].record(*v);
            }
            let mut h = LatencyHistogram::new();
            for part in &parts {
                h.add(part);
            }
            assert_eq!(h.count(), n as u64);
            assert_eq!(h.max(), values.iter().max().copied());
            let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            assert!((h.mean().unwrap() - mean).abs() <= mean * 1e-12);
            for p in [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
                let want = exact(&values, p).unwrap();
                let got = h.percentile(p).unwrap();
                // The upper end of the exact value's bucket ...
                assert_eq!(got, h.hist.highest_equivalent(want), "p{p} of {n}");
                // ... so within 3 significant digits, never below.
                assert!(
                    got >= want && got - want <= want / 1000,
                    "p{p} of {n}: {got} against {want}"
                );
            }
        }
    }
}
