//! HEP-CNN's speed.
//!
//! 1. One training step (forward, backward, gradients read out, Adam,
//!    parameters written back) of the `small` network (64×64, 32 filters)
//!    and of the `paper` network (224×224, 128 filters) on one rank, on
//!    random images, against the same network in PyTorch on the same
//!    number of CPU threads (`bench/peers/torch_hepcnn.py`, in the venv of
//!    `bench/setup-peers.sh`), alternating in the same run.
//! 2. Time to a training loss of 0.1 on 1, 2 and 4 ranks, as Kurth et al.
//!    2018 (Fig. 3) measure HEP-CNN: `simgen jets` events, the `trainer`
//!    binary with a fixed batch per rank (weak scaling, as the seed's node
//!    batch of 128), the wall time until an epoch's mean training loss is
//!    at most 0.1; the weak-scaling efficiency of the same runs, and the
//!    strong-scaling efficiency at a global batch of 16.
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench hepcnn
//! ```
//! `STAGEHAND_BENCH_STEPS` (10), `STAGEHAND_BENCH_REPS` (3: peer and us
//! alternate, medians reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use serde_json::Value;
use trainer::models::hepcnn::HepCnnConfig;

#[path = "support/hepcnn_steps.rs"]
mod hepcnn_steps;
#[path = "support/model_steps.rs"]
mod model_steps;

use hepcnn_steps::{ours, peer};
use trainer::kernels::Precision;

/// The target training loss of Kurth et al.'s time-to-solution runs.
const TARGET_LOSS: f64 = 0.1;

fn step_row(config: &HepCnnConfig, batch: usize, steps: usize, reps: usize, threads: usize) -> Row {
    let label = format!("hepcnn-{}", config.name);
    println!(
        "# {label} step time, {}x{}x3, {} filters, batch {batch}, {threads} threads",
        config.input[0], config.input[1], config.filters
    );
    let comparison = e2e::alternate_with_peer(
        &label,
        reps,
        || ours(config, batch, steps, Precision::F32),
        || peer(config, batch, steps, threads, Precision::F32),
    )
    .unwrap_or_else(|| panic!("the PyTorch peer did not run (above): no rows recorded"));
    let ratio = comparison.step_ratio();
    Row::new(
        format!("{label}-step"),
        format!("HEP-CNN `{}` step, batch {batch}: {:.3} s", config.name, comparison.ours_step),
    )
    .peer(format!("PyTorch {}: {:.3} s", comparison.peer["torch"].as_str().unwrap(), comparison.peer_step))
    .time_ratio_at_most(ratio, 1.0)
}

/// Seconds until the first epoch whose mean training loss is at most the
/// target (`None` if no epoch reached it), and that epoch.
fn time_to_target(report: &Value) -> Option<(f64, u64)> {
    let mut seconds = report["first_batch_secs"].as_f64().unwrap_or(0.0);
    for epoch in report["epochs"].as_array()? {
        seconds += epoch["seconds"].as_f64()?;
        if epoch["train_loss"].as_f64()? <= TARGET_LOSS {
            return Some((seconds, epoch["epoch"].as_u64()?));
        }
    }
    None
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
    let mut rows = vec![
        step_row(&trainer::models::hepcnn::small(), 16, steps, reps, threads),
        step_row(&trainer::models::hepcnn::paper(), 4, steps.min(5), reps, threads),
    ];

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("jets");
    let args = ["jets", "--out", data.to_str().unwrap(), "--events", "4000", "--per-file", "500", "--size", "64"];
    let generated = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(generated.status.success(), "simgen: {}", String::from_utf8_lossy(&generated.stderr));
    let batch = 8;
    let (mut times, mut rates) = (Vec::new(), Vec::new());
    for ranks in [1usize, 2, 4] {
        let args = [
            "train",
            "--model",
            "hepcnn",
            "--config",
            "small",
            "--data",
            data.to_str().unwrap(),
            "--epochs",
            "8",
            "--batch",
            "8",
            "--optimizer",
            "adam",
            "--lr",
            "0.001",
            "--workers",
            "1",
            "--seed",
            "1",
        ];
        let out = e2e::mpirun(ranks, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &args);
        let report = e2e::trainer_report(&out);
        let reached = time_to_target(&report);
        let rate = report["samples_per_sec"].as_f64().unwrap();
        println!(
            "hepcnn, {ranks} rank(s), batch {batch} per rank: {reached:?} (seconds, epoch) to training loss \
             {TARGET_LOSS}; {rate:.1} samples/s"
        );
        times.push((ranks, reached));
        rates.push((ranks, rate));
    }
    let shown: Vec<String> = times
        .iter()
        .map(|(ranks, reached)| match reached {
            Some((seconds, epoch)) => {
                format!("{ranks} rank{}: {seconds:.0} s (epoch {epoch})", if *ranks == 1 { "" } else { "s" })
            }
            None => format!("{ranks} ranks: not within 8 epochs"),
        })
        .collect();
    rows.push(
        Row::new(
            "hepcnn-time-to-loss",
            format!(
                "time to training loss {TARGET_LOSS}, `small`, batch {batch} per rank, 2 cores: {}",
                shown.join(", ")
            ),
        )
        .target("(the seed's Fig. 3; ranks share 2 cores here)", None),
    );
    // Weak scaling (a fixed batch per rank): samples/s on N ranks over N
    // times one rank's, as trainer::scaling computes it from reports.
    let one = rates[0].1;
    let efficiency: Vec<String> = rates[1..]
        .iter()
        .map(|&(ranks, rate)| format!("{ranks} ranks {:.0} %", 100.0 * rate / (ranks as f64 * one)))
        .collect();
    rows.push(
        Row::new(
            "hepcnn-weak-scaling",
            format!("weak scaling efficiency, `small`, batch {batch} per rank, 2 cores: {}", efficiency.join(", ")),
        )
        .target("(4 ranks on 2 cores cannot scale; a cluster's figure needs a cluster)", None),
    );
    // Strong scaling (a fixed global batch of 16): samples/s on N ranks
    // with 16/N each over N times one rank's with 16, two epochs each.
    let strong_rate = |ranks: usize| {
        let batch = (16 / ranks).to_string();
        let args = [
            "train",
            "--model",
            "hepcnn",
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
            "0.001",
            "--workers",
            "1",
        ];
        let out = e2e::mpirun(ranks, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &args);
        let rate = e2e::trainer_report(&out)["samples_per_sec"].as_f64().unwrap();
        println!("hepcnn, {ranks} rank(s), global batch 16: {rate:.1} samples/s");
        rate
    };
    let one = strong_rate(1);
    let strong: Vec<String> = [2usize, 4]
        .iter()
        .map(|&ranks| format!("{ranks} ranks {:.0} %", 100.0 * strong_rate(ranks) / (ranks as f64 * one)))
        .collect();
    rows.push(
        Row::new(
            "hepcnn-strong-scaling",
            format!("strong scaling efficiency, `small`, global batch 16, 2 cores: {}", strong.join(", ")),
        )
        .target("(4 ranks on 2 cores cannot scale; a cluster's figure needs a cluster)", None),
    );
    bench_rows::record(
        "hepcnn",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench hepcnn"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
