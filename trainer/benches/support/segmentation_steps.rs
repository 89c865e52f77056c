//! The 2-D dense-prediction models' training steps timed, ours and
//! PyTorch's (`bench/peers/torch_segmentation.py`), in a precision: the
//! `small` Tiramisu and DeepLabv3+ on 16-channel climate-sized fields and
//! the `small` inverse-imaging FC-DenseNet on 16-pattern stacks. What the
//! `segmentation`, `inverse` and `precision` benches share (each also
//! declares `support/model_steps.rs` as `model_steps`).

// Each bench takes its own part: the segmentation bench the segmentation
// networks, the inverse bench the inverse one.
#![allow(dead_code)]

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use e2e::median;
use serde_json::Value;
use trainer::kernels::Precision;
use trainer::models::dropout::DropoutMasks;
use trainer::models::inverse::huber::{INITIAL_DELTA, mean_huber};
use trainer::models::segmentation::Network;
use trainer::models::segmentation::layers::Pass;
use trainer::models::segmentation::loss::weighted_cross_entropy;
use trainer::optim::Rule;
use trainer::params::Init;

use super::model_steps;

/// The climate fields' height and width.
pub const FIELD: (usize, usize) = e2e::CLIMATE_TEST_FIELD;
/// The inverse model's diffraction patterns' side and count.
pub const PATTERN_SIDE: usize = 32;
pub const PATTERNS: usize = 16;

const TRAINING: (Init, Rule, f32) = (Init::HeUniformLeaky { slope: 0.0 }, Rule::ADAM, 0.001);

/// A segmentation network's (median step seconds, median forward seconds,
/// parameters), as `trainer train` runs its steps on one rank
/// ([`trainer::kernels::wait`]).
pub fn segmentation<N: Network>(config: &N, batch: usize, steps: usize, precision: Precision) -> (f64, f64, usize) {
    model_steps::as_one_rank(precision, || segmentation_in(config, batch, steps))
}

fn segmentation_in<N: Network>(config: &N, batch: usize, steps: usize) -> (f64, f64, usize) {
    let device = Device::flex().autodiff();
    let (h, w) = FIELD;
    let mut rng = e2e::SplitMix64::new(3);
    let x: Vec<f32> = (0..batch * 16 * h * w).map(|_| (rng.next() % 1000) as f32 / 1000.0).collect();
    let y: Vec<f32> = (0..batch * h * w).map(|_| (rng.next() % 3) as f32).collect();
    let weights = [1.0, 38.0, 7.8];
    let (step_times, net, parameters) =
        model_steps::time_training_steps(config.init(&device), TRAINING, steps, &device, |net, k| {
            let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [batch, 16, h, w]), &device);
            let mut pass = Pass { masks: Some(DropoutMasks::for_step(1, k as u64, 0)), ..Pass::inference() };
            weighted_cross_entropy(N::forward(net, xt, &mut pass), &y, &weights, &device).unwrap()
        });
    let valid = net.valid();
    let forward_times = model_steps::time_forward(steps, || {
        let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [batch, 16, h, w]), &Device::flex());
        let out = N::forward(&valid, xt, &mut Pass::inference()).into_data();
        assert_eq!(out.num_elements(), batch * 3 * h * w);
    });
    (median(step_times), median(forward_times), parameters)
}

/// The inverse model's (median step seconds, median forward seconds,
/// parameters), as [`segmentation`].
pub fn inverse(batch: usize, steps: usize, precision: Precision) -> (f64, f64, usize) {
    model_steps::as_one_rank(precision, || inverse_in(batch, steps))
}

fn inverse_in(batch: usize, steps: usize) -> (f64, f64, usize) {
    const SIDE: usize = PATTERN_SIDE;
    let config = trainer::models::inverse::small();
    let device = Device::flex().autodiff();
    let mut rng = e2e::SplitMix64::new(3);
    let mut uniform = |n: usize| -> Vec<f32> { (0..n).map(|_| (rng.next() % 1000) as f32 / 1000.0).collect() };
    let x = uniform(batch * PATTERNS * SIDE * SIDE);
    let y = uniform(batch * SIDE * SIDE);
    let (step_times, net, parameters) =
        model_steps::time_training_steps(config.init(&device), TRAINING, steps, &device, |net, k| {
            let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [batch, PATTERNS, SIDE, SIDE]), &device);
            let yt = Tensor::<4>::from_data(TensorData::new(y.clone(), [batch, 1, SIDE, SIDE]), &device);
            let mut pass = Pass { masks: Some(DropoutMasks::for_step(1, k as u64, 0)), ..Pass::inference() };
            mean_huber(net.forward(xt, &mut pass), yt, INITIAL_DELTA)
        });
    let valid = net.valid();
    let forward_times = model_steps::time_forward(steps, || {
        let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [batch, PATTERNS, SIDE, SIDE]), &Device::flex());
        let out = valid.forward(xt, &mut Pass::inference()).into_data();
        assert_eq!(out.num_elements(), batch * SIDE * SIDE);
    });
    (median(step_times), median(forward_times), parameters)
}

/// The PyTorch peer's JSON line for `model` (`tiramisu`, `deeplabv3plus`
/// or `inverse`, at the sizes above), bf16 under autocast.
pub fn peer(model: &str, batch: usize, steps: usize, threads: usize, precision: Precision) -> Option<Value> {
    let (h, w) = if model == "inverse" { (PATTERN_SIDE, PATTERN_SIDE) } else { FIELD };
    let mut command = e2e::peer_command("torch_segmentation.py")?;
    command
        .args(["--model", model, "--batch", &batch.to_string(), "--steps", &steps.to_string()])
        .args(["--threads", &threads.to_string(), "--height", &h.to_string(), "--width", &w.to_string()])
        .args(["--precision", precision.name()]);
    e2e::peer_json(command)
}
