//! `simgen traces` benchmark: traces per second on 2 ranks,
//! including the sort and the LMDB writes, with bytes per trace and peak
//! memory; and the I/O effect Etalumis reports (Baydin et al., SC19,
//! Sec. VI-A): one epoch read through the bucketed sampler from the
//! type-sorted store (consecutive traces) against the same traces read in
//! random order, as a sampler must read a store that is not sorted by
//! type, both from a cold page cache.
//!
//! ```sh
//! cargo bench -p stagehand-simgen --bench traces-bench
//! ```
//! `STAGEHAND_BENCH_REPS` (default 3), `STAGEHAND_BENCH_TRACES` (default
//! 20000, generated per repetition), `STAGEHAND_BENCH_DIR` (default
//! /dev/shm/stagehand-traces-bench: node-local memory, where a job
//! generates), `STAGEHAND_BENCH_IO_DIR` (default target/traces-io-bench: a
//! disk, for the cold reads).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use bench_rows::Row;
use loader::dataset::Dataset;
use loader::lmdb::TraceDataset;
use loader::sampler::{BucketedSampler, DistributedSampler, Remainder};
use serde_json::Value;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");
/// Traces per minibatch when reading (Etalumis trained with 64 per rank).
const BATCH: usize = 64;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn generate(dir: &Path, ranks: usize, traces: usize, files: usize) -> Value {
    let _ = std::fs::remove_dir_all(dir);
    let (traces, files) = (traces.to_string(), files.to_string());
    let args = ["traces", "--out", dir.to_str().unwrap(), "--traces", &traces, "--files", &files, "--seed", "3"];
    let out = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn field(report: &Value, name: &str) -> f64 {
    report[name].as_f64().unwrap_or_else(|| panic!("the report has no {name}: {report}"))
}

/// Empty the page cache (root only); false, said once, if not allowed.
fn drop_caches() -> bool {
    let synced = std::process::Command::new("sync").status().is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// Seconds to read every index of `order` (in order) through the loader's dataset.
fn read_all(dataset: &TraceDataset, order: impl Iterator<Item = usize>) -> f64 {
    let mut x = vec![0f32; dataset.x_len()];
    let mut y = Vec::new();
    let started = Instant::now();
    for i in order {
        y.clear();
        dataset.read_ragged(i, &mut x, &mut y).unwrap();
    }
    started.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let reps = bench_rows::repetitions(3);
    let traces = bench_rows::count("STAGEHAND_BENCH_TRACES", 20_000);
    let dir = PathBuf::from(
        std::env::var("STAGEHAND_BENCH_DIR").unwrap_or_else(|_| "/dev/shm/stagehand-traces-bench".into()),
    );
    let (mut rate, mut simulate, mut stage, mut sort, mut bytes, mut rss) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), 0.0, 0f64);
    for rep in 0..reps {
        let report = generate(&dir, 2, traces, 2);
        rate.push(field(&report, "traces_per_second"));
        simulate.push(field(&report, "simulating_seconds_per_trace"));
        stage.push(field(&report, "staging_seconds_per_trace"));
        sort.push(field(&report, "sorting_seconds_per_trace"));
        bytes = field(&report, "stored_bytes_per_trace");
        rss = rss.max(field(&report, "peak_rss_bytes_max_rank"));
        println!("rep {rep}: {:.0} traces/s", rate[rep]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "\n| {traces} traces, 2 ranks, 2 stores | traces/s | ms per trace and rank: simulate | stage | sort and write | bytes per trace | peak RSS per rank |"
    );
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| simgen traces | {:.0} | {:.3} | {:.3} | {:.3} | {:.0} | {:.0} MiB |",
        median(rate.clone()),
        1e3 * median(simulate.clone()),
        1e3 * median(stage.clone()),
        1e3 * median(sort.clone()),
        bytes,
        rss / 1048576.0
    );
    println!("raw traces/s: {rate:?}");

    // The I/O effect, from a disk with a cold cache.
    let io_dir = PathBuf::from(
        std::env::var("STAGEHAND_BENCH_IO_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../target/traces-io-bench").into()),
    );
    let io_traces = bench_rows::count("STAGEHAND_BENCH_IO_TRACES", 10_000);
    generate(&io_dir, 2, io_traces, 1);
    let store = io_dir.join("traces-00000.lmdb");
    let n = TraceDataset::open(&store).unwrap().len();
    let cold = drop_caches();
    if !cold {
        println!("NOTE: could not drop the page cache (not root?): the reads below are warm");
    }
    // The store is reopened after each drop: pages a process has mapped
    // stay cached while it keeps them mapped.
    let epoch = |order: Vec<usize>| {
        drop_caches();
        read_all(&TraceDataset::open(&store).unwrap(), order.into_iter())
    };
    let (mut sorted, mut random) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let bucketed = BucketedSampler { len: n, buckets: 16, world: 1, rank: 0, seed: rep as u64 };
        sorted.push(epoch(bucketed.batches(0, BATCH).into_iter().flatten().collect()));
        let shuffled = DistributedSampler {
            len: n,
            world: 1,
            rank: 0,
            seed: rep as u64,
            shuffle: true,
            remainder: Remainder::Drop,
        };
        random.push(epoch(shuffled.indices(0)));
    }
    let _ = std::fs::remove_dir_all(&io_dir);
    let (s, r) = (median(sorted.clone()), median(random.clone()));
    let batches = (n / BATCH) as f64;
    println!(
        "\none epoch of {n} traces ({:.1} GB) from a {} cache, batches of {BATCH}:",
        n as f64 * bytes / 1e9,
        if cold { "cold" } else { "warm" }
    );
    println!("| read order | seconds per epoch | ms per batch | MB/s |");
    println!("|---|---|---|---|");
    for (name, t) in
        [("bucketed sampler over the type-sorted store", s), ("random order (a store not sorted by type)", r)]
    {
        println!("| {name} | {t:.2} | {:.1} | {:.0} |", 1e3 * t / batches, n as f64 * bytes / t / 1e6);
    }
    println!("random / sorted: {:.2}x the read time", r / s);
    println!("raw: sorted {sorted:?}, random {random:?}");
    let traces_per_s = median(rate.clone());
    let gigabytes = n as f64 * bytes / 1e9;
    let cache = if cold { "page cache dropped" } else { "warm page cache: could not drop it" };
    let rows = [
        Row::new(
            "two-ranks",
            format!("{traces} traces on 2 ranks, sorted by type and written to LMDB: {traces_per_s:.0} traces/s"),
        )
        .peer("— (no tool makes these traces outside pyprob + Sherpa)")
        .target("≥ 2,000/s", Some(traces_per_s >= 2000.0)),
        Row::new("bytes-per-trace", format!("stored bytes per trace: {:.1} KB", bytes / 1e3))
            .peer("the paper's traces: 113 KB")
            .ratio(format!("{:.2}", bytes / 113e3)),
        Row::new(
            "bucketed-read",
            format!("one epoch of a type-sorted store in bucketed order, {cache}: {:.2} s per GB", s / gigabytes),
        )
        .peer(format!("random order: {:.2} s per GB", r / gigabytes))
        .ratio(format!("{:.2}", s / r)),
    ];
    bench_rows::record(
        "traces-bench",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-simgen --bench traces-bench"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
