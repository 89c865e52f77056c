//! CosmoGAN's speed.
//!
//! 1. One training step (generator forward; the discriminator on real
//!    maps, on generated maps cut from the generator and, frozen, for the
//!    generator's loss; one backward pass; gradients read out; Adam;
//!    parameters written back: the model's own `loss`) of the `small`
//!    networks (64² maps) and of the `paper` networks (256² maps, 17.3 M
//!    parameters) on one rank, on random maps, against the same step in
//!    PyTorch on the same number of CPU threads
//!    (`bench/peers/torch_cosmogan.py`, in the venv of
//!    `bench/setup-peers.sh`), alternating in the same run. The forward
//!    figure is the generator making a batch of maps.
//! 2. Weak scaling (8 maps per rank) and strong scaling (a global batch of
//!    16) of the `trainer` binary on 1 and 2 ranks on `simgen massmaps`
//!    maps, as Kurth et al. 2018 (§V) scale CosmoGAN: samples/s on N ranks
//!    over N times one rank's (weak) and one rank's time over N times N
//!    ranks' (strong).
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench cosmogan
//! ```
//! `STAGEHAND_BENCH_STEPS` (10), `STAGEHAND_BENCH_REPS` (3: peer and us
//! alternate, medians reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use burn::module::Module;
use burn::tensor::{Device, Tensor};
use e2e::median;
use loader::pipeline::Batch;
use serde_json::Value;
use trainer::engine::{ModelChoice, StepContext, TrainModel};
use trainer::models::cosmogan::model::{CosmoGanModel, CosmoGanOptions};
use trainer::models::segmentation::layers::Pass;
use trainer::optim::Rule;

#[path = "support/model_steps.rs"]
mod model_steps;

/// The reference's Adam: lr 2·10⁻⁴, β1 0.5.
const ADAM: Rule = Rule::Adam { beta1: 0.5, beta2: 0.999, epsilon: 1e-8 };

/// (median step seconds, median generator-forward seconds, parameters).
fn ours(config: &str, batch: usize, steps: usize) -> (f64, f64, usize) {
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

fn peer(config: &str, batch: usize, steps: usize, threads: usize) -> Option<Value> {
    let network = trainer::models::cosmogan::by_name(config)?;
    let out = e2e::peer_command("torch_cosmogan.py")?
        .args(["--size", &network.side.to_string(), "--filters", &network.generator_filters.to_string()])
        .args(["--batch", &batch.to_string(), "--steps", &steps.to_string(), "--threads", &threads.to_string()])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("PyTorch peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_slice(out.stdout.split(|&b| b == b'\n').rfind(|l| !l.is_empty())?).ok()
}

fn step_row(config: &str, batch: usize, steps: usize, reps: usize, threads: usize) -> Row {
    let label = format!("cosmogan-{config}");
    println!("# {label} step time, batch {batch}, {threads} threads");
    let comparison =
        e2e::alternate_with_peer(&label, reps, || ours(config, batch, steps), || peer(config, batch, steps, threads))
            .unwrap_or_else(|| panic!("the PyTorch peer did not run (above): no rows recorded"));
    let ratio = comparison.step_ratio();
    Row::new(format!("{label}-step"), format!("CosmoGAN `{config}` step, batch {batch}: {:.3} s", comparison.ours_step))
        .peer(format!("PyTorch {}: {:.3} s", comparison.peer["torch"].as_str().unwrap(), comparison.peer_step))
        .ratio(format!("{ratio:.2}×"))
        .target("≤ 1.0×", Some(ratio <= 1.0))
}

/// Training samples per second of `ranks` ranks with `batch` maps each,
/// two epochs of the `small` configuration (the second's rate, past the
/// first steps' warm-up).
fn rate(data: &Path, ranks: usize, batch: usize) -> f64 {
    let batch = batch.to_string();
    let args = [
        "train",
        "--model",
        "cosmogan",
        "--config",
        "small",
        "--data",
        data.to_str().unwrap(),
        "--epochs",
        "2",
        "--batch",
        &batch,
        "--optimizer",
        "adam",
        "--lr",
        "0.0002",
        "--adam-beta1",
        "0.5",
        "--workers",
        "1",
        "--val-fraction",
        "0",
    ];
    let out = e2e::mpirun(ranks, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &args);
    let report = e2e::trainer_report(&out);
    let rate = report["epochs"][1]["samples_per_sec"].as_f64().unwrap();
    println!("cosmogan, {ranks} rank(s), batch {batch} per rank: {rate:.1} samples/s");
    rate
}

fn main() {
    cluster::allocator::keep_freed_memory();
    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 10);
    let reps = bench_rows::repetitions(3);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = vec![step_row("small", 16, steps, reps, threads), step_row("paper", 2, steps.min(3), reps, threads)];

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("maps");
    let args = ["massmaps", "--out", data.to_str().unwrap(), "--maps", "768", "--per-file", "96", "--size", "64"];
    let generated = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(generated.status.success(), "simgen: {}", String::from_utf8_lossy(&generated.stderr));
    let one = rate(&data, 1, 16);
    let weak = rate(&data, 2, 16) / (2.0 * one);
    let strong = rate(&data, 2, 8) / (2.0 * one);
    rows.push(
        Row::new(
            "cosmogan-scaling",
            format!(
                "`small` on 2 ranks against 1 (2 cores): weak scaling (16 maps per rank) {:.0} %, strong scaling \
                 (global batch 16) {:.0} %",
                100.0 * weak,
                100.0 * strong
            ),
        )
        .target("(the seed's §V figures need a cluster; 2 ranks here share 2 cores)", None),
    );
    bench_rows::record(
        "cosmogan",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench cosmogan"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
