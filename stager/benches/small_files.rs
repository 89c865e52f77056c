//! Many small files: `stager stage` of 100,000 files of
//! 1-64 KiB on 2 pretend nodes x 2 ranks, replicate, against the naive copy
//! (each node's ranks copy its files straight from the source) in the same
//! run. Both also stage the first tenth of the files alone, to show that
//! what the stager's memory adds to the naive copy's (which holds the same
//! manifest) does not grow with the file count. Prints a table and records
//! the rows of docs/benchmarks.md.
//!
//! ```sh
//! cargo bench -p stagehand-stager --bench small_files
//! ```
//!
//! Environment: `STAGEHAND_BENCH_DIR` (source parent, default
//! /tmp/stagehand-bench), `STAGEHAND_BENCH_DEST` (node-local root, default
//! /dev/shm/stagehand-bench), `STAGEHAND_BENCH_REPS` (default 3),
//! `STAGEHAND_BENCH_SMALL_FILES` (default 100000).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use bench_rows::Row;
use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
use serde_json::Value;

const STAGER: &str = env!("CARGO_BIN_EXE_stager");
const RANKS: usize = 4;
const RANKS_PER_NODE: &str = "2";
const MIN_BYTES: u64 = 1 << 10;
const MAX_BYTES: u64 = 64 << 10;
const FILES_PER_DIR: usize = 1000;

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

/// `files` files of 1-64 KiB (uniform) in directories of 1,000, and their
/// manifest; kept between runs when the manifest still describes them.
fn make_dataset(src: &Path, files: usize) -> Manifest {
    if let Ok(m) = Manifest::load(&src.join(MANIFEST_FILE))
        && m.files.len() == files
    {
        return m;
    }
    let _ = std::fs::remove_dir_all(src);
    let mut rng = e2e::SplitMix64::new(5);
    for i in 0..files {
        let dir = src.join(format!("d{:03}", i / FILES_PER_DIR));
        if i % FILES_PER_DIR == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let len = MIN_BYTES + rng.next() % (MAX_BYTES - MIN_BYTES + 1);
        let data: Vec<u8> = (0..len.div_ceil(8)).flat_map(|_| rng.next().to_le_bytes()).take(len as usize).collect();
        std::fs::write(dir.join(format!("f{i:06}.bin")), data).unwrap();
    }
    let m = manifest::scan(src, &ScanOptions::new(Schema::opaque())).unwrap();
    m.save(&src.join(MANIFEST_FILE)).unwrap();
    m
}

/// Stage with `manifest` into `dest_root/node{node}`; returns (wall
/// seconds of the whole mpirun, the stager's report).
fn run_stager(src: &Path, manifest: &Path, dest_root: &Path, extra: &[&str]) -> (f64, Value) {
    let _ = std::fs::remove_dir_all(dest_root);
    std::fs::create_dir_all(dest_root).unwrap();
    let dest = dest_root.join("node{node}");
    let mut args = vec![
        "stage",
        "--source",
        src.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
        "--dest",
        dest.to_str().unwrap(),
        "--policy",
        "replicate",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let out = e2e::mpirun(RANKS, &[("STAGEHAND_RANKS_PER_NODE", RANKS_PER_NODE)], STAGER.as_ref(), &args);
    let wall = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (wall, serde_json::from_slice(&out.stdout).unwrap())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn peak_rss_mib(report: &Value) -> f64 {
    report["peak_rss_bytes_max_rank"].as_u64().unwrap() as f64 / 1048576.0
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = PathBuf::from(env_or("STAGEHAND_BENCH_DIR", "/tmp/stagehand-bench")).join("small");
    let src = root.join("src");
    let dest_root = PathBuf::from(env_or("STAGEHAND_BENCH_DEST", "/dev/shm/stagehand-bench")).join("small");
    let reps = bench_rows::repetitions(3);
    let files = bench_rows::count("STAGEHAND_BENCH_SMALL_FILES", 100_000);
    let m = make_dataset(&src, files);
    let whole = src.join(MANIFEST_FILE);
    let tenth = root.join("manifest-tenth.json");
    Manifest::new(Schema::opaque(), m.files[..files / 10].to_vec()).save(&tenth).unwrap();
    println!(
        "dataset: {files} files of 1-64 KiB, {:.2} GiB; 2 nodes x 2 ranks, replicate; {reps} reps",
        m.total_bytes() as f64 / (1u64 << 30) as f64
    );
    let cases: [(&str, &Path, &[&str]); 4] = [
        ("stager", &whole, &[]),
        ("naive", &whole, &["--naive"]),
        ("stager, a tenth of the files", &tenth, &[]),
        ("naive, a tenth of the files", &tenth, &["--naive"]),
    ];
    // (wall, stager-internal seconds, report) per case and repetition.
    let mut runs: Vec<Vec<(f64, f64, Value)>> = vec![Vec::new(); cases.len()];
    // The order rotates: whoever runs right after a large delete pays for
    // fresh pages on a VM that hands freed memory back to its host.
    for rep in 0..reps {
        for k in 0..cases.len() {
            let i = (k + rep) % cases.len();
            let (_, manifest, extra) = cases[i];
            let (wall, report) = run_stager(&src, manifest, &dest_root, extra);
            let internal = report["seconds"]["total"].as_f64().unwrap();
            runs[i].push((wall, internal, report));
        }
        println!("rep {rep} done");
    }
    let _ = std::fs::remove_dir_all(&dest_root);
    let count = |i: usize| if i < 2 { files } else { files / 10 };
    let rate = |i: usize| count(i) as f64 / median(runs[i].iter().map(|r| r.0).collect());
    let internal_rate = |i: usize| count(i) as f64 / median(runs[i].iter().map(|r| r.1).collect());
    let rss = |i: usize| runs[i].iter().map(|r| peak_rss_mib(&r.2)).fold(0.0, f64::max);
    println!("\n| contender | files/s (wall, median) | files/s (stager-internal) | peak RSS/rank MiB |");
    println!("|---|---|---|---|");
    for (i, (name, _, _)) in cases.iter().enumerate() {
        println!("| {name} | {:.0} | {:.0} | {:.1} |", rate(i), internal_rate(i), rss(i));
    }
    let (ours, naive) = (rate(0), rate(1));
    println!("\nstager / naive (files/s, wall): {:.2}", ours / naive);
    // Both hold the manifest and a plan, which grow with the file count;
    // what the stager adds on top (buffers, packs, queues) must not.
    let (added, added_tenth) = (rss(0) - rss(1), rss(2) - rss(3));
    let per_file = (rss(1) - rss(3)) * 1048576.0 / (files - files / 10) as f64;
    let table = [
        Row::new(
            "small-files-rate",
            format!(
                "{files} files of 1-64 KiB to 2 pretend nodes x 2 ranks, replicate: {ours:.0} files/s (wall, median of {reps})"
            ),
        )
        .peer(format!("the naive copy: {naive:.0} files/s"))
        .ratio(format!("{:.2}×", ours / naive))
        .target("≥ 10,000 files/s and ≥ naive", Some(ours >= 10_000.0 && ours >= naive)),
        Row::new(
            "small-files-memory",
            format!(
                "peak RSS of the largest rank above the naive copy's: {added:.0} MiB for {files} files, {added_tenth:.0} MiB for {}",
                files / 10
            ),
        )
        .peer(format!(
            "the naive copy: {:.0} MiB and {:.0} MiB (the manifest and plan: {per_file:.0} B per file)",
            rss(1),
            rss(3)
        ))
        .ratio(format!("{:.2}×", added / added_tenth.max(1.0)))
        .target("flat in the file count (≤ 1.25×)", Some(added <= 1.25 * added_tenth.max(1.0))),
    ];
    bench_rows::record(
        "small-files",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-stager --bench small_files"),
        &table,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
