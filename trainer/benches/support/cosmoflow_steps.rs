//! The reduced MLPerf CosmoFlow's (`mlperf-small`) training step timed,
//! ours and TensorFlow's, in a precision: what the `step` and `precision`
//! benches share.

use std::time::Instant;

use burn::tensor::{Device, Tensor, TensorData};
use e2e::median;
use serde_json::Value;
use trainer::kernels::Precision;
use trainer::models::cosmoflow::{CosmoflowConfig, DropoutMasks, mse};
use trainer::optim::{Optimizer, Rule};
use trainer::params;

use super::model_steps;

/// (median step seconds, median forward seconds, parameters) of our
/// trainer's step in `precision`.
pub fn ours(batch: usize, steps: usize, precision: Precision) -> (f64, f64, usize) {
    model_steps::as_one_rank(precision, || ours_in(batch, steps))
}

fn ours_in(batch: usize, steps: usize) -> (f64, f64, usize) {
    let config = CosmoflowConfig::mlperf_small();
    let device = Device::flex().autodiff();
    let model = config.init(&device).unwrap();
    let shapes = params::shapes(&model).unwrap();
    let lengths = params::lengths(&shapes);
    let mut values = params::glorot_uniform(&shapes, 1);
    let mut model = params::with_values(model, &values, &device);
    let mut optimizer = Optimizer::new(Rule::Sgd { momentum: 0.9 }, None, &lengths);
    let mut grads: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0; n]).collect();
    let d = config.input;
    let mut rng = e2e::SplitMix64::new(3);
    let x: Vec<f32> = (0..batch * d * d * d * 4).map(|_| ((rng.next() % 5) as f32).ln_1p()).collect();
    let y: Vec<f32> = (0..batch * 4).map(|_| (rng.next() % 2001) as f32 / 1000.0 - 1.0).collect();
    let (mut step_times, mut forward_times) = (Vec::new(), Vec::new());
    for k in 0..steps + 2 {
        let t = Instant::now();
        let xt = Tensor::<5>::from_data(TensorData::new(x.clone(), [batch, d, d, d, 4]), &device);
        let yt = Tensor::<2>::from_data(TensorData::new(y.clone(), [batch, 4]), &device);
        let mut masks = DropoutMasks::for_step(1, k as u64, 0);
        let loss = mse(model.forward(xt, Some(&mut masks)), yt);
        let g = loss.backward();
        params::gradients(&model, &g, |i, v| grads[i].copy_from_slice(v));
        let views: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
        optimizer.step(0.001, &mut values.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>(), &views);
        model = params::with_values(model, &values, &device);
        if k >= 2 {
            step_times.push(t.elapsed().as_secs_f64());
        }
    }
    let valid = burn::module::Module::valid(&model);
    for k in 0..steps + 2 {
        let t = Instant::now();
        let xt = Tensor::<5>::from_data(TensorData::new(x.clone(), [batch, d, d, d, 4]), &device);
        let out = valid.forward(xt, None).into_data();
        assert_eq!(out.num_elements(), batch * 4);
        if k >= 2 {
            forward_times.push(t.elapsed().as_secs_f64());
        }
    }
    (median(step_times), median(forward_times), lengths.iter().sum())
}

/// The TensorFlow peer's JSON line (`bench/peers/cosmoflow_tf_step.py`),
/// bf16 under Keras' `mixed_bfloat16` policy.
pub fn peer(batch: usize, steps: usize, threads: usize, precision: Precision) -> Option<Value> {
    let out = e2e::peer_command("cosmoflow_tf_step.py")?
        .args(["--batch", &batch.to_string(), "--steps", &steps.to_string(), "--threads", &threads.to_string()])
        .args(["--precision", precision.name()])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("TensorFlow peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_slice(out.stdout.split(|&b| b == b'\n').rfind(|l| !l.is_empty())?).ok()
}
