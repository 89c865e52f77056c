//! CosmoGAN's training step timed, ours and PyTorch's, in a precision:
//! what the `cosmogan` and `precision` benches share (each also declares
//! `support/model_steps.rs` as `model_steps`).

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use e2e::median;
use loader::pipeline::Batch;
use serde_json::Value;
use trainer::engine::{ModelChoice, StepContext, TrainModel};
use trainer::kernels::Precision;
use trainer::models::cosmogan::model::{CosmoGanModel, CosmoGanOptions};
use trainer::models::segmentation::layers::Pass;
use trainer::optim::Rule;

use super::model_steps;

/// The reference's Adam: lr 2·10⁻⁴, β1 0.5.
const ADAM: Rule = Rule::Adam { beta1: 0.5, beta2: 0.999, epsilon: 1e-8 };

/// (median step seconds, median generator-forward seconds, parameters).
pub fn ours(config: &str, batch: usize, steps: usize, precision: Precision) -> (f64, f64, usize) {
    model_steps::as_one_rank(precision, || ours_in(config, batch, steps))
}

fn ours_in(config: &str, batch: usize, steps: usize) -> (f64, f64, usize) {
    let model = CosmoGanModel::new(&ModelChoice { config: config.into(), batch }, &CosmoGanOptions::default()).unwrap();
    let side = trainer::models::cosmogan::by_name(config).unwrap().side;
    let device = Device::flex().autodiff();
    let mut rng = e2e::SplitMix64::new(3);
    // Densities of mean about 1 with a long tail, as the maps have.
    let x: Vec<f32> = (0..batch * side * side).map(|_| ((rng.next() % 1000) as f32 / 500.0).powi(2)).collect();
    let maps = Batch {
        number: 0,
        indices: (0..batch).collect(),
        y: vec![1.0; batch],
        y_offsets: (0..=batch).collect(),
        x,
        records: Vec::new(),
        record_offsets: Vec::new(),
    };
    let training = (model.weight_init(), ADAM, 0.0002);
    let (step_times, net, parameters) =
        model_steps::time_training_steps(model.build(&device).unwrap(), training, steps, &device, |net, k| {
            let step = StepContext { seed: 1, epoch: 0, step: k as u64, rank: 0 };
            model.loss(net, &maps, &step, &device).unwrap()
        });
    let valid = net.valid();
    let forward_times = model_steps::time_forward(steps, || {
        let z = Tensor::<2>::ones([batch, 64], &Device::flex());
        assert_eq!(valid.generator.forward(z, &Pass::inference()).dims(), [batch, 1, side, side]);
    });
    (median(step_times), median(forward_times), parameters)
}

/// The PyTorch peer's JSON line (`bench/peers/torch_cosmogan.py`), bf16 under autocast.
pub fn peer(config: &str, batch: usize, steps: usize, threads: usize, precision: Precision) -> Option<Value> {
    let network = trainer::models::cosmogan::by_name(config)?;
    let mut command = e2e::peer_command("torch_cosmogan.py")?;
    command
        .args(["--size", &network.side.to_string(), "--filters", &network.generator_filters.to_string()])
        .args(["--batch", &batch.to_string(), "--steps", &steps.to_string(), "--threads", &threads.to_string()])
        .args(["--precision", precision.name()]);
    e2e::peer_json(command)
}
