//! Staging benchmark: 4 ranks as 4 pretend nodes, 2 GiB of 32-64
//! MiB files, `per-node` giving each node half the files (every file needed
//! by 2 nodes). Compares, in the same run, the stager, its naive baseline and
//! `cp` copying the same files to the same destinations, with and without an
//! emulated shared file system. Prints a table and writes results.json.
//!
//! ```sh
//! cargo bench -p stagehand-stager --bench stage
//! ```
//!
//! Environment: `STAGEHAND_BENCH_DIR` (source, default /tmp/stagehand-bench),
//! `STAGEHAND_BENCH_DEST` (node-local root, default /dev/shm/stagehand-bench),
//! `STAGEHAND_BENCH_REPS` (default 5), `STAGEHAND_BENCH_PFS_BW` (default 1GB/s).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bench_rows::Row;
use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
use formats::placement::{Policy, files_per_node};
use serde_json::Value;

const STAGER: &str = env!("CARGO_BIN_EXE_stager");
const NODES: usize = 4;
const TOTAL: u64 = 2 << 30;

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

fn make_dataset(src: &Path) -> Manifest {
    if let Ok(m) = Manifest::load(&src.join(MANIFEST_FILE))
        && m.total_bytes() >= TOTAL - (64 << 20)
        && m.validate_against_root(src).is_ok()
    {
        return m;
    }
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(src).unwrap();
    let mut rng = e2e::SplitMix64::new(2026);
    let block: Vec<u8> = (0..(1 << 20)).map(|_| rng.next() as u8).collect();
    let mut written = 0u64;
    let mut i = 0;
    while written < TOTAL {
        let size = (32 << 20) + (rng.next() % (32 << 20));
        let size = size.min(TOTAL - written).max(1 << 20);
        let mut data = Vec::with_capacity(size as usize);
        while (data.len() as u64) < size {
            let take = ((size as usize) - data.len()).min(block.len());
            data.extend(block[..take].iter().map(|b| b ^ (i as u8)));
        }
        std::fs::write(src.join(format!("part-{i:04}.bin")), &data).unwrap();
        written += size;
        i += 1;
    }
    let m = manifest::scan(src, &ScanOptions::new(Schema::opaque())).unwrap();
    m.save(&src.join(MANIFEST_FILE)).unwrap();
    m
}

fn clear(dest_root: &Path) {
    let _ = std::fs::remove_dir_all(dest_root);
    std::fs::create_dir_all(dest_root).unwrap();
}

/// Returns (wall seconds of the whole mpirun, the stager's report).
fn run_stager(src: &Path, dest_root: &Path, per_node: usize, extra: &[&str]) -> (f64, Value) {
    clear(dest_root);
    let dest = dest_root.join("node{node}");
    let policy = format!("per-node={per_node}");
    let mut args =
        vec!["stage", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap(), "--policy", &policy];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let out = e2e::mpirun(NODES, &[("STAGEHAND_RANKS_PER_NODE", "1")], STAGER.as_ref(), &args);
    let wall = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (wall, serde_json::from_slice(&out.stdout).unwrap())
}

/// `cp` of each node's files into its directory, the 4 nodes at once.
fn run_cp(src: &Path, dest_root: &Path, needs: &[Vec<usize>], m: &Manifest) -> f64 {
    clear(dest_root);
    let started = Instant::now();
    let children: Vec<_> = needs
        .iter()
        .enumerate()
        .map(|(node, files)| {
            let dir = dest_root.join(format!("node{node}"));
            std::fs::create_dir_all(&dir).unwrap();
            Command::new("cp").args(files.iter().map(|&f| src.join(&m.files[f].path))).arg(&dir).spawn().unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    started.elapsed().as_secs_f64()
}

/// True if this is a VM whose balloon driver hands freed memory back to the
/// host (free page reporting): then the first touch of a fresh page costs a
/// host fault, from about 2 s after a delete on, so a slower contender also
/// pays more per page. `docs/benchmarks.md` shows how to measure without it.
fn reports_free_pages() -> bool {
    std::fs::read_dir("/sys/bus/virtio/drivers/virtio_balloon")
        .is_ok_and(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("virtio")))
        && Path::new("/sys/module/page_reporting").exists()
}

/// True if DAMON runs a `pageout` scheme (as on this project's VMs): it
/// evicts memory idle for a few seconds, the source's page cache included,
/// so a contender may find part of the source on disk.
fn pages_out_idle_memory() -> bool {
    let state = std::fs::read_to_string("/sys/kernel/mm/damon/admin/kdamonds/0/state");
    let action = std::fs::read_to_string("/sys/kernel/mm/damon/admin/kdamonds/0/contexts/0/schemes/0/action");
    state.is_ok_and(|s| s.trim() == "on") && action.is_ok_and(|a| a.trim() == "pageout")
}

/// Read the whole source so the next contender finds it in the page cache.
/// Done before every contender, not once: DAMON (where it runs) evicts
/// pages idle for a few seconds, and the stager reads each file once where
/// `cp` and the naive copy read it twice, so an eviction between runs would
/// cost the contenders differently.
fn warm(src: &Path, m: &Manifest) {
    for f in &m.files {
        std::fs::read(src.join(&f.path)).unwrap();
    }
}

/// A contender's runs: (name, wall seconds, stager-internal seconds, reports).
type Contender<'a> = (&'a str, Vec<f64>, Vec<f64>, Vec<Value>);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let src = PathBuf::from(env_or("STAGEHAND_BENCH_DIR", "/tmp/stagehand-bench")).join("src");
    let dest_root = PathBuf::from(env_or("STAGEHAND_BENCH_DEST", "/dev/shm/stagehand-bench"));
    let reps = bench_rows::repetitions(5);
    let pfs = env_or("STAGEHAND_BENCH_PFS_BW", "1GB/s");
    let m = make_dataset(&src);
    let per_node = m.files.len() / 2;
    let sizes: Vec<u64> = m.files.iter().map(|f| f.bytes).collect();
    let needs = files_per_node(&sizes, NODES, Policy::PerNode(per_node), 0).unwrap();
    println!(
        "dataset: {} files, {:.2} GiB; {NODES} nodes x per-node={per_node}; {reps} reps",
        m.files.len(),
        m.total_bytes() as f64 / (1u64 << 30) as f64
    );
    if reports_free_pages() {
        println!(
            "note: this VM's balloon driver reports freed memory to the host; fresh pages cost more \
             the longer a run lasts (see docs/benchmarks.md)"
        );
    }
    if pages_out_idle_memory() {
        println!(
            "note: DAMON pages out memory idle for a few seconds, the source's page cache included \
             (see docs/benchmarks.md)"
        );
    }
    warm(&src, &m);

    let mut rows: Vec<Contender> = Vec::new();
    let pfs_arg = ["--source-bandwidth", pfs.as_str()];
    let naive_pfs = ["--naive", "--source-bandwidth", pfs.as_str()];
    let cases: [(&str, &[&str]); 4] = [
        ("stager", &[]),
        ("naive", &["--naive"]),
        ("stager, emulated PFS", &pfs_arg),
        ("naive, emulated PFS", &naive_pfs),
    ];
    let mut cp_times = Vec::new();
    for (name, _) in &cases {
        rows.push((name, Vec::new(), Vec::new(), Vec::new()));
    }
    // The order rotates between repetitions: on a VM that hands freed memory
    // back to its host, whoever runs right after a large delete pays for
    // fresh pages, so a fixed order would bias one contender.
    for rep in 0..reps {
        for k in 0..=cases.len() {
            let i = (k + rep) % (cases.len() + 1);
            warm(&src, &m);
            if i == cases.len() {
                cp_times.push(run_cp(&src, &dest_root, &needs, &m));
                continue;
            }
            let (wall, report) = run_stager(&src, &dest_root, per_node, cases[i].1);
            rows[i].1.push(wall);
            rows[i].2.push(report["seconds"]["total"].as_f64().unwrap());
            rows[i].3.push(report);
        }
        println!("rep {rep} done");
    }
    clear(&dest_root);
    let cp = median(cp_times.clone());
    println!("\n| contender | wall s (median) | stager-internal s | read amplification | peak RSS/rank MiB |");
    println!("|---|---|---|---|---|");
    println!("| cp, 4 processes (one per node) | {cp:.3} | | | |");
    let mut results = serde_json::json!({ "cp_seconds": cp_times, "files": m.files.len(), "bytes": m.total_bytes(), "per_node": per_node, "pfs_bw": pfs });
    for (name, walls, internal, reports) in &rows {
        let amp = reports[0]["read_amplification"].as_f64().unwrap();
        let rss = reports.iter().map(|r| r["peak_rss_bytes_max_rank"].as_u64().unwrap()).max().unwrap();
        println!(
            "| {name} | {:.3} | {:.3} | {amp:.2} | {:.0} |",
            median(walls.clone()),
            median(internal.clone()),
            rss as f64 / 1048576.0
        );
        results[name] =
            serde_json::json!({ "wall": walls, "internal": internal, "read_amplification": amp, "peak_rss": rss });
    }
    let ratio = |a: usize, b: usize| median(rows[a].1.clone()) / median(rows[b].1.clone());
    println!(
        "\nstager / cp (wall): {:.2}   stager-internal / cp: {:.2}",
        median(rows[0].1.clone()) / cp,
        median(rows[0].2.clone()) / cp
    );
    println!("stager / naive, emulated PFS {pfs} (wall): {:.2}", ratio(2, 3));
    println!("stager / naive, no emulation (wall): {:.2}", ratio(0, 1));
    let out = src.parent().unwrap().join("results.json");
    std::fs::write(&out, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    println!("raw results: {}", out.display());
    record_rows(&rows, cp, reps, &pfs, &needs, &m);
}

/// The rows of docs/benchmarks.md: medians of the repetitions.
fn record_rows(rows: &[Contender], cp: f64, reps: usize, pfs: &str, needs: &[Vec<usize>], m: &Manifest) {
    let wall = |i: usize| median(rows[i].1.clone());
    let amplification = |i: usize| rows[i].3[0]["read_amplification"].as_f64().unwrap();
    // `cp` reads every file once per node that needs it.
    let cp_read: u64 = needs.iter().flatten().map(|&f| m.files[f].bytes).sum();
    let cp_amplification = cp_read as f64 / m.total_bytes() as f64;
    let rss_mib =
        rows[0].3.iter().map(|r| r["peak_rss_bytes_max_rank"].as_u64().unwrap()).max().unwrap() as f64 / 1048576.0;
    // The stager's default --max-inflight.
    let rss_target_mib = 128.0 + 256.0;
    let gib = m.total_bytes() as f64 / (1u64 << 30) as f64;
    let table = [
        Row::new(
            "wall-vs-cp",
            format!("{gib:.2} GiB to {NODES} pretend nodes, wall: {:.2} s (median of {reps})", wall(0)),
        )
        .peer(format!("`cp`, one process per node: {cp:.2} s"))
        .ratio(format!("{:.2}×", wall(0) / cp))
        .target("≤ 1.2×", Some(wall(0) / cp <= 1.2)),
        // What the wall adds to it is Open MPI's: start-up, `MPI_Init` and
        // `MPI_Finalize`, which `cp` does not pay.
        Row::new(
            "own-time-vs-cp",
            format!(
                "the same, the stager's own time (its report's total, without `mpirun`'s start-up and \
                 `MPI_Init`/`MPI_Finalize`): {:.2} s",
                median(rows[0].2.clone())
            ),
        )
        .peer(format!("`cp`: {cp:.2} s"))
        .ratio(format!("{:.2}×", median(rows[0].2.clone()) / cp)),
        Row::new("emulated-pfs", format!("the same from an emulated {pfs} shared file system: {:.2} s", wall(2)))
            .peer(format!("the naive copy (every node reads what it needs): {:.2} s", wall(3)))
            .ratio(format!("{:.2}", wall(2) / wall(3)))
            .target("faster than naive", Some(wall(2) < wall(3))),
        Row::new("read-amplification", format!("read amplification {:.2}", amplification(0)))
            .peer(format!("naive {:.2}, `cp` {cp_amplification:.2}", amplification(1)))
            .target("1.00", Some(amplification(0) <= 1.0 + 1e-9)),
        Row::new("peak-rss", format!("peak RSS of the largest rank: {rss_mib:.0} MiB"))
            .target("≤ max-inflight + 256 MiB", Some(rss_mib <= rss_target_mib)),
    ];
    bench_rows::record(
        "stage",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-stager --bench stage"),
        &table,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
