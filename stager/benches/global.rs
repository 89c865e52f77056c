//! A global shuffle served from other nodes (`stager serve
//! --global-shuffle`) with a dataset larger than the nodes together: 4
//! ranks as 4 pretend nodes, 128 files of 16 MiB (one CosmoFlow sample of
//! 128³ × 4 int16 each, as MLPerf HPC's CosmoFlow stores them), sharded
//! (`--policy shard`) from an emulated 1 GB/s shared file system into
//! `/dev/shm`, each node's `--capacity` an eighth of the dataset of which
//! `--cache` is 3 files' room (so the nodes keep 41 % of the dataset and
//! the rest is read from the source again every epoch). One reader thread
//! per node reads its node's share of 2 epochs, one rank per node and a
//! batch of 1, as the trainer's `--staged` does (`NEED`, read, `DONE`),
//! paced to `STAGEHAND_BENCH_CONSUME` bytes/s (default 200MB/s, 12
//! samples/s per node). Each rep serves the same job twice, evicting by
//! furthest next use and by LRU; the figures are the source's bytes per
//! epoch against what no node keeps, the two rules' source bytes, and the
//! share of the readers' time spent waiting for the service in the second
//! epoch (the first includes staging the shards).
//!
//! ```sh
//! cargo bench -p stagehand-stager --bench global
//! ```
//!
//! Environment: `STAGEHAND_BENCH_DIR` (the source, default
//! /tmp/stagehand-bench), `STAGEHAND_BENCH_DEST` (default
//! /dev/shm/stagehand-bench), `STAGEHAND_BENCH_REPS` (default 3),
//! `STAGEHAND_BENCH_PFS_BW` (default 1GB/s), `STAGEHAND_BENCH_CONSUME`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bench_rows::Row;
use formats::global_order::{ShuffleRecord, file_of_sample, train_samples};
use formats::manifest::Manifest;
use formats::service::ServiceClient;

const STAGER: &str = env!("CARGO_BIN_EXE_stager");
const NODES: usize = 4;
const FILES: usize = 128;
/// 128³ voxels × 4 channels × 2 bytes.
const FILE: usize = 16 << 20;
const EPOCHS: u64 = 2;
/// The cache of the main job, in files.
const CACHE_FILES: u64 = 3;
/// The cache of the eviction comparison, in files: half the capacity.
const COMPARE_CACHE_FILES: u64 = 8;
/// The fetcher's window in the eviction comparison, in reads.
const COMPARE_WINDOW: u64 = 2;

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

fn make_dataset(src: &Path) -> Manifest {
    e2e::opaque_dataset(src, (FILES, FILE), 2029, "univ")
}

/// The job's sizing flags, shared by `stager serve` and `stager plan`.
fn sizing(m: &Manifest, seed: u64, (cache_files, window, eviction): (u64, u64, &str)) -> Vec<String> {
    let capacity = m.total_bytes() / 8;
    let cache = cache_files * FILE as u64;
    [
        "--capacity",
        &capacity.to_string(),
        "--cache",
        &cache.to_string(),
        "--epochs",
        &EPOCHS.to_string(),
        "--batch",
        "1",
        "--shuffle-seed",
        &seed.to_string(),
        "--eviction",
        eviction,
        "--window",
        &window.to_string(),
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// What one served run came to.
struct Served {
    /// Bytes the source served after the stage (files no node keeps).
    refetched: u64,
    /// Share of the second epoch the slowest node's reader waited.
    second_wait: f64,
}

/// Node `node`'s reader: its share of every epoch at `rate` bytes/s; the
/// seconds it waited for the service in each epoch, and each epoch's length.
fn read_node(m: &Manifest, dest: &Path, node: usize, rate: f64) -> Vec<(f64, f64)> {
    let started = Instant::now();
    let mut client = loop {
        if let Ok(Some(client)) = ServiceClient::connect(dest, "bench reader") {
            break client;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "node {node}'s service never answered");
        std::thread::sleep(Duration::from_millis(5));
    };
    let record = ShuffleRecord::read(dest).unwrap().expect("the service writes its record before it answers");
    let file = file_of_sample(&train_samples(m, None));
    let order = record.order;
    let mut epochs = Vec::new();
    for epoch in 0..EPOCHS {
        let (began, mut waited, mut bytes) = (Instant::now(), 0.0, 0u64);
        let sequence = order.sequence(epoch);
        for j in 0..order.per_rank() {
            let r = order.read_in(&sequence, epoch, node, j);
            let path = &m.files[file[r.sample]].path;
            let asked = Instant::now();
            let cached = client.need(r.position as u64, path).unwrap();
            waited += asked.elapsed().as_secs_f64();
            let dir = if cached { &record.cache_dir } else { dest };
            bytes += std::fs::read(dir.join(path)).unwrap().len() as u64;
            client.done(r.position as u64).unwrap();
            // The training step's work on the sample.
            let due = began + Duration::from_secs_f64(bytes as f64 / rate);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        epochs.push((waited, began.elapsed().as_secs_f64()));
    }
    epochs
}

fn serve(
    (src, dest_root, m): (&Path, &Path, &Manifest),
    seed: u64,
    cache: (u64, u64, &str),
    (pfs, rate): (&str, f64),
) -> Served {
    let _ = std::fs::remove_dir_all(dest_root);
    std::fs::create_dir_all(dest_root).unwrap();
    let dest = dest_root.join("node{node}");
    let mut mpirun = Command::new("mpirun");
    e2e::own_mpi_session(&mut mpirun);
    let service = mpirun
        .args(e2e::MPIRUN_ARGS)
        .args(["-np", &NODES.to_string(), "-x", "STAGEHAND_RANKS_PER_NODE"])
        .env("STAGEHAND_RANKS_PER_NODE", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(STAGER)
        .args(["serve", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()])
        .args(["--policy", "shard", "--global-shuffle", "--source-bandwidth", pfs])
        .args(sizing(m, seed, cache))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let epochs: Vec<Vec<(f64, f64)>> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..NODES)
            .map(|node| {
                let dest = dest_root.join(format!("node{node}"));
                scope.spawn(move || read_node(m, &dest, node, rate))
            })
            .collect();
        readers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    ServiceClient::connect(&dest_root.join("node0"), "bench").unwrap().unwrap().stop().unwrap();
    let out = service.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let refetched =
        report["peers"]["per_node"].as_array().unwrap().iter().map(|n| n["source_bytes"].as_u64().unwrap()).sum();
    let second_wait = epochs.iter().map(|e| e[1].0 / e[1].1).fold(0.0, f64::max);
    let _ = std::fs::remove_dir_all(dest_root);
    Served { refetched, second_wait }
}

/// `stager plan --capacity` of the same job: (bytes the nodes keep,
/// source bytes it predicts after the stage).
fn plan(src: &Path, m: &Manifest, seed: u64) -> (u64, u64) {
    let out = Command::new(STAGER)
        .args(["plan", "--source", src.to_str().unwrap(), "--policy", "shard", "--nodes", &NODES.to_string()])
        .arg("--json")
        .args(sizing(m, seed, (CACHE_FILES, 16, "furthest")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chosen = &plan["capacity"]["chosen"];
    let held: u64 = chosen["held_per_node"].as_array().unwrap().iter().map(|h| h.as_u64().unwrap()).sum();
    let source: u64 = chosen["epochs"].as_array().unwrap().iter().map(|e| e["source"].as_u64().unwrap()).sum();
    (held, source - held)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = PathBuf::from(env_or("STAGEHAND_BENCH_DIR", "/tmp/stagehand-bench"));
    let src = root.join("global-src");
    let dest_root = PathBuf::from(env_or("STAGEHAND_BENCH_DEST", "/dev/shm/stagehand-bench"));
    let reps = bench_rows::repetitions(3) as u64;
    let pfs = env_or("STAGEHAND_BENCH_PFS_BW", "1GB/s");
    let consume = env_or("STAGEHAND_BENCH_CONSUME", "200MB/s");
    let rate = stager::units::parse_rate(&consume).unwrap();
    let m = make_dataset(&src);
    let dataset = m.total_bytes();
    println!(
        "dataset: {FILES} files of {} MiB on {NODES} pretend nodes, --policy shard, capacity 1/8 of it each \
         ({CACHE_FILES} files of cache); source {pfs}; readers {consume} per node; {EPOCHS} epochs; {reps} reps",
        FILE >> 20
    );
    let (mut per_unheld, mut fnu_lru, mut waits, mut predicted) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut held_share = 0.0;
    for seed in 0..reps {
        let (held, planned) = plan(&src, &m, seed);
        let unheld = dataset - held;
        held_share = held as f64 / dataset as f64;
        let job = (src.as_path(), dest_root.as_path(), &m);
        let served = serve(job, seed, (CACHE_FILES, 16, "furthest"), (&pfs, rate));
        let fnu = serve(job, seed, (COMPARE_CACHE_FILES, COMPARE_WINDOW, "furthest"), (&pfs, rate));
        let lru = serve(job, seed, (COMPARE_CACHE_FILES, COMPARE_WINDOW, "lru"), (&pfs, rate));
        let per_epoch = served.refetched as f64 / EPOCHS as f64;
        let mib = |bytes: u64| bytes as f64 / EPOCHS as f64 / (1u64 << 20) as f64;
        println!(
            "seed {seed}: the nodes keep {:.0} %; source per epoch {:.1} MiB = {:.3} of what no node keeps \
             (plan predicts {:.3}); second-epoch wait {:.2} %; with {COMPARE_CACHE_FILES} files of cache: \
             furthest next use {:.1} MiB per epoch, LRU {:.1} MiB",
            100.0 * held_share,
            mib(served.refetched),
            per_epoch / unheld as f64,
            planned as f64 / EPOCHS as f64 / unheld as f64,
            100.0 * served.second_wait,
            mib(fnu.refetched),
            mib(lru.refetched),
        );
        per_unheld.push(per_epoch / unheld as f64);
        predicted.push(planned as f64 / EPOCHS as f64 / unheld as f64);
        fnu_lru.push(fnu.refetched as f64 / lru.refetched as f64);
        waits.push(served.second_wait);
    }
    let (source, ratio, wait, planned) =
        (e2e::median(per_unheld), e2e::median(fnu_lru), e2e::median(waits), e2e::median(predicted));
    let table = [
        Row::new(
            "global-source-bytes",
            format!(
                "source bytes per epoch, capacity 1/8 of the dataset per node (the nodes keep {:.0} %): {source:.3} \
                 of what no node keeps (stager plan predicts {planned:.3})",
                100.0 * held_share
            ),
        )
        .target("≤ 1.05", Some(source <= 1.05)),
        Row::new(
            "global-eviction",
            format!(
                "source bytes evicting by furthest next use, cache half the capacity ({COMPARE_CACHE_FILES} files)"
            ),
        )
        .peer("LRU eviction, same run")
        .ratio(format!("{ratio:.2}"))
        .target("< 1", Some(ratio < 1.0)),
        Row::new(
            "global-data-wait",
            format!("readers at {consume} per node wait {:.2} % of the second epoch", 100.0 * wait),
        )
        .target("< 2 %", Some(wait < 0.02)),
    ];
    bench_rows::record(
        "global",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-stager --bench global"),
        &table,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
