//! The Etalumis network's training step timed, ours and PyTorch's, in a
//! precision, over bucketed batches of traces `simgen traces` writes: what
//! the `etalumis` and `precision` benches share.

use std::path::Path;
use std::time::Instant;

use burn::tensor::Device;
use e2e::median;
use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::pipeline::{Batch, Loader, LoaderConfig};
use loader::sampler::BucketedSampler;
use loader::traces::CHOICE_WIDTH;
use serde_json::{Value, json};
use trainer::engine::{ModelChoice, StepContext, TrainModel};
use trainer::kernels::Precision;
use trainer::models::etalumis::{EtalumisModel, by_name};
use trainer::optim::{Optimizer, Rule};
use trainer::params;

use super::model_steps;

/// Batches the step comparison cycles through.
pub const STEP_BATCHES: usize = 6;

/// The model of configuration `config` checked against `data`, and
/// `STEP_BATCHES` bucketed batches of `batch` traces from it.
pub fn model_and_batches(data: &Path, config: &str, batch: usize) -> (EtalumisModel, Vec<Batch>) {
    let options = trainer::models::etalumis::model::EtalumisOptions::default();
    let model = EtalumisModel::new(&ModelChoice::config(config), &options).unwrap();
    let manifest = Manifest::load(&data.join(MANIFEST_FILE)).unwrap();
    model.check_data(data, &manifest).unwrap();
    let dataset = model.open_dataset(data, &manifest, None).unwrap();
    let sampler = BucketedSampler { len: dataset.len(), buckets: 16, world: 1, rank: 0, seed: 1 };
    let order: Vec<usize> = sampler.batches(0, batch).into_iter().take(STEP_BATCHES).flatten().collect();
    let config =
        LoaderConfig { batch, workers: 1, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false };

    let batches = Loader::new(dataset, order, config).map(Result::unwrap).collect();
    (model, batches)
}

/// The batches as the peer reads them: `batches.json` (configuration
/// `config`, the model's, layout, each trace's positions and choices) and
/// standardised observations in `obs-K.f32`.
pub fn export(model: &EtalumisModel, config: &str, batches: &[Batch], dir: &Path) {
    let data = model.layout();
    let (mean, std) =
        (data["observation_mean"].as_f64().unwrap() as f32, data["observation_std"].as_f64().unwrap() as f32);
    let mut listed = Vec::new();
    for (k, b) in batches.iter().enumerate() {
        let bytes: Vec<u8> = b.x.iter().flat_map(|v| ((v - mean) / std).to_le_bytes()).collect();
        std::fs::write(dir.join(format!("obs-{k}.f32")), bytes).unwrap();
        let traces: Vec<Value> = (0..b.len())
            .map(|i| {
                let choices: Vec<&[f32]> = b.target(i).chunks_exact(CHOICE_WIDTH).collect();
                json!({
                    "positions": choices.iter().map(|c| c[0] as usize).collect::<Vec<_>>(),
                    "choices": choices.iter().map(|c| [c[1], c[2], c[3]]).collect::<Vec<_>>(),
                })
            })
            .collect();
        listed.push(json!({ "traces": traces }));
    }
    let spec = json!({
        "config": by_name(config).unwrap(),
        "layout": data["layout"]["addresses"],
        "observation": data["observation"],
        "batches": listed,
    });
    std::fs::write(dir.join("batches.json"), serde_json::to_vec(&spec).unwrap()).unwrap();
}

/// (median step seconds, median forward seconds, parameters) of our step
/// in `precision`.
pub fn ours(model: &EtalumisModel, batches: &[Batch], steps: usize, precision: Precision) -> (f64, f64, usize) {
    model_steps::as_one_rank(precision, || ours_in(model, batches, steps))
}

fn ours_in(model: &EtalumisModel, batches: &[Batch], steps: usize) -> (f64, f64, usize) {
    let device = Device::flex().autodiff();
    let net = model.build(&device).unwrap();
    let tensors = params::inventory(&net).unwrap();
    let (mut values, _) = params::initial(&tensors, model.weight_init(), 1);
    let mut net = params::with_values(net, &values, &device);
    let lengths: Vec<usize> = values.iter().map(Vec::len).collect();
    let mut optimizer = Optimizer::new(Rule::ADAM, None, &lengths);
    let mut grads: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0; n]).collect();
    let (mut step_times, mut forward_times) = (Vec::new(), Vec::new());
    for k in 0..steps + 2 {
        let t = Instant::now();
        let context = StepContext { seed: 1, epoch: 0, step: k as u64, rank: 0 };
        let loss = model.loss(&net, &batches[k % batches.len()], &context, &device).unwrap();
        let forward = t.elapsed().as_secs_f64();
        let g = loss.backward();
        let present = params::gradients(&net, &g, |i, v| grads[i].copy_from_slice(v));
        let views: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
        let mut slices: Vec<&mut [f32]> = values.iter_mut().map(Vec::as_mut_slice).collect();
        optimizer.step_where(1e-3, &mut slices, &views, &present);
        net = params::with_values(net, &values, &device);
        if k >= 2 {
            step_times.push(t.elapsed().as_secs_f64());
            forward_times.push(forward);
        }
    }
    (median(step_times), median(forward_times), lengths.iter().sum())
}

/// The PyTorch peer's JSON line (`bench/peers/torch_etalumis.py` over the
/// batches [`export`] wrote to `dir`), bf16 under autocast.
pub fn peer(dir: &Path, steps: usize, threads: usize, precision: Precision) -> Option<Value> {
    let mut command = e2e::peer_command("torch_etalumis.py")?;
    command.args([
        "--batches",
        dir.to_str().unwrap(),
        "--steps",
        &steps.to_string(),
        "--threads",
        &threads.to_string(),
        "--precision",
        precision.name(),
    ]);
    let output = e2e::output(&mut command).ok()?;
    if !output.status.success() {
        eprintln!("torch_etalumis.py failed: {}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    serde_json::from_slice(&output.stdout).ok()
}

/// `simgen traces` on 2 ranks into `out`.
pub fn generate(out: &Path, traces: usize) {
    let (traces, out) = (traces.to_string(), out.to_str().unwrap().to_owned());
    let args = ["traces", "--out", &out, "--traces", &traces, "--files", "2", "--seed", "1"];
    let result = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
}
