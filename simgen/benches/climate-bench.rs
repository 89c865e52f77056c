//! `simgen climate` benchmark: full-size samples (768 × 1152 ×
//! 16) on 2 ranks, against the target of at least 4 samples/s, with
//! the time split between synthesis and HDF5 writing and the peak memory
//! of a rank; and one rank against the same steps in NumPy and h5py
//! (bench/peers/numpy_climate.py), in the same run.
//!
//! ```sh
//! cargo bench -p stagehand-simgen --bench climate-bench
//! ```
//! `STAGEHAND_BENCH_REPS` (default 3), `STAGEHAND_BENCH_SAMPLES` (per rep
//! and rank, default 8), `STAGEHAND_BENCH_DIR` (default
//! /dev/shm/stagehand-climate-bench: node-local memory, where a job
//! generates; the bench removes what it wrote).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use bench_rows::Row;
use serde_json::Value;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The report of `simgen climate --samples samples` on `ranks` ranks.
fn ours(dir: &Path, ranks: usize, samples: usize) -> Value {
    let _ = std::fs::remove_dir_all(dir);
    let samples = samples.to_string();
    let args = ["climate", "--out", dir.to_str().unwrap(), "--samples", &samples, "--seed", "7"];
    let out = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(dir);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn peer(dir: &Path, samples: usize) -> Option<Value> {
    let _ = std::fs::remove_dir_all(dir);
    let out = e2e::peer_command("numpy_climate.py")?
        .args(["768", "1152", &samples.to_string(), dir.to_str()?])
        .output()
        .ok()?;
    let _ = std::fs::remove_dir_all(dir);
    if !out.status.success() {
        eprintln!("numpy peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last()?).ok()
}

fn field(report: &Value, name: &str) -> f64 {
    report[name].as_f64().unwrap_or_else(|| panic!("the report has no {name}: {report}"))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let reps = bench_rows::repetitions(3);
    let samples = bench_rows::count("STAGEHAND_BENCH_SAMPLES", 8);
    let dir = PathBuf::from(
        std::env::var("STAGEHAND_BENCH_DIR").unwrap_or_else(|_| "/dev/shm/stagehand-climate-bench".into()),
    );
    let (mut two_rate, mut two_synth, mut two_write, mut rss) = (Vec::new(), Vec::new(), Vec::new(), 0f64);
    let (mut two_hash, mut two_stats) = (Vec::new(), Vec::new());
    let (mut one_sample, mut peer_sample, mut peer_synth, mut peer_write) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let two = ours(&dir.join("two"), 2, 2 * samples);
        two_rate.push(field(&two, "samples_per_second"));
        two_synth.push(field(&two, "synthesis_seconds_per_sample"));
        two_write.push(field(&two, "writing_seconds_per_sample"));
        two_hash.push(field(&two, "manifest_hash_seconds_per_sample"));
        two_stats.push(field(&two, "statistics_seconds_per_sample"));
        rss = rss.max(field(&two, "peak_rss_bytes_max_rank"));
        let one = ours(&dir.join("one"), 1, samples);
        one_sample.push(field(&one, "seconds") / samples as f64);
        if let Some(p) = peer(&dir.join("peer"), samples) {
            let (s, w) = (field(&p, "synthesis_seconds_per_sample"), field(&p, "writing_seconds_per_sample"));
            peer_synth.push(s);
            peer_write.push(w);
            peer_sample.push(s + w);
        }
        println!("rep {rep} done");
    }
    println!(
        "\n| 768 × 1152 × 16, 2 ranks | samples/s | synthesis | HDF5 writing | manifest hash | statistics | peak RSS/rank |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| simgen climate (s per sample and rank) | {:.2} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} MiB |",
        median(two_rate.clone()),
        median(two_synth.clone()),
        median(two_write.clone()),
        median(two_hash.clone()),
        median(two_stats.clone()),
        rss / 1048576.0
    );
    let one = median(one_sample.clone());
    println!("\none rank: simgen {one:.3} s per sample (whole run)");
    println!("raw: 2-rank samples/s {two_rate:?}, 1-rank s/sample {one_sample:?}, peer s/sample {peer_sample:?}");
    if peer_sample.is_empty() {
        panic!("the NumPy + h5py peer did not run (see the message above): no rows recorded");
    }
    let p = median(peer_sample.clone());
    println!(
        "NumPy + h5py peer: {p:.3} s per sample (synthesis {:.3}, writing {:.3}); simgen is {:.2}x faster",
        median(peer_synth.clone()),
        median(peer_write.clone()),
        p / one
    );
    let rate = median(two_rate.clone());
    let rows = [
        Row::new("two-ranks", format!("full-size samples (768 × 1152 × 16) on 2 ranks: {rate:.2} samples/s"))
            .target("≥ 4 samples/s", Some(rate >= 4.0)),
        Row::new("one-rank-vs-numpy", format!("one rank: {one:.3} s per sample"))
            .peer(format!("the same steps in NumPy and h5py: {p:.3} s"))
            .ratio(format!("{:.2}×", p / one)),
    ];
    bench_rows::record(
        "climate-bench",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-simgen --bench climate-bench"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
