//! Twin batches: 2N samples in which samples 2i and 2i + 1 hold the same
//! values. The first copy of each pair carries gradients to the layer's
//! parameters and to its input, the second to its input only.
//!
//! A GAN's discriminator judges the generated maps twice a step with the
//! same parameters: for its own loss (its parameters trained, the maps cut
//! from the generator) and for the generator's (its parameters frozen,
//! gradients to the maps). The two forward passes compute the same values.
//! On a twin batch the convolutions compute them once, for the first
//! copies, and hand them to both ([`conv2d_twin`](super::conv2d_twin));
//! the backward pass still gives each network the gradient of its own
//! loss, because the weight gradient reads the first copies' output
//! gradient only and the input gradient all of it.
//!
//! The copies are interleaved rather than stacked one batch after the
//! other so that BatchNorm's groups (sample n in group n mod G,
//! [`batch_norm`](super::batch_norm)) keep them apart: in 2G groups, group
//! 2g + h holds copy h of group g's samples.
//!
//! ```
//! use trainer::kernels::twin::{first_copies, twice};
//!
//! let samples = [1.0, 2.0, 3.0, 4.0]; // two samples of two values
//! let pairs = twice(&samples, 2);
//! assert_eq!(pairs, [1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0]);
//! assert_eq!(first_copies(&pairs, 2), samples);
//! ```

/// Every other sample of `values` (samples of `sample` values each), from
/// the first: the first copies of a twin batch.
pub fn first_copies(values: &[f32], sample: usize) -> Vec<f32> {
    let sample = sample.max(1);
    let mut out = Vec::with_capacity(values.len().div_ceil(2));
    for one in values.chunks(sample).step_by(2) {
        out.extend_from_slice(one);
    }
    out
}

/// Each sample of `values` (samples of `sample` values each) twice in a
/// row: the twin batch of those samples.
pub fn twice(values: &[f32], sample: usize) -> Vec<f32> {
    let sample = sample.max(1);
    let mut out = Vec::with_capacity(2 * values.len());
    for one in values.chunks(sample) {
        out.extend_from_slice(one);
        out.extend_from_slice(one);
    }
    out
}

/// Groups of a twin batch whose halves are normalised in `groups` groups
/// each: the copies' groups kept apart.
pub fn twin_groups(groups: usize) -> usize {
    2 * groups
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first copies of a twin batch are the samples it was made of,
    /// for every sample length and count (the empty batch included).
    #[test]
    fn the_first_copies_of_a_twin_batch_are_its_samples() {
        for sample in 1..5 {
            for samples in 0..6 {
                let values: Vec<f32> = (0..sample * samples).map(|i| i as f32 * 0.5 - 3.0).collect();
                let pairs = twice(&values, sample);
                assert_eq!(pairs.len(), 2 * values.len());
                assert_eq!(first_copies(&pairs, sample), values);
                // The second copies too.
                assert_eq!(first_copies(&pairs[sample.min(pairs.len())..], sample), values);
            }
        }
    }

    /// In 2G groups (sample n in group n mod 2G) group 2g + h holds copy h
    /// of group g's samples (sample i in group i mod G).
    #[test]
    fn twin_groups_keep_the_copies_apart() {
        for groups in 1..5 {
            for half in (0..4).map(|j| j * groups) {
                for n in 0..2 * half {
                    let (i, copy) = (n / 2, n % 2);
                    assert_eq!(n % twin_groups(groups), 2 * (i % groups) + copy);
                }
            }
        }
    }
}
