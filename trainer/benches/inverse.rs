//! The inverse-imaging model's speed.
//!
//! 1. One training step of the `small` network on one rank (forward,
//!    backward, gradients read out, Adam, parameters written back) on
//!    random 16-pattern 32×32 stacks, against the same network in PyTorch
//!    on the same number of CPU threads (`bench/peers/torch_segmentation.py
//!    --model inverse`, in the venv of `bench/setup-peers.sh`), alternating
//!    in the same run.
//! 2. Laanait et al.'s workflow on 2 ranks: `simgen multislice` writes the
//!    samples into the node's storage, then the `trainer` binary trains on
//!    them (`--node-local`): samples/s and the step-time split.
//! 3. Generating a sample on the node against reading it from a shared file
//!    system: the seconds `simgen` took per sample on this node (measured,
//!    at a larger size: 8×8 positions of 64×64 patterns), against the
//!    seconds the same bytes take at a node's share of a shared file
//!    system's bandwidth (`STAGEHAND_BENCH_PFS_GBS`, default 0.54 GB/s:
//!    Summit's 2.5 TB/s GPFS over its 4,608 nodes when all read at once).
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench inverse
//! ```
//! `STAGEHAND_BENCH_BATCH` (4), `STAGEHAND_BENCH_STEPS` (10),
//! `STAGEHAND_BENCH_REPS` (3: peer and us alternate, medians reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use serde_json::Value;
use trainer::kernels::Precision;

#[path = "support/model_steps.rs"]
mod model_steps;
#[path = "support/segmentation_steps.rs"]
mod segmentation_steps;

use segmentation_steps::{PATTERN_SIDE as FIELD, PATTERNS};

fn compare(batch: usize, steps: usize, reps: usize, threads: usize) -> e2e::PeerComparison {
    e2e::alternate_with_peer(
        "inverse",
        reps,
        || segmentation_steps::inverse(batch, steps, Precision::F32),
        || segmentation_steps::peer("inverse", batch, steps, threads, Precision::F32),
    )
    .unwrap_or_else(|| panic!("the PyTorch peer did not run (above): no rows recorded"))
}

/// `simgen multislice` on 2 ranks into `out`; its JSON report.
fn generate(out: &Path, samples: usize, grid: &str, scan: &str) -> Value {
    let (samples, out) = (samples.to_string(), out.to_str().unwrap().to_owned());
    let args = [
        "multislice",
        "--grid",
        grid,
        "--sampling",
        "0.17A",
        "--thickness",
        "16A..40A",
        "--offset",
        "none",
        "--scan",
        scan,
        "--seed",
        "1",
        "--out",
        &out,
        "--samples",
        &samples,
    ];
    let result = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
    serde_json::from_slice(&result.stdout).unwrap()
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
    let batch = bench_rows::count("STAGEHAND_BENCH_BATCH", 4);
    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 10);
    let reps = bench_rows::repetitions(3);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("# inverse step time, small configuration, {PATTERNS}x{FIELD}x{FIELD}, batch {batch}, {threads} threads");
    let comparison = compare(batch, steps, reps, threads);

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("node{node}/cbed");
    let generated = generate(&data, 96, "32", "4x4");
    let args = [
        "train",
        "--model",
        "inverse",
        "--config",
        "small",
        "--node-local",
        data.to_str().unwrap(),
        "--epochs",
        "2",
        "--batch",
        &batch.to_string(),
        "--optimizer",
        "adam",
        "--workers",
        "2",
    ];
    let out = e2e::mpirun(2, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &args);
    let report = e2e::trainer_report(&out);
    let f = &report["fractions"];
    let (train_rate, wait) = (report["samples_per_sec"].as_f64().unwrap(), f[0].as_f64().unwrap());
    println!(
        "inverse, generate then train on 2 ranks: simgen {:.3} s/sample; trainer batch {batch}, {} steps per epoch: \
         {:.2} samples/s; data wait {:.2}% compute {:.1}% comm {:.1}% optimizer {:.1}%",
        generated["seconds"].as_f64().unwrap() / 96.0,
        report["steps_per_epoch"],
        report["samples_per_sec"].as_f64().unwrap(),
        100.0 * f[0].as_f64().unwrap(),
        100.0 * f[1].as_f64().unwrap(),
        100.0 * f[2].as_f64().unwrap(),
        100.0 * f[3].as_f64().unwrap(),
    );

    let pfs = std::env::var("STAGEHAND_BENCH_PFS_GBS").map_or(0.54, |v| v.parse().unwrap());
    let larger = dir.path().join("larger");
    let samples = 8;
    let report = generate(&larger, samples, "64", "8x8");
    let per_sample = report["seconds"].as_f64().unwrap() / samples as f64;
    let bytes = report["raw_f32_bytes_per_sample"].as_f64().unwrap();
    println!(
        "inverse, 8x8 positions of 64x64 ({:.2} MB per sample): generating on the node {per_sample:.3} s/sample \
         (2 ranks); reading from a shared file system at {pfs} GB/s per node {:.4} s/sample",
        bytes / 1e6,
        bytes / (pfs * 1e9)
    );
    let ratio = comparison.step_ratio();
    let read = bytes / (pfs * 1e9);
    let rows = [
        Row::new("inverse-step", format!("inverse `small` step, batch {batch}: {:.3} s", comparison.ours_step))
            .peer(format!("PyTorch {}: {:.3} s", comparison.peer["torch"].as_str().unwrap(), comparison.peer_step))
            .time_ratio_at_most(ratio, 0.9),
        Row::new(
            "generate-then-train",
            format!(
                "generate then train on 2 ranks: {train_rate:.1} samples/s, data wait {:.2} % of step time",
                100.0 * wait
            ),
        )
        .target("< 2 %", Some(wait < 0.02)),
        Row::new(
            "generate-or-read",
            format!("a sample generated on the node (8 × 8 × 64², {:.2} MB): {per_sample:.3} s", bytes / 1e6),
        )
        .peer(format!("read at a node's share of Summit's GPFS ({pfs} GB/s): {read:.4} s, computed"))
        .ratio(if read < per_sample {
            format!("reading {:.0}× faster per sample", per_sample / read)
        } else {
            format!("generating {:.1}× faster per sample", read / per_sample)
        })
        .target("(the paper's comparison)", None),
    ];
    bench_rows::record(
        "inverse",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench inverse"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
