//! Inference compilation against the MCMC it replaces, on the tau
//! simulator: effective samples per second of importance sampling with the
//! trained Etalumis network (`trainer infer`, (Σw)²/Σw² per observation)
//! against lightweight Metropolis-Hastings chains on the same observations
//! (`--engine rmh`: the smallest autocorrelation ESS of the decay channel,
//! px, py and pz over the chains' kept states), each divided by its own seconds. Baydin et
//! al. (SC19, §6.4) report IC 230× faster than RMH on their simulator.
//!
//! The network is the `small` one trained here for a few epochs on traces
//! `simgen traces` writes with 50 MeV calorimeter noise (the setting of the
//! tests, where weights spread); both engines run in one `trainer infer
//! --engine both` per repetition, one process.
//!
//! ```sh
//! cargo bench -p stagehand-trainer --bench etalumis_inference
//! ```
//! `STAGEHAND_BENCH_TRACES` (2000 training traces), `STAGEHAND_BENCH_COUNT`
//! (10 observations), `STAGEHAND_BENCH_SAMPLES` (100 importance samples),
//! `STAGEHAND_BENCH_STEPS` (2000 steps per chain, 4 chains, burn-in 500),
//! `STAGEHAND_BENCH_REPS` (3, medians).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use bench_rows::Row;
use e2e::median;
use serde_json::Value;

const NOISE: &str = "0.05";
const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

fn traces(out: &Path, count: usize, seed: u64) {
    let (count, seed, out) = (count.to_string(), seed.to_string(), out.to_str().unwrap().to_owned());
    let args = ["traces", "--out", &out, "--traces", &count, "--files", "2", "--seed", &seed, "--noise", NOISE];
    let result = e2e::mpirun(2, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
}

/// (IC effective samples per second, RMH's, IC mean ESS, RMH mean ESS) of
/// one `trainer infer --engine both`.
fn infer(checkpoint: &Path, val: &Path, report: &Path, (count, samples, steps): (usize, usize, usize)) -> [f64; 4] {
    let (count, samples, steps) = (count.to_string(), samples.to_string(), steps.to_string());
    let args = ["infer", "--engine", "both", "--checkpoint", checkpoint.to_str().unwrap()]
        .into_iter()
        .chain(["--observations", val.to_str().unwrap(), "--count", &count, "--samples", &samples])
        .chain(["--steps", &steps, "--burn-in", "500", "--chains", "4", "--noise", NOISE])
        .chain(["--report", report.to_str().unwrap()]);
    let output = e2e::output(std::process::Command::new(TRAINER).args(args)).unwrap();
    assert!(output.status.success(), "trainer infer: {}", String::from_utf8_lossy(&output.stderr));
    let results: Vec<Value> = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    let total = |f: &dyn Fn(&Value) -> f64| results.iter().map(f).sum::<f64>();
    let ic_ess = total(&|r| r["network"]["ess"].as_f64().unwrap());
    let ic_seconds = total(&|r| r["network"]["seconds"].as_f64().unwrap());
    let rmh_ess = total(&|r| r["rmh"]["posterior"]["ess"].as_f64().unwrap());
    let rmh_seconds = total(&|r| r["rmh"]["seconds"].as_f64().unwrap());
    let n = results.len() as f64;
    [ic_ess / ic_seconds, rmh_ess / rmh_seconds, ic_ess / n, rmh_ess / n]
}

fn main() {
    let train_traces = bench_rows::count("STAGEHAND_BENCH_TRACES", 2000);
    let count = bench_rows::count("STAGEHAND_BENCH_COUNT", 10);
    let samples = bench_rows::count("STAGEHAND_BENCH_SAMPLES", 100);
    let steps = bench_rows::count("STAGEHAND_BENCH_STEPS", 2000);
    let reps = bench_rows::repetitions(3);
    let dir = tempfile::tempdir().unwrap();
    let (data, val, checkpoint) = (dir.path().join("train"), dir.path().join("val"), dir.path().join("checkpoint"));
    traces(&data, train_traces, 1);
    traces(&val, count.max(10), 2);
    let args = ["train", "--model", "etalumis", "--config", "small", "--data", data.to_str().unwrap()]
        .into_iter()
        .chain(["--val-fraction", "0", "--epochs", "4", "--batch", "16", "--optimizer", "adam", "--lr", "0.004"])
        .chain(["--checkpoint", checkpoint.to_str().unwrap()]);
    let args: Vec<&str> = args.collect();
    e2e::trainer_report(&e2e::mpirun(2, &[], Path::new(TRAINER), &args));
    println!(
        "# IC ({samples} importance samples) against RMH (4 chains × {steps} steps, burn-in 500) on {count} observations, {reps} runs"
    );
    let runs: Vec<[f64; 4]> = (0..reps)
        .map(|rep| infer(&checkpoint, &val, &dir.path().join(format!("infer-{rep}.json")), (count, samples, steps)))
        .collect();
    let pick = |i: usize| median(runs.iter().map(|r| r[i]).collect());
    let (ic, rmh, ic_ess, rmh_ess) = (pick(0), pick(1), pick(2), pick(3));
    println!(
        "IC {ic:.1} effective samples/s (mean ESS {ic_ess:.2}); RMH {rmh:.1} (mean ESS {rmh_ess:.1}); {:.2}x",
        ic / rmh
    );
    let rows = [Row::new(
        "ic-vs-rmh",
        format!(
            "inference compilation, `small` network trained 4 epochs on {train_traces} traces, {samples} samples per \
             observation: {ic:.1} effective samples/s"
        ),
    )
    .peer(format!("RMH, 4 chains × {steps} steps (burn-in 500), smallest latent's ESS: {rmh:.1} effective samples/s"))
    .ratio(format!("{:.2}×", ic / rmh))
    .target("(the paper: 230×)", None)];
    bench_rows::record(
        "etalumis-inference",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-trainer --bench etalumis_inference"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
