//! What one served bundle answered since it was deployed: requests, server
//! and client errors, and a latency histogram for the p99. A new `Served`
//! (a deployment, a rollback) starts from zero, so the figures are "since
//! deploy" by construction. Reported in the status ([`crate::deploy`]), read
//! by rollout criteria.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kgbox_protocol::ServingStats;

/// Upper bounds of the latency buckets, milliseconds; one more bucket
/// holds everything slower.
const BOUNDS_MS: [f64; 16] = [
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
    10000.0,
];

pub struct Counters {
    since_unix: u64,
    requests: AtomicU64,
    errors: AtomicU64,
    client_errors: AtomicU64,
    buckets: [AtomicU64; BOUNDS_MS.len() + 1],
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            since_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            client_errors: AtomicU64::new(0),
            buckets: Default::default(),
        }
    }
}

impl Counters {
    /// Counts one answered request.
    pub fn record(&self, status: u16, elapsed: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if status >= 500 {
            self.errors.fetch_add(1, Ordering::Relaxed);
        } else if status >= 400 {
            self.client_errors.fetch_add(1, Ordering::Relaxed);
        }
        let ms = elapsed.as_secs_f64() * 1e3;
        let i = BOUNDS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(BOUNDS_MS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The figures now.
    pub fn snapshot(&self) -> ServingStats {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        // The bound of the bucket in which the 99th percentile falls (the
        // last bound, 10 s, for "10 s or more").
        let want = total - total / 100;
        let mut seen = 0;
        let p99_ms = (total > 0).then(|| {
            let i = counts
                .iter()
                .position(|n| {
                    seen += n;
                    seen >= want
                })
                .unwrap_or(BOUNDS_MS.len());
            BOUNDS_MS[i.min(BOUNDS_MS.len() - 1)]
        });
        ServingStats {
            since_unix: self.since_unix,
            requests: self.requests.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            client_errors: self.client_errors.load(Ordering::Relaxed),
            p99_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_errors_and_a_p99_bound() {
        let c = Counters::default();
        assert_eq!(c.snapshot().p99_ms, None);
        for _ in 0..99 {
            c.record(200, Duration::from_micros(300));
        }
        c.record(500, Duration::from_millis(40));
        c.record(404, Duration::from_micros(50));
        let s = c.snapshot();
        assert_eq!((s.requests, s.errors, s.client_errors), (101, 1, 1));
        // 99 of 101 at or under 0.5 ms: the 99th percentile's bucket.
        assert_eq!(s.p99_ms, Some(0.5));
        for _ in 0..10 {
            c.record(200, Duration::from_secs(20));
        }
        assert_eq!(c.snapshot().p99_ms, Some(10000.0));
    }
}
