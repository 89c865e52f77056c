//! 3-D pooling with non-overlapping cubic windows of 2, built from burn's
//! 2-D pools (burn 0.22 has no 3-D pooling): pool H and W with the 2-D
//! kernel, then pairs along D by a reshape and a reduction. Exact, forward
//! and backward, because the windows do not overlap.

use burn::tensor::Tensor;
use burn::tensor::module::{avg_pool2d, max_pool2d};
use burn::tensor::ops::{AvgPoolOptions, MaxPoolOptions};

/// Which reduction a pooling layer applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Maximum of each 2×2×2 window (MLPerf HPC CosmoFlow).
    Max,
    /// Mean of each 2×2×2 window (CosmoFlow SC18).
    Avg,
}

/// Pool `x` of shape [N, C, D, H, W] (D, H, W even) by 2 in every spatial
/// dimension.
pub fn pool3d(x: Tensor<5>, pooling: Pooling) -> Tensor<5> {
    let [n, c, d, h, w] = x.dims();
    let planes = x.reshape([n * c, d, h, w]);
    let halved = match pooling {
        Pooling::Max => max_pool2d(planes, MaxPoolOptions::new([2, 2])),
        Pooling::Avg => avg_pool2d(planes, AvgPoolOptions::new([2, 2])),
    };
    let pairs = halved.reshape([n * c, d / 2, 2, (h / 2) * (w / 2)]);
    let reduced = match pooling {
        Pooling::Max => pairs.max_dim(2),
        Pooling::Avg => pairs.mean_dim(2),
    };
    reduced.reshape([n, c, d / 2, h / 2, w / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    /// Pool by definition: every 2×2×2 window of every plane, one at a time.
    fn naive(x: &[f32], [n, c, d, h, w]: [usize; 5], pooling: Pooling) -> Vec<f32> {
        let mut out = Vec::new();
        for plane in 0..n * c {
            for z in (0..d).step_by(2) {
                for y in (0..h).step_by(2) {
                    for v in (0..w).step_by(2) {
                        let window: Vec<f32> = (0..8)
                            .map(|k| x[(((plane * d + z + k / 4) * h) + y + (k / 2) % 2) * w + v + k % 2])
                            .collect();
                        out.push(match pooling {
                            Pooling::Max => window.iter().copied().fold(f32::MIN, f32::max),
                            Pooling::Avg => window.iter().sum::<f32>() / 8.0,
                        });
                    }
                }
            }
        }
        out
    }

    #[test]
    fn pooling_equals_the_definition_on_every_window() {
        let dims = [2, 3, 4, 6, 8];
        let len: usize = dims.iter().product();
        let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % 101) as f32 - 50.0).collect();
        let device = Device::flex();
        for pooling in [Pooling::Max, Pooling::Avg] {
            let t = Tensor::<5>::from_data(TensorData::new(x.clone(), dims), &device);
            let pooled = pool3d(t, pooling);
            assert_eq!(pooled.dims(), [2, 3, 2, 3, 4]);
            let got = pooled.into_data().try_into_vec_as::<f32>().unwrap_or_default();
            let want = naive(&x, dims, pooling);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "{pooling:?}: {g} != {w}");
            }
        }
    }
}
