//! The Etalumis network's training speed (issue P12), on 2 ranks of the
//! `trainer` binary over traces `simgen traces` writes:
//!
//! 1. traces per second and the step-time split with type-sorted, bucketed
//!    minibatches (`--buckets 16`, Baydin et al.'s scheme) against random
//!    minibatches of shuffled traces (`--buckets 0`) on the same data,
//!    alternating in the same run: the gain the paper measured (up to 50×
//!    on its traces);
//! 2. the gradient values the bitvector exchange reduced against a dense
//!    allreduce of every tensor at every step, in bytes per step.
//!
//! ```sh
//! cargo bench -p stagehand-trainer --bench etalumis
//! ```
//! `STAGEHAND_BENCH_TRACES` (2000), `STAGEHAND_BENCH_BATCH` (16 per rank),
//! `STAGEHAND_BENCH_REPS` (3: the two batchings alternate, medians
//! reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use e2e::{env_usize, median};
use serde_json::Value;

/// `simgen traces` on 2 ranks into `out`.
fn generate(out: &Path, traces: usize) {
    let (traces, out) = (traces.to_string(), out.to_str().unwrap().to_owned());
    let args = ["traces", "--out", &out, "--traces", &traces, "--files", "2", "--seed", "1"];
    let result = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
}

/// One epoch on 2 ranks; its report. A whole epoch, because the two
/// batchings differ in which batches are expensive (the sorted order puts
/// the long, rare trace types together at its end), not in what an epoch
/// holds.
fn train(data: &Path, buckets: usize, batch: usize) -> Value {
    let (buckets, batch) = (buckets.to_string(), batch.to_string());
    let data = data.to_str().unwrap();
    let mut args = vec!["train", "--model", "etalumis", "--config", "small", "--data", data, "--val-fraction", "0"];
    args.extend(["--epochs", "1", "--batch", &batch, "--buckets", &buckets, "--optimizer", "adam", "--workers", "1"]);
    e2e::trainer_report(&e2e::mpirun(2, &[], Path::new(env!("CARGO_BIN_EXE_trainer")), &args))
}

fn main() {
    cluster::allocator::keep_freed_memory();
    let traces = env_usize("STAGEHAND_BENCH_TRACES", 2000);
    let batch = env_usize("STAGEHAND_BENCH_BATCH", 16);
    let reps = env_usize("STAGEHAND_BENCH_REPS", 3);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("traces");
    generate(&data, traces);
    println!("# etalumis small, 2 ranks, one epoch of {traces} traces, batch {batch} per rank, {reps} runs each");
    let (mut sorted, mut random) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..reps {
        let report = train(&data, 16, batch);
        sorted.push(report["samples_per_sec"].as_f64().unwrap());
        last = Some(report);
        random.push(train(&data, 0, batch)["samples_per_sec"].as_f64().unwrap());
    }
    let (sorted, random) = (median(sorted), median(random));
    println!("traces/s: type-sorted bucketed {sorted:.2}, random {random:.2}, gain {:.2}x", sorted / random);
    let report = last.unwrap();
    let f = &report["fractions"];
    println!(
        "step split (sorted): data wait {:.2}% compute {:.1}% comm {:.2}% optimizer {:.1}%",
        100.0 * f[0].as_f64().unwrap(),
        100.0 * f[1].as_f64().unwrap(),
        100.0 * f[2].as_f64().unwrap(),
        100.0 * f[3].as_f64().unwrap(),
    );
    let parameters = report["parameters"].as_f64().unwrap();
    let share = report["reduced_gradient_share"].as_f64().unwrap();
    let addresses = &report["model"]["details"]["addresses"];
    println!(
        "gradient exchange: {addresses} address layer sets, {parameters} parameters; bitvector exchange reduced {:.1}% \
         of a dense allreduce: {:.2} MB against {:.2} MB per step",
        100.0 * share,
        share * parameters * 4.0 / 1e6,
        parameters * 4.0 / 1e6,
    );
}
