//! How the `hybrid` executor fuses its two answers: the symbolic executor's
//! (what the graph states) and the neural executor's (what the model infers),
//! both evaluated over the whole plan.
//!
//! For every entity either executor returns, with symbolic membership `s`
//! (0 when the graph does not state it) and neural score `p` (clamped to
//! `[P_FLOOR, 1 - P_FLOOR]`, `P_FLOOR` when the model did not return it):
//!
//! ```text
//! z = stated·s + neural·logit(p) + both·s·logit(p) + bias,    membership = σ(z)
//! ```
//!
//! The packager fits the four weights by logistic regression on held-out
//! examples (`kgbox-pack build` with answers in its planner examples), so the
//! membership is a calibrated probability that the entity is an answer; the
//! fitted weights travel in the bundle (`model.ultra.fusion`). Without them,
//! [`Fusion::default`] ranks every stated answer above every inferred one,
//! each group by the neural score. [`Fusion::STATED_FIRST`] keeps the
//! symbolic executor's own order for stated answers (the neural term cancels
//! when `s = 1`), so `hybrid` answers exactly as `symbolic` wherever the graph
//! states an answer and falls back on the model elsewhere.

use serde::{Deserialize, Serialize};

use crate::fuzzy::FuzzySet;

/// Neural scores are clamped to `[P_FLOOR, 1 - P_FLOOR]` before the logit.
pub const P_FLOOR: f32 = 1e-4;
/// Largest |z| fitted weights may reach: beyond it σ(z) rounds to 1 in `f32`
/// and answers would tie.
pub const MAX_LOGIT: f32 = 15.0;

/// The fusion's weights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fusion {
    pub stated: f32,
    pub neural: f32,
    pub both: f32,
    pub bias: f32,
}

impl Default for Fusion {
    /// Stated answers first (z ≥ 5.4), then inferred ones (z ≤ 4.6), each by
    /// the neural score.
    fn default() -> Self {
        Fusion {
            stated: 10.0,
            neural: 0.5,
            both: 0.0,
            bias: 0.0,
        }
    }
}

impl Fusion {
    /// Stated answers first (z = 10·s, ties in the symbolic executor's
    /// order), then inferred ones by the neural score (|z| ≤ 4.6).
    pub const STATED_FIRST: Fusion = Fusion {
        stated: 10.0,
        neural: 0.5,
        both: -0.5,
        bias: 0.0,
    };
}

/// `logit(p)` with `p` clamped to `[P_FLOOR, 1 - P_FLOOR]`.
pub fn logit(p: f32) -> f32 {
    let p = p.clamp(P_FLOOR, 1.0 - P_FLOOR);
    (p / (1.0 - p)).ln()
}

/// The fusion's features of one entity: `[s, logit(p), s·logit(p)]`.
pub fn features(s: f32, p: f32) -> [f32; 3] {
    let l = logit(p);
    [s, l, s * l]
}

impl Fusion {
    pub fn logit(&self, s: f32, p: f32) -> f32 {
        let [f1, f2, f3] = features(s, p);
        self.stated * f1 + self.neural * f2 + self.both * f3 + self.bias
    }

    pub fn membership(&self, s: f32, p: f32) -> f32 {
        1.0 / (1.0 + (-self.logit(s, p)).exp())
    }

    /// Whether every weight is finite (a bundle's section is checked with this).
    pub fn is_finite(&self) -> bool {
        [self.stated, self.neural, self.both, self.bias]
            .iter()
            .all(|w| w.is_finite())
    }

    /// The largest |z| over `s ∈ [0, 1]` and the clamped `p` range.
    pub fn max_abs_logit(&self) -> f32 {
        let l = logit(1.0);
        [(0.0, -l), (0.0, l), (1.0, -l), (1.0, l)]
            .iter()
            .map(|&(s, lp)| {
                (self.stated * s + self.neural * lp + self.both * s * lp + self.bias).abs()
            })
            .fold(0.0, f32::max)
    }

    /// The same ranking with |z| ≤ [`MAX_LOGIT`]: a positive scale of every
    /// weight orders entities the same way.
    pub fn bounded(self) -> Fusion {
        let m = self.max_abs_logit();
        if m <= MAX_LOGIT || !m.is_finite() {
            return self;
        }
        let k = MAX_LOGIT / m;
        Fusion {
            stated: self.stated * k,
            neural: self.neural * k,
            both: self.both * k,
            bias: self.bias * k,
        }
    }

    /// The fused set over every entity of `stated` or `scored`.
    pub fn fuse(&self, stated: &FuzzySet, scored: &FuzzySet, entities: usize) -> FuzzySet {
        let mut pairs: Vec<(u32, f32)> = stated
            .iter()
            .map(|(id, s)| (id, self.membership(s, scored.get(id))))
            .collect();
        pairs.extend(
            scored
                .iter()
                .filter(|&(id, _)| stated.get(id) <= 0.0)
                .map(|(id, p)| (id, self.membership(0.0, p))),
        );
        // σ(z) > 0 for every finite z; keep the set's members exactly those
        // the executors returned.
        for p in &mut pairs {
            p.1 = p.1.max(f32::MIN_POSITIVE);
        }
        FuzzySet::from_pairs(pairs, entities)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ranks_stated_above_inferred_each_by_the_model() {
        let n = 10_000;
        let stated = FuzzySet::from_pairs(vec![(1, 1.0), (2, 1.0)], n);
        let scored = FuzzySet::from_pairs(vec![(2, 0.9), (4, 0.9999), (5, 0.2)], n);
        let f = Fusion::default().fuse(&stated, &scored, n);
        assert_eq!(f.len(), 4);
        let order = |a: u32, b: u32| f.get(a) > f.get(b);
        assert!(order(2, 1), "stated members are ordered by the model");
        assert!(
            order(1, 4),
            "a stated member the model misses stays above an inferred one"
        );
        assert!(order(4, 5));
        assert!(f.get(5) > 0.0);
    }

    #[test]
    fn stated_first_keeps_the_symbolic_order() {
        let n = 100;
        let stated = FuzzySet::from_pairs(vec![(3, 1.0), (7, 1.0), (9, 1.0)], n);
        let scored = FuzzySet::from_pairs(vec![(9, 0.99), (7, 0.2), (1, 0.9999), (2, 0.4)], n);
        let f = Fusion::STATED_FIRST.fuse(&stated, &scored, n);
        assert_eq!(f.len(), 5);
        assert_eq!(
            f.get(3),
            f.get(7),
            "stated answers tie whatever the model says"
        );
        assert_eq!(f.get(7), f.get(9));
        assert!(
            f.get(3) > f.get(1),
            "a stated answer stays above an inferred one"
        );
        assert!(
            f.get(1) > f.get(2),
            "inferred answers are ordered by the model"
        );
        assert!(Fusion::STATED_FIRST.max_abs_logit() <= MAX_LOGIT);
    }

    #[test]
    fn bounded_keeps_the_ranking_and_the_range() {
        let wide = Fusion {
            stated: 40.0,
            neural: 3.0,
            both: -1.0,
            bias: 2.0,
        };
        let b = wide.bounded();
        assert!(b.max_abs_logit() <= MAX_LOGIT + 1e-3);
        let pts = [
            (0.0, 0.3),
            (1.0, 0.01),
            (1.0, 0.99),
            (0.0, 0.999),
            (0.5, 0.5),
        ];
        for &(s1, p1) in &pts {
            for &(s2, p2) in &pts {
                assert_eq!(
                    wide.logit(s1, p1) > wide.logit(s2, p2),
                    b.logit(s1, p1) > b.logit(s2, p2)
                );
            }
        }
        assert_eq!(Fusion::default().bounded(), Fusion::default());
    }

    #[test]
    fn logit_is_clamped() {
        assert!((logit(0.0) - logit(P_FLOOR)).abs() < 1e-6);
        assert!((logit(1.0) + logit(0.0)).abs() < 1e-3);
        assert!(logit(0.5).abs() < 1e-6);
    }
}
