//! Input standardisation: each channel shifted and scaled to mean 0 and
//! standard deviation 1 over the training set. Log counts of a simulated
//! universe sit around a large positive mean that is the same in every
//! sample (the particle count is fixed); unscaled, that constant swamps
//! what differs between universes in the first layer's outputs. The
//! statistics are global, never per sample, so the amplitude of the
//! fluctuations (which tells σ8) survives.

use cluster::World;
use loader::dataset::Dataset;
use mpi::collective::SystemOperation;
use mpi::traits::*;

use crate::engine::TrainError;

/// Per-channel shift and scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Standardize {
    mean: Vec<f32>,
    inv_std: Vec<f32>,
}

impl Standardize {
    /// Statistics of channels-last samples `x` (`c` values per voxel).
    pub fn from_sums(sums: &[f64], c: usize) -> Self {
        // sums: c sums, c sums of squares, then the count of voxels.
        let count = sums[2 * c].max(1.0);
        let mean: Vec<f64> = sums[..c].iter().map(|s| s / count).collect();
        let inv_std = (0..c)
            .map(|ch| {
                let var = (sums[c + ch] / count - mean[ch] * mean[ch]).max(0.0);
                if var > 0.0 { (1.0 / var.sqrt()) as f32 } else { 1.0 }
            })
            .collect();
        Standardize { mean: mean.into_iter().map(|m| m as f32).collect(), inv_std }
    }

    /// Per-channel sums, sums of squares and the voxel count of `x`.
    pub fn sums(x: &[f32], c: usize) -> Vec<f64> {
        let mut sums = vec![0f64; 2 * c + 1];
        for voxel in x.chunks_exact(c) {
            for (ch, v) in voxel.iter().enumerate() {
                sums[ch] += f64::from(*v);
                sums[c + ch] += f64::from(*v) * f64::from(*v);
            }
        }
        sums[2 * c] = (x.len() / c) as f64;
        sums
    }

    /// Fit on the samples `indices` of `dataset`. With `same_everywhere`
    /// (every rank reads the same samples) no rank needs another's sums, so
    /// the statistics do not depend on the number of ranks; otherwise the
    /// sums are added over the ranks. Collective unless `same_everywhere`.
    pub fn fit(
        world: &World,
        dataset: &dyn Dataset,
        indices: &[usize],
        same_everywhere: bool,
        c: usize,
    ) -> Result<Self, TrainError> {
        let (mut x, mut y) = (vec![0f32; dataset.x_len()], vec![0f32; dataset.y_len()]);
        let mut local = vec![0f64; 2 * c + 1];
        for &i in indices {
            dataset.read_into(i, &mut x, &mut y).map_err(TrainError::from)?;
            for (total, s) in local.iter_mut().zip(Self::sums(&x, c)) {
                *total += s;
            }
        }
        if same_everywhere {
            return Ok(Self::from_sums(&local, c));
        }
        let mut total = vec![0f64; local.len()];
        world.comm().all_reduce_into(&local[..], &mut total[..], SystemOperation::sum());
        Ok(Self::from_sums(&total, c))
    }

    /// Standardise channels-last values in place.
    pub fn apply(&self, x: &mut [f32]) {
        let c = self.mean.len();
        for voxel in x.chunks_exact_mut(c) {
            for ((v, m), s) in voxel.iter_mut().zip(&self.mean).zip(&self.inv_std) {
                *v = (*v - m) * s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standardised_channels_have_mean_0_and_deviation_1() {
        // Two channels: 1, 3, 5, 7 and a constant 4.
        let x = [1.0, 4.0, 3.0, 4.0, 5.0, 4.0, 7.0, 4.0];
        let s = Standardize::from_sums(&Standardize::sums(&x, 2), 2);
        let mut y = x;
        s.apply(&mut y);
        let first: Vec<f32> = y.iter().step_by(2).copied().collect();
        let mean = first.iter().sum::<f32>() / 4.0;
        let var = first.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5, "{first:?}");
        // A constant channel is shifted to 0, not divided by 0.
        assert!(y.iter().skip(1).step_by(2).all(|v| *v == 0.0), "{y:?}");
    }
}
