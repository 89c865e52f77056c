//! The per-pixel weighted cross-entropy of the segmentation models: the
//! mean over every pixel of w_y · (−log softmax(z)_y), with w_y the weight
//! of the pixel's true class (the MLPerf HPC DeepCAM reference's loss:
//! PyTorch's `CrossEntropyLoss(weight, reduction="none")` averaged over the
//! pixels; Kurth et al., SC18, Sec. V-B, for weighting by class).

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::engine::TrainError;

/// The loss of `logits` [N, K, H, W] against `labels` (N·H·W class ids as
/// f32, as the loader delivers them) with class `weights` (K of them).
/// A label that is not a class id is an error.
pub fn weighted_cross_entropy(
    logits: Tensor<4>,
    labels: &[f32],
    weights: &[f32],
    device: &Device,
) -> Result<Tensor<1>, TrainError> {
    let [n, k, h, w] = logits.dims();
    if labels.len() != n * h * w || weights.len() != k {
        return Err(TrainError::Model(format!(
            "{} labels and {} class weights for logits of shape [{n}, {k}, {h}, {w}]",
            labels.len(),
            weights.len()
        )));
    }
    let mut ids = Vec::with_capacity(labels.len());
    let mut pixel_weights = Vec::with_capacity(labels.len());
    for &l in labels {
        let class = l as usize;
        if l < 0.0 || l.fract() != 0.0 || class >= k {
            return Err(TrainError::Data(format!("label {l} is not a class id 0 to {}", k - 1)));
        }
        ids.push(class as i64);
        pixel_weights.push(weights[class]);
    }
    let ids = Tensor::<4, Int>::from_data(TensorData::new(ids, [n, 1, h, w]), device);
    let pixel_weights = Tensor::<4>::from_data(TensorData::new(pixel_weights, [n, 1, h, w]), device);
    let log_p = log_softmax(logits, 1).gather(1, ids);
    Ok((log_p * pixel_weights).mean().neg().reshape([1]))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn value(t: Tensor<1>) -> f64 {
        f64::from(t.into_data().try_into_vec_as::<f32>().unwrap()[0])
    }

    /// Against the formula by hand: two pixels, three classes.
    #[test]
    fn the_loss_is_the_weighted_mean_of_minus_log_softmax() {
        let device = Device::flex();
        // Pixel 0 logits (1, 2, 3), label 2; pixel 1 logits (0, 0, 0), label 0.
        let z = vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0];
        let logits = Tensor::<4>::from_data(TensorData::new(z, [1, 3, 1, 2]), &device);
        let weights = [0.5, 1.0, 4.0];
        let got = value(weighted_cross_entropy(logits, &[2.0, 0.0], &weights, &device).unwrap());
        let lse0 = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
        let want = (4.0 * (lse0 - 3.0) + 0.5 * 3f64.ln()) / 2.0;
        assert!((got - want).abs() < 1e-5, "{got} vs {want}");
    }

    #[test]
    fn labels_that_are_not_classes_are_refused() {
        let device = Device::flex();
        let logits = Tensor::<4>::zeros([1, 3, 1, 2], &device);
        for bad in [[3.0, 0.0], [0.0, -1.0], [0.5, 0.0]] {
            assert!(weighted_cross_entropy(logits.clone(), &bad, &[1.0; 3], &device).is_err(), "{bad:?}");
        }
        assert!(weighted_cross_entropy(logits, &[0.0], &[1.0; 3], &device).is_err());
    }
}
