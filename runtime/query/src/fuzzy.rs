//! Fuzzy sets over entity ids: membership in (0, 1], absent means 0.
//!
//! Sparse (sorted `(id, weight)` pairs) while small; dense (one `f32` per
//! entity) once a set holds more than 1/32 of the graph, so memory is bounded
//! by the entity count whatever the query does.

/// Sets larger than `entities / DENSE_RATIO` are stored densely.
pub const DENSE_RATIO: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub enum FuzzySet {
    Sparse(Vec<(u32, f32)>),
    Dense(Vec<f32>),
}

impl Default for FuzzySet {
    fn default() -> Self {
        FuzzySet::Sparse(Vec::new())
    }
}

impl FuzzySet {
    pub fn singleton(id: u32) -> FuzzySet {
        FuzzySet::Sparse(vec![(id, 1.0)])
    }

    /// From unsorted pairs with possible repeats: repeats keep the maximum.
    pub fn from_pairs(mut pairs: Vec<(u32, f32)>, entities: usize) -> FuzzySet {
        pairs.sort_unstable_by_key(|p| p.0);
        pairs.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                earlier.1 = earlier.1.max(later.1);
                true
            } else {
                false
            }
        });
        pairs.retain(|p| p.1 > 0.0);
        FuzzySet::Sparse(pairs).compact(entities)
    }

    /// Switches representation to fit the size.
    pub fn compact(self, entities: usize) -> FuzzySet {
        let dense_at = (entities / DENSE_RATIO).max(64);
        match self {
            FuzzySet::Sparse(p) if p.len() > dense_at => {
                let mut d = vec![0.0; entities];
                for (id, w) in p {
                    if let Some(slot) = d.get_mut(id as usize) {
                        *slot = w;
                    }
                }
                FuzzySet::Dense(d)
            }
            FuzzySet::Dense(d) => {
                let count = d.iter().filter(|&&w| w > 0.0).count();
                if count * 2 < dense_at {
                    FuzzySet::Sparse(
                        d.iter()
                            .enumerate()
                            .filter(|(_, &w)| w > 0.0)
                            .map(|(i, &w)| (i as u32, w))
                            .collect(),
                    )
                } else {
                    FuzzySet::Dense(d)
                }
            }
            s => s,
        }
    }

    pub fn get(&self, id: u32) -> f32 {
        match self {
            FuzzySet::Sparse(p) => p
                .binary_search_by_key(&id, |x| x.0)
                .map(|i| p[i].1)
                .unwrap_or(0.0),
            FuzzySet::Dense(d) => d.get(id as usize).copied().unwrap_or(0.0),
        }
    }

    /// Members with weight > 0, in id order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = (u32, f32)> + '_> {
        match self {
            FuzzySet::Sparse(p) => Box::new(p.iter().copied()),
            FuzzySet::Dense(d) => Box::new(
                d.iter()
                    .enumerate()
                    .filter(|(_, &w)| w > 0.0)
                    .map(|(i, &w)| (i as u32, w)),
            ),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            FuzzySet::Sparse(p) => p.len(),
            FuzzySet::Dense(d) => d.iter().filter(|&&w| w > 0.0).count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets the weight of `ids` to 0.
    pub fn remove_all(&mut self, ids: &[u32]) {
        match self {
            FuzzySet::Sparse(p) => p.retain(|(id, _)| ids.binary_search(id).is_err()),
            FuzzySet::Dense(d) => {
                for &id in ids {
                    if let Some(slot) = d.get_mut(id as usize) {
                        *slot = 0.0;
                    }
                }
            }
        }
    }

    /// Multiplies the membership of each of `ids` (sorted) by `factor`.
    pub fn scale_all(&mut self, ids: &[u32], factor: f32) {
        match self {
            FuzzySet::Sparse(p) => {
                for (id, w) in p.iter_mut() {
                    if ids.binary_search(id).is_ok() {
                        *w *= factor;
                    }
                }
            }
            FuzzySet::Dense(d) => {
                for &id in ids {
                    if let Some(slot) = d.get_mut(id as usize) {
                        *slot *= factor;
                    }
                }
            }
        }
    }

    /// Product t-norm with `other` (or with its complement when `negate`).
    pub fn and(&self, other: &FuzzySet, negate: bool, entities: usize) -> FuzzySet {
        let pairs: Vec<(u32, f32)> = self
            .iter()
            .filter_map(|(id, w)| {
                let o = other.get(id);
                let w = w * if negate { 1.0 - o } else { o };
                (w > 0.0).then_some((id, w))
            })
            .collect();
        FuzzySet::Sparse(pairs).compact(entities)
    }

    /// Probabilistic sum a + b - ab.
    pub fn or(&self, other: &FuzzySet, entities: usize) -> FuzzySet {
        let mut pairs: Vec<(u32, f32)> = self.iter().chain(other.iter()).collect();
        pairs.sort_unstable_by_key(|p| p.0);
        let mut out: Vec<(u32, f32)> = Vec::with_capacity(pairs.len());
        for (id, w) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == id => last.1 = last.1 + w - last.1 * w,
                _ => out.push((id, w)),
            }
        }
        FuzzySet::Sparse(out).compact(entities)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logic_matches_the_t_norms() {
        let n = 10_000;
        let a = FuzzySet::from_pairs(vec![(3, 0.5), (1, 1.0), (3, 0.8), (7, 0.2)], n);
        assert_eq!(a, FuzzySet::Sparse(vec![(1, 1.0), (3, 0.8), (7, 0.2)]));
        let b = FuzzySet::from_pairs(vec![(3, 0.5), (9, 1.0)], n);
        assert_eq!(a.and(&b, false, n), FuzzySet::Sparse(vec![(3, 0.4)]));
        let not = a.and(&b, true, n);
        assert_eq!(not.get(1), 1.0);
        assert!((not.get(3) - 0.4).abs() < 1e-6);
        let or = a.or(&b, n);
        assert!((or.get(3) - 0.9).abs() < 1e-6);
        assert_eq!(or.get(9), 1.0);
        assert_eq!(or.len(), 4);
    }

    #[test]
    fn large_sets_go_dense_and_back() {
        let n = 6400;
        let big = FuzzySet::from_pairs((0..1000).map(|i| (i * 3, 1.0)).collect(), n);
        assert!(matches!(big, FuzzySet::Dense(_)));
        assert_eq!(big.len(), 1000);
        let mut small = big.clone();
        small.remove_all(&(0..3000).collect::<Vec<_>>());
        assert!(matches!(small.clone().compact(n), FuzzySet::Sparse(_)));
        assert_eq!(small.len(), 0);
    }

    #[test]
    fn scale_all_scales_only_the_named_members() {
        let n = 6400;
        for set in [
            FuzzySet::from_pairs(vec![(1, 1.0), (4, 0.8), (9, 0.5)], n),
            FuzzySet::from_pairs((0..1000).map(|i| (i, 1.0)).collect(), n),
        ] {
            let mut s = set.clone();
            s.scale_all(&[4, 9, 5000], 0.5);
            assert_eq!(s.get(4), set.get(4) * 0.5);
            assert_eq!(s.get(9), set.get(9) * 0.5);
            assert_eq!(s.get(1), set.get(1));
            assert_eq!(s.get(5000), 0.0);
            assert_eq!(s.len(), set.len());
        }
    }
}
