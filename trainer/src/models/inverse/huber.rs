//! The inverse-imaging loss: the Huber loss (Huber 1964) with a cutoff
//! that starts at 10 and decays by 0.99 every epoch (Laanait et al. 2019):
//! quadratic for small errors, linear beyond the cutoff, so early on the
//! loss is nearly the squared error and later it stops outliers from
//! dominating.
//!
//! huber_δ(e) = e²/2 if |e| ≤ δ, else δ·(|e| − δ/2).

use burn::tensor::Tensor;

/// The cutoff at epoch 0.
pub const INITIAL_DELTA: f64 = 10.0;

/// The cutoff's factor per epoch.
pub const DELTA_DECAY: f64 = 0.99;

/// The cutoff of epoch `epoch` (0-based).
pub fn delta(epoch: u64) -> f64 {
    INITIAL_DELTA * DELTA_DECAY.powf(epoch as f64)
}

/// huber_δ(e) of one error, in f64: the definition the tensor version is
/// checked against.
pub fn huber(e: f64, delta: f64) -> f64 {
    if e.abs() <= delta { 0.5 * e * e } else { delta * (e.abs() - 0.5 * delta) }
}

/// The mean of huber_δ over every element of `prediction - target`.
///
/// With a = |e| and q = min(a, δ), huber_δ(e) = q²/2 + δ·(a − q) on both
/// branches, which needs no comparison mask and has the right gradient.
pub fn mean_huber<const D: usize>(prediction: Tensor<D>, target: Tensor<D>, delta: f64) -> Tensor<1> {
    let a = (prediction - target).abs();
    let q = a.clone().clamp_max(delta);
    (q.clone().powi_scalar(2).mul_scalar(0.5) + (a - q).mul_scalar(delta)).mean()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::{Device, TensorData};

    use super::*;

    #[test]
    fn the_cutoff_decays_by_one_percent_per_epoch() {
        assert_eq!(delta(0), 10.0);
        assert!((delta(1) - 9.9).abs() < 1e-12);
        assert!((delta(100) - 10.0 * 0.99f64.powi(100)).abs() < 1e-12);
        assert!((delta(69) - 4.998).abs() < 1e-3, "halved after about 69 epochs");
    }

    /// Values on both branches and at the cutoff, and the gradient: e
    /// inside, ±δ outside.
    #[test]
    fn tensor_huber_equals_the_closed_form_in_value_and_gradient() {
        let device = Device::flex().autodiff();
        let errors = [-7.5f32, -2.0, -0.25, 0.0, 0.5, 2.0, 3.0, 12.0];
        let delta = 2.0;
        let p = Tensor::<1>::from_data(TensorData::new(errors.to_vec(), [errors.len()]), &device).require_grad();
        let t = Tensor::<1>::zeros([errors.len()], &device);
        let loss = mean_huber(p.clone(), t, delta);
        let value = f64::from(loss.clone().into_data().try_to_vec::<f32>().unwrap()[0]);
        let want = errors.iter().map(|&e| huber(f64::from(e), delta)).sum::<f64>() / errors.len() as f64;
        assert!((value - want).abs() < 1e-6, "{value} vs {want}");
        assert_eq!(huber(3.0, 2.0), 2.0 * (3.0 - 1.0));
        assert_eq!(huber(2.0, 2.0), 2.0);
        let grad = p.grad(&loss.backward()).unwrap().into_data().try_to_vec::<f32>().unwrap();
        for (g, e) in grad.iter().zip(errors) {
            let want = if e.abs() <= delta as f32 { e } else { delta as f32 * e.signum() } / errors.len() as f32;
            assert!((g - want).abs() < 1e-6, "error {e}: gradient {g}, want {want}");
        }
    }
}
