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

#[path = "support/cosmogan_steps.rs"]
mod cosmogan_steps;
#[path = "support/model_steps.rs"]
mod model_steps;

use cosmogan_steps::{ours, peer};
use trainer::kernels::Precision;

fn step_row(config: &str, batch: usize, steps: usize, reps: usize, threads: usize) -> Row {
    let label = format!("cosmogan-{config}");
    println!("# {label} step time, batch {batch}, {threads} threads");
    let comparison = e2e::alternate_with_peer(
        &label,
        reps,
        || ours(config, batch, steps, Precision::F32),
        || peer(config, batch, steps, threads, Precision::F32),
    )
    .unwrap_or_else(|| panic!("the PyTorch peer did not run (above): no rows recorded"));
    let ratio = comparison.step_ratio();
    Row::new(format!("{label}-step"), format!("CosmoGAN `{config}` step, batch {batch}: {:.3} s", comparison.ours_step))
        .peer(format!("PyTorch {}: {:.3} s", comparison.peer["torch"].as_str().unwrap(), comparison.peer_step))
        .time_ratio_at_most(ratio, 1.0)
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
