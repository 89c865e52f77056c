//! Dropout masks drawn from a seeded stream per (seed, step, rank), so a
//! resumed run draws the same masks as an uninterrupted one. burn's
//! `Dropout` draws from the backend's global generator, which a checkpoint
//! cannot capture; every model with dropout draws its masks here instead.

use burn::tensor::{Device, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Where a training step's dropout masks come from.
pub struct DropoutMasks {
    rng: ChaCha8Rng,
}

impl DropoutMasks {
    /// Masks for one training step of one rank.
    pub fn for_step(seed: u64, step: u64, rank: usize) -> Self {
        let key = seed ^ step.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (rank as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        DropoutMasks { rng: ChaCha8Rng::seed_from_u64(key) }
    }

    /// A mask of `shape` keeping each value with probability 1 − `p` and
    /// scaling the kept ones by 1 / (1 − `p`) (inverted dropout, Srivastava
    /// et al. 2014), so inference needs no rescaling.
    pub fn mask<const D: usize>(&mut self, shape: [usize; D], p: f32, device: &Device) -> Tensor<D> {
        let keep = 1.0 - p;
        let n = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|_| if self.rng.random::<f32>() < keep { 1.0 / keep } else { 0.0 }).collect();
        Tensor::from_data(TensorData::new(values, shape), device)
    }

    /// `x` with dropout `p` applied (as it is when `p` is 0).
    pub fn apply<const D: usize>(&mut self, x: Tensor<D>, p: f32) -> Tensor<D> {
        if p <= 0.0 {
            return x;
        }
        let mask = self.mask(x.dims(), p, &x.device());
        x * mask
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn masks_repeat_for_the_same_step_and_rank_and_keep_the_expected_share() {
        let device = Device::flex();
        let draw = |step, rank| {
            DropoutMasks::for_step(7, step, rank).mask([40, 50], 0.2, &device).into_data().try_to_vec::<f32>().unwrap()
        };
        let a = draw(3, 0);
        assert_eq!(a, draw(3, 0));
        assert_ne!(a, draw(4, 0));
        assert_ne!(a, draw(3, 1));
        let kept = a.iter().filter(|&&v| v > 0.0).count() as f64 / a.len() as f64;
        assert!((kept - 0.8).abs() < 0.03, "{kept}");
        assert!(a.iter().all(|&v| v == 0.0 || (v - 1.25).abs() < 1e-6));
    }
}
