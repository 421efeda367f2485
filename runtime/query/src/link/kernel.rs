//! ULTRAG's Eq. 1: a Gaussian kernel over distances, normalized by a
//! softmax. The fuzzy stage applies it to normalized edit distances, the
//! dense stage to distances between embeddings (see the [module docs](super)).

/// σ of ULTRAG's Eq. 1.
pub const SIGMA: f32 = 0.1;

/// ULTRAG Eq. 1: `p_j = exp(-d_j² / 2σ²) / Σ_k exp(-d_k² / 2σ²)` with
/// `σ =` [`SIGMA`], computed as a numerically stable softmax.
pub fn eq1(distances: &[f32]) -> Vec<f32> {
    let logit = |d: f32| -(d * d) / (2.0 * SIGMA * SIGMA);
    let top = distances
        .iter()
        .map(|&d| logit(d))
        .fold(f32::NEG_INFINITY, f32::max);
    let w: Vec<f32> = distances.iter().map(|&d| (logit(d) - top).exp()).collect();
    let total: f32 = w.iter().sum();
    w.into_iter().map(|x| x / total).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq1_on_hand_computed_distances() {
        // d = 0, 0.1, 0.2: logits 0, -0.5, -2.
        let p = eq1(&[0.0, 0.1, 0.2]);
        let z = 1.0 + (-0.5f32).exp() + (-2.0f32).exp();
        let want = [1.0 / z, (-0.5f32).exp() / z, (-2.0f32).exp() / z];
        for (a, b) in p.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{p:?} vs {want:?}");
        }
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        // Equal distances tie; a large common offset cancels out.
        assert_eq!(eq1(&[1.3, 1.3]), vec![0.5, 0.5]);
    }
}
