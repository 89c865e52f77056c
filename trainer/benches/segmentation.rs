//! Segmentation models' training speed.
//!
//! 1. One training step of the `small` Tiramisu and DeepLabv3+ on one rank
//!    (forward, backward, gradients read out, Adam, parameters written
//!    back: the trainer's per-step work without the allreduce) on random
//!    16-channel 112×208 fields, against the same networks in PyTorch on
//!    the same number of CPU threads (`bench/peers/torch_segmentation.py`,
//!    in the venv of `bench/setup-peers.sh`), alternating in the same run.
//! 2. The `trainer` binary under `mpirun` on 2 ranks on simulated climate
//!    data: samples/s and the step-time split (data wait, compute,
//!    communication, optimiser).
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench segmentation
//! ```
//! `STAGEHAND_BENCH_BATCH` (2), `STAGEHAND_BENCH_STEPS` (10),
//! `STAGEHAND_BENCH_REPS` (3: peer and us alternate, medians reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use serde_json::Value;
use trainer::kernels::Precision;
use trainer::models::segmentation::Network;
use trainer::models::segmentation::deeplab::DeeplabConfig;
use trainer::models::segmentation::tiramisu::TiramisuConfig;

#[path = "support/model_steps.rs"]
mod model_steps;
#[path = "support/segmentation_steps.rs"]
mod segmentation_steps;

use segmentation_steps::FIELD;

fn compare<N: Network>(config: &N, batch: usize, steps: usize, reps: usize, threads: usize) -> e2e::PeerComparison {
    let model = N::MODEL;
    e2e::alternate_with_peer(
        model,
        reps,
        || segmentation_steps::segmentation(config, batch, steps, Precision::F32),
        || segmentation_steps::peer(model, batch, steps, threads, Precision::F32),
    )
    .unwrap_or_else(|| panic!("the PyTorch peer of {model} did not run (above): no rows recorded"))
}

/// A step-time row against PyTorch, held to 0.9× (every model at most
/// 0.9× its peer's step on the host measured on).
fn step_row(id: &str, what: &str, comparison: &e2e::PeerComparison) -> Row {
    let ratio = comparison.step_ratio();
    Row::new(id, format!("{what}: {:.3} s", comparison.ours_step))
        .peer(format!("PyTorch {}: {:.3} s", comparison.peer["torch"].as_str().unwrap(), comparison.peer_step))
        .time_ratio_at_most(ratio, 0.9)
}

fn trainer_run(model: &str, data: &Path, batch: usize) -> Value {
    let batch = batch.to_string();
    let args = ["train", "--model", model, "--config", "small", "--data", data.to_str().unwrap()];
    let rest = ["--epochs", "2", "--batch", &batch, "--optimizer", "adam", "--workers", "2"];
    let all: Vec<&str> = args.iter().chain(&rest).copied().collect();
    let out = e2e::mpirun(2, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The bench on a pool thread, as the trainer binary runs.
fn main() {
    // Before the pool's threads start (they keep the arena they first get).
    trainer::allocator::keep_freed_memory();
    trainer::kernels::on_pool(|| {
        // The kernels `trainer train` would run here, measured as it does.
        println!("# kernels: {}", trainer::kernels::calibrate::calibrate().line());
        bench()
    });
}

fn bench() {
    let batch = bench_rows::count("STAGEHAND_BENCH_BATCH", 2);
    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 10);
    let reps = bench_rows::repetitions(3);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (h, w) = FIELD;
    println!(
        "# segmentation step time, small configurations, {h}x{w}x16, batch {batch}, {threads} threads, {reps} reps of {steps} steps"
    );
    let tiramisu = compare(&TiramisuConfig::small(), batch, steps, reps, threads);
    let deeplab = compare(&DeeplabConfig::small(), batch, steps, reps, threads);

    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_climate(dir.path(), 40, 16, 5);
    let mut waits = Vec::new();
    for model in ["tiramisu", "deeplabv3plus"] {
        let report = trainer_run(model, &data, batch);
        waits.push(report["fractions"][0].as_f64().unwrap());
        let f = &report["fractions"];
        println!(
            "{model} trainer, 2 ranks x batch {batch}, 2 epochs of {} steps: {:.2} samples/s; data wait {:.2}% compute {:.1}% comm {:.1}% optimizer {:.1}%",
            report["steps_per_epoch"],
            report["samples_per_sec"].as_f64().unwrap(),
            100.0 * f[0].as_f64().unwrap(),
            100.0 * f[1].as_f64().unwrap(),
            100.0 * f[2].as_f64().unwrap(),
            100.0 * f[3].as_f64().unwrap(),
        );
    }
    let rows = [
        step_row("tiramisu-step", &format!("Tiramisu `small` step, batch {batch}, {h} × {w} × 16"), &tiramisu),
        step_row("deeplab-step", &format!("DeepLabv3+ `small` step, batch {batch}, {h} × {w} × 16"), &deeplab),
        Row::new(
            "data-wait",
            format!(
                "2 ranks × batch {batch}, data wait: {:.2} % of step time (Tiramisu), {:.2} % (DeepLabv3+)",
                100.0 * waits[0],
                100.0 * waits[1]
            ),
        )
        .target("< 2 %", Some(waits.iter().all(|&w| w < 0.02))),
    ];
    bench_rows::record(
        "segmentation",
        &format!(
            "STAGEHAND_BENCH_REPS={reps} STAGEHAND_BENCH_STEPS={steps} cargo bench -p stagehand-trainer --bench segmentation"
        ),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
