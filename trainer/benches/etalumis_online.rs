//! Online training against training from trace stores: traces per second
//! into the Etalumis network when the ranks' loader workers simulate each
//! trace as it is read (`trainer train etalumis --online`, Baydin et al.
//! SC19, Sec. IV-D) and when they read the same traces from the stores
//! `simgen traces` wrote (trace `i` of `--online-seed 1` is trace `i` of
//! `simgen traces --seed 1`). Both with random batches (`--buckets 0` for
//! the stores: online traces come in no sorted order), the `small`
//! network, 2 ranks, one epoch, alternating in the same run; the data-wait
//! share says whether simulating hides behind the steps.
//!
//! ```sh
//! cargo bench -p stagehand-trainer --bench etalumis_online
//! ```
//! `STAGEHAND_BENCH_TRACES` (640 per epoch), `STAGEHAND_BENCH_REPS` (3, medians).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use e2e::median;

const NOISE: &str = "0.05";
const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

/// (traces per second, data-wait share) of one training run with `source`.
fn train(source: &[&str]) -> [f64; 2] {
    let args: Vec<&str> = ["train", "--model", "etalumis", "--config", "small"]
        .into_iter()
        .chain(source.iter().copied())
        .chain(["--epochs", "1", "--batch", "16", "--optimizer", "adam", "--lr", "0.004", "--seed", "3"])
        .collect();
    let report = e2e::trainer_report(&e2e::mpirun(2, &[], Path::new(TRAINER), &args));
    let epoch = &report["epochs"][0];
    let times = &epoch["times"];
    let total: f64 =
        ["data_wait", "compute", "communication", "optimizer"].iter().map(|k| times[*k].as_f64().unwrap()).sum();
    [epoch["samples_per_sec"].as_f64().unwrap(), times["data_wait"].as_f64().unwrap() / total]
}

fn main() {
    let traces = bench_rows::count("STAGEHAND_BENCH_TRACES", 640);
    let reps = bench_rows::repetitions(3);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("traces");
    let (count, out) = (traces.to_string(), data.to_str().unwrap().to_owned());
    let args = ["traces", "--out", &out, "--traces", &count, "--files", "2", "--seed", "1", "--noise", NOISE];
    let made = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(made.status.success(), "simgen: {}", String::from_utf8_lossy(&made.stderr));
    let stores = ["--data", out.as_str(), "--val-fraction", "0", "--buckets", "0"];
    let online = ["--online", count.as_str(), "--online-seed", "1", "--online-noise", NOISE];
    println!("# {traces} traces, `small` network, 2 ranks, {reps} runs each, alternating");
    let (mut from_stores, mut simulated) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        from_stores.push(train(&stores));
        simulated.push(train(&online));
    }
    let pick = |runs: &[[f64; 2]], i: usize| median(runs.iter().map(|r| r[i]).collect());
    let (stores_rate, stores_wait) = (pick(&from_stores, 0), pick(&from_stores, 1));
    let (online_rate, online_wait) = (pick(&simulated, 0), pick(&simulated, 1));
    println!(
        "online {online_rate:.1} traces/s (data wait {:.1} %); stores {stores_rate:.1} (data wait {:.1} %); {:.2}x",
        100.0 * online_wait,
        100.0 * stores_wait,
        online_rate / stores_rate
    );
    let rows = [Row::new(
        "online-vs-stores",
        format!(
            "online training, 2 ranks simulating {traces} tau traces an epoch into the `small` network: \
             {online_rate:.1} traces/s, data wait {:.1} % of the epoch",
            100.0 * online_wait
        ),
    )
    .peer(format!(
        "the same traces read from `simgen traces` stores, random batches: {stores_rate:.1} traces/s, data wait {:.1} %",
        100.0 * stores_wait
    ))
    .ratio(format!("{:.2}×", online_rate / stores_rate))
    .target("(none set; the simulator should hide behind the steps)", None)];
    bench_rows::record(
        "etalumis-online",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench etalumis_online"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
