//! The Etalumis network's training speed, on 2 ranks of the
//! `trainer` binary over traces `simgen traces` writes:
//!
//! 1. traces per second and the step-time split with type-sorted, bucketed
//!    minibatches (`--buckets 16`, Baydin et al.'s scheme) against random
//!    minibatches of shuffled traces (`--buckets 0`) on the same data,
//!    alternating in the same run: the gain the paper measured (up to 50×
//!    on its traces);
//! 2. the gradient values the bitvector exchange reduced against a dense
//!    allreduce of every tensor at every step, in bytes per step;
//! 3. one training step of the `small` network, then of the `paper` one
//!    (fewer steps: seconds each), on one rank (loss, backward, gradients
//!    read out, Adam, parameters written back) over 6 bucketed batches of
//!    those traces, against the same network and algorithm in PyTorch on
//!    the same batches and threads (`bench/peers/torch_etalumis.py`, in the
//!    venv of `bench/setup-peers.sh`), alternating in the same run.
//!
//! ```sh
//! bash bench/setup-peers.sh
//! cargo bench -p stagehand-trainer --bench etalumis
//! ```
//! `STAGEHAND_BENCH_TRACES` (2000), `STAGEHAND_BENCH_BATCH` (16 per rank),
//! `STAGEHAND_BENCH_REPS` (3: the two batchings alternate, medians
//! reported).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use e2e::median;
use serde_json::Value;
use trainer::kernels::Precision;

#[path = "support/etalumis_steps.rs"]
mod etalumis_steps;
#[path = "support/model_steps.rs"]
mod model_steps;

use etalumis_steps::{STEP_BATCHES, export, generate, model_and_batches};

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
    let traces = bench_rows::count("STAGEHAND_BENCH_TRACES", 2000);
    let batch = bench_rows::count("STAGEHAND_BENCH_BATCH", 16);
    let reps = bench_rows::repetitions(3);
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

    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 10);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let small = step_comparison(&data, dir.path(), ("small", batch, steps), reps, threads);
    // A `paper` step is seconds on two cores: fewer of them.
    let paper = step_comparison(&data, dir.path(), ("paper", batch, steps.min(3)), reps, threads);
    let rows = [
        step_row("etalumis-step", "small", batch, &small),
        step_row("etalumis-paper-step", "paper", batch, &paper),
        Row::new("sorted-vs-random", format!("2 ranks, type-sorted bucketed minibatches: {sorted:.1} traces/s"))
            .peer(format!("random minibatches: {random:.1}"))
            .ratio(format!("{:.2}×", sorted / random))
            .target("(the paper: up to 50×, mostly I/O)", None),
        Row::new(
            "bitvector-exchange",
            format!("bitvector gradient exchange: {:.2} MB per step", share * parameters * 4.0 / 1e6),
        )
        .peer(format!("dense allreduce of every tensor: {:.2} MB", parameters * 4.0 / 1e6))
        .ratio(format!("{:.0} %", 100.0 * share)),
    ];
    bench_rows::record(
        "etalumis",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench etalumis"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Our step of configuration `config` on one rank against PyTorch's, on the
/// same `STEP_BATCHES` bucketed batches of `data`, alternating `reps` times.
fn step_comparison(
    data: &Path,
    dir: &Path,
    (config, batch, steps): (&str, usize, usize),
    reps: usize,
    threads: usize,
) -> e2e::PeerComparison {
    let (model, batches) = model_and_batches(data, config, batch);
    let exported = dir.join(format!("batches-{config}"));
    std::fs::create_dir_all(&exported).unwrap();
    export(&model, config, &batches, &exported);
    println!("# etalumis {config} step, one rank, {STEP_BATCHES} bucketed batches of {batch}, {threads} threads");
    e2e::alternate_with_peer(
        &format!("etalumis-{config}"),
        reps,
        || etalumis_steps::ours(&model, &batches, steps, Precision::F32),
        || etalumis_steps::peer(&exported, steps, threads, Precision::F32),
    )
    .unwrap_or_else(|| panic!("the PyTorch peer did not run (above): no rows recorded"))
}

/// The row of one configuration's step comparison.
fn step_row(id: &str, config: &str, batch: usize, comparison: &e2e::PeerComparison) -> Row {
    let ratio = comparison.step_ratio();
    Row::new(
        id,
        format!("Etalumis `{config}` step, 1 rank, bucketed batches of {batch} traces: {:.3} s", comparison.ours_step),
    )
    .peer(format!(
        "PyTorch {}, same network and algorithm: {:.3} s",
        comparison.peer["torch"].as_str().unwrap(),
        comparison.peer_step
    ))
    .time_ratio_at_most(ratio, 0.9)
}
