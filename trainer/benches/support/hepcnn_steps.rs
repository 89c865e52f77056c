//! HEP-CNN's training step timed, ours and PyTorch's, in a precision:
//! what the `hepcnn` and `precision` benches share (each also declares
//! `support/model_steps.rs` as `model_steps`).

use burn::module::Module;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use e2e::median;
use serde_json::Value;
use trainer::kernels::Precision;
use trainer::models::hepcnn::HepCnnConfig;
use trainer::models::segmentation::layers::Pass;
use trainer::optim::Rule;
use trainer::params::Init;

use super::model_steps;

/// (median step seconds, median forward seconds, parameters).
pub fn ours(config: &HepCnnConfig, batch: usize, steps: usize, precision: Precision) -> (f64, f64, usize) {
    model_steps::as_one_rank(precision, || ours_in(config, batch, steps))
}

fn ours_in(config: &HepCnnConfig, batch: usize, steps: usize) -> (f64, f64, usize) {
    let device = Device::flex().autodiff();
    let mut rng = e2e::SplitMix64::new(3);
    let [h, w] = config.input;
    let x: Vec<f32> = (0..batch * 3 * h * w).map(|_| (rng.next() % 1000) as f32 / 1000.0).collect();
    let y: Vec<i64> = (0..batch).map(|_| (rng.next() % 2) as i64).collect();
    let training = (Init::HeUniformLeaky { slope: 0.0 }, Rule::ADAM, 0.001);
    let (step_times, net, parameters) =
        model_steps::time_training_steps(config.init(&device), training, steps, &device, |net, _| {
            let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [batch, 3, h, w]), &device);
            let yt = Tensor::<1, Int>::from_data(TensorData::new(y.clone(), [batch]), &device);
            let logits = net.forward(xt, &mut Pass::inference());
            log_softmax(logits, 1).gather(1, yt.reshape([batch, 1])).mean().neg()
        });
    let valid = net.valid();
    let forward_times = model_steps::time_forward(steps, || {
        let xt = Tensor::<4>::from_data(TensorData::new(x.clone(), [batch, 3, h, w]), &Device::flex());
        assert_eq!(valid.forward(xt, &mut Pass::inference()).into_data().num_elements(), batch * 2);
    });
    (median(step_times), median(forward_times), parameters)
}

/// The PyTorch peer's JSON line (`bench/peers/torch_hepcnn.py`), bf16 under autocast.
pub fn peer(config: &HepCnnConfig, batch: usize, steps: usize, threads: usize, precision: Precision) -> Option<Value> {
    let mut command = e2e::peer_command("torch_hepcnn.py")?;
    command
        .args(["--size", &config.input[0].to_string(), "--filters", &config.filters.to_string()])
        .args(["--batch", &batch.to_string(), "--steps", &steps.to_string(), "--threads", &threads.to_string()])
        .args(["--precision", precision.name()]);
    e2e::peer_json(command)
}
