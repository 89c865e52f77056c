//! Dropout masks drawn from a seeded stream per (seed, step, rank), so a
//! resumed run draws the same masks as an uninterrupted one. burn's
//! `Dropout` draws from the backend's global generator, which a checkpoint
//! cannot capture; every model with dropout draws its masks here instead.

use burn::tensor::{Device, Tensor, TensorData};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Values of a mask drawn from one generator: enough to be worth a
/// thread, small enough that a layer's mask spreads over every core.
const MASK_CHUNK: usize = 1 << 15;

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
        let n = shape.iter().product::<usize>();
        // A value is kept when 16 random bits fall below keep · 2¹⁶: four
        // values per 64-bit draw (a resolution of 2⁻¹⁶ in the keep
        // probability, far below what training resolves). Each chunk of
        // values has a generator of its own, seeded in order from this
        // step's, so the masks are the same whatever the threads.
        let threshold = (f64::from(keep) * 65536.0).round() as u64;
        let scale = 1.0 / keep;
        let seeds: Vec<u64> = (0..n.div_ceil(MASK_CHUNK)).map(|_| self.rng.next_u64()).collect();
        let mut values = vec![0.0f32; n];
        values.par_chunks_mut(MASK_CHUNK).zip(seeds).for_each(|(chunk, seed)| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for four in chunk.chunks_mut(4) {
                let bits = rng.next_u64();
                for (k, v) in four.iter_mut().enumerate() {
                    *v = if (bits >> (16 * k)) & 0xffff < threshold { scale } else { 0.0 };
                }
            }
        });
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

    #[test]
    fn masks_are_the_same_whatever_the_threads_that_draw_them() {
        let device = Device::flex();
        let draw = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| DropoutMasks::for_step(5, 2, 1).mask([3, 5 * MASK_CHUNK + 7], 0.5, &device))
                .into_data()
                .try_to_vec::<f32>()
                .unwrap()
        };
        let one = draw(1);
        assert_eq!(one, draw(3));
        let kept = one.iter().filter(|&&v| v > 0.0).count() as f64 / one.len() as f64;
        assert!((kept - 0.5).abs() < 0.01, "{kept}");
    }
}
