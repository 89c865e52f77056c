//! Staging while training: `stager serve` against stage-then-train, in the
//! same run, on the stage bench's setup (2 GiB, 4 ranks as 4 pretend nodes,
//! `per-node` giving each node half the files, an emulated 1 GB/s shared
//! file system) with one sample per file, as MLPerf's CosmoFlow and DeepCAM
//! layouts have it. The consumer is a loader of a fixed rate per node: one
//! thread per node reads its node's files in the order the loaders read a
//! staged destination (`formats::sampling`), asking the service for each
//! file first when one serves, and paces itself to
//! `STAGEHAND_BENCH_CONSUME` bytes/s (default 400MB/s, so an epoch alone
//! takes about as long as the stage: the case where overlap matters most).
//! Also times `cat` of staged files with and without the preload library.
//!
//! ```sh
//! cargo bench -p stagehand-stager --bench serve
//! ```
//!
//! Environment: as the stage bench (`STAGEHAND_BENCH_DIR`,
//! `STAGEHAND_BENCH_DEST`, `STAGEHAND_BENCH_REPS`, `STAGEHAND_BENCH_PFS_BW`)
//! and `STAGEHAND_BENCH_CONSUME`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bench_rows::Row;
use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
use formats::placement::Policy;
use formats::sampling::{NodeLocalSampler, Remainder};
use formats::service::ServiceClient;

const STAGER: &str = env!("CARGO_BIN_EXE_stager");
const NODES: usize = 4;
const TOTAL: u64 = 2 << 30;
const FILE: u64 = 4 << 20;

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

/// 512 files of 4 MiB, one sample each.
fn make_dataset(src: &Path) -> Manifest {
    if let Ok(m) = Manifest::load(&src.join(MANIFEST_FILE))
        && m.total_bytes() == TOTAL
        && m.validate_against_root(src).is_ok()
    {
        return m;
    }
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(src).unwrap();
    let mut rng = e2e::SplitMix64::new(2027);
    let block: Vec<u8> = (0..FILE).map(|_| rng.next() as u8).collect();
    for i in 0..TOTAL / FILE {
        let data: Vec<u8> = block.iter().map(|b| b ^ (i as u8)).collect();
        std::fs::write(src.join(format!("sample-{i:04}.bin")), &data).unwrap();
    }
    let mut m = manifest::scan(src, &ScanOptions::new(Schema::opaque())).unwrap();
    for f in &mut m.files {
        f.samples = 1;
    }
    m.save(&src.join(MANIFEST_FILE)).unwrap();
    m
}

fn mpirun() -> Command {
    let mut command = Command::new("mpirun");
    e2e::own_mpi_session(&mut command);
    command.args(e2e::MPIRUN_ARGS).args(["-np", &NODES.to_string(), "-x", "STAGEHAND_RANKS_PER_NODE"]);
    command.env("STAGEHAND_RANKS_PER_NODE", "1");
    command.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    command
}

fn stager_args(command: &str, src: &Path, dest_root: &Path, policy: &str, pfs: &str) -> Vec<String> {
    let dest = dest_root.join("node{node}");
    [command, "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap(), "--policy", policy]
        .into_iter()
        .map(str::to_owned)
        .chain(["--source-bandwidth".to_owned(), pfs.to_owned()])
        .collect()
}

/// What one node's consumer saw in one epoch.
#[derive(Default, Clone, Copy)]
struct Consumed {
    /// Seconds from the clock's start to its first file read.
    first: f64,
    /// Seconds from the clock's start to its last file read.
    done: f64,
    /// Seconds spent waiting for the service.
    waited: f64,
}

/// Each node's consumer reads its files in the loaders' order at `rate`
/// bytes/s, asking the service first when `served` for a file it has not
/// had yet (`had`, per node, kept across epochs: the loader opens a file
/// once); the clock started at `start`.
fn consume(
    m: &Manifest,
    dest_root: &Path,
    (policy, rate): (Policy, f64),
    served: bool,
    had: &mut [std::collections::HashSet<usize>],
    start: Instant,
) -> Vec<Consumed> {
    let samples: Vec<u64> = m.files.iter().map(|f| f.samples).collect();
    let sizes: Vec<u64> = m.files.iter().map(|f| f.bytes).collect();
    let follows = vec![None; m.files.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = had
            .iter_mut()
            .enumerate()
            .map(|(node, had)| {
                let (samples, sizes, follows) = (&samples, &sizes, &follows);
                s.spawn(move || {
                    let sampler = NodeLocalSampler::new(
                        samples,
                        sizes,
                        follows,
                        &[1; NODES],
                        (node, 0),
                        (policy, 0),
                        Remainder::Drop,
                    )
                    .unwrap();
                    let dir = dest_root.join(format!("node{node}"));
                    let mut client = if served { ServiceClient::connect(&dir, "bench").unwrap() } else { None };
                    let mut seen = Consumed::default();
                    let (mut bytes, began) = (0u64, Instant::now());
                    // One sample per file: a sample's id is its file's index.
                    for (k, file) in sampler.indices(0).into_iter().enumerate() {
                        let path = &m.files[file].path;
                        if let Some(client) = client.as_mut()
                            && had.insert(file)
                        {
                            let asked = Instant::now();
                            client.wait(path).unwrap();
                            seen.waited += asked.elapsed().as_secs_f64();
                        }
                        bytes += std::fs::read(dir.join(path)).unwrap().len() as u64;
                        if k == 0 {
                            seen.first = start.elapsed().as_secs_f64();
                        }
                        let due = began + Duration::from_secs_f64(bytes as f64 / rate);
                        std::thread::sleep(due.saturating_duration_since(Instant::now()));
                    }
                    seen.done = start.elapsed().as_secs_f64();
                    seen
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn clear(dest_root: &Path) {
    let _ = std::fs::remove_dir_all(dest_root);
    std::fs::create_dir_all(dest_root).unwrap();
}

fn max_of(v: &[Consumed], f: fn(&Consumed) -> f64) -> f64 {
    v.iter().map(f).fold(0.0, f64::max)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One repetition of each: (stage s, epoch s on the staged data), and the
/// served run's (first batch s, stage + epoch s, second-epoch wait share,
/// read amplification).
struct Rep {
    stage: f64,
    epoch: f64,
    first_batch: f64,
    /// Seconds until every node's service answered (start-up, planning,
    /// opening the destination).
    up: f64,
    overlapped: f64,
    second_wait: f64,
    amplification: f64,
}

fn one_rep(src: &Path, dest_root: &Path, m: &Manifest, (policy, pfs, rate): (Policy, &str, f64)) -> Rep {
    let policy_arg = policy.to_string();
    // Stage, then train.
    clear(dest_root);
    let started = Instant::now();
    let out = mpirun().arg(STAGER).args(stager_args("stage", src, dest_root, &policy_arg, pfs)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stage = started.elapsed().as_secs_f64();
    let fresh = || vec![std::collections::HashSet::new(); NODES];
    let epoch = max_of(&consume(m, dest_root, (policy, rate), false, &mut fresh(), Instant::now()), |c| c.done);
    // Train while the service stages.
    clear(dest_root);
    let started = Instant::now();
    let service = mpirun()
        .arg(STAGER)
        .args(stager_args("serve", src, dest_root, &policy_arg, pfs))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let node0 = dest_root.join("node0");
    while (0..NODES).any(|n| !formats::service::socket_path(&dest_root.join(format!("node{n}"))).exists()) {
        assert!(started.elapsed() < Duration::from_secs(60), "the service never came up");
        std::thread::sleep(Duration::from_millis(5));
    }
    let up = started.elapsed().as_secs_f64();
    let mut had = fresh();
    let first = consume(m, dest_root, (policy, rate), true, &mut had, started);
    let second_started = Instant::now();
    let second = consume(m, dest_root, (policy, rate), true, &mut had, second_started);
    let second_secs = second_started.elapsed().as_secs_f64();
    ServiceClient::connect(&node0, "bench").unwrap().unwrap().stop().unwrap();
    let out = service.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    Rep {
        stage,
        epoch,
        first_batch: max_of(&first, |c| c.first),
        up,
        overlapped: max_of(&first, |c| c.done),
        second_wait: max_of(&second, |c| c.waited) / second_secs,
        amplification: report["read_amplification"].as_f64().unwrap(),
    }
}

/// Seconds to `cat` every file of `dir` to /dev/null, with `preload` set
/// as LD_PRELOAD (and STAGEHAND_DEST) or not.
fn cat_all(dir: &Path, files: &[PathBuf], preload: Option<&Path>) -> f64 {
    let mut command = Command::new("cat");
    command.args(files).stdout(Stdio::null());
    if let Some(library) = preload {
        command.env("LD_PRELOAD", library).env("STAGEHAND_DEST", dir);
    }
    let started = Instant::now();
    assert!(command.status().unwrap().success());
    started.elapsed().as_secs_f64()
}

fn preload_library() -> PathBuf {
    let built =
        Command::new(env!("CARGO")).args(["build", "--release", "-q", "-p", "stagehand-preload"]).status().unwrap();
    assert!(built.success(), "building the preload library");
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("libstagehand_preload.so")
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = PathBuf::from(env_or("STAGEHAND_BENCH_DIR", "/tmp/stagehand-bench"));
    let src = root.join("serve-src");
    let dest_root = PathBuf::from(env_or("STAGEHAND_BENCH_DEST", "/dev/shm/stagehand-bench"));
    let reps = bench_rows::repetitions(5);
    let pfs = env_or("STAGEHAND_BENCH_PFS_BW", "1GB/s");
    let rate = stager::units::parse_rate(&env_or("STAGEHAND_BENCH_CONSUME", "400MB/s")).unwrap();
    let m = make_dataset(&src);
    let policy = Policy::PerNode(m.files.len() / 2);
    println!(
        "dataset: {} files of one sample, {:.2} GiB; {NODES} nodes x {policy}; source {pfs}; \
         consumer {:.0} MB/s per node; {reps} reps",
        m.files.len(),
        m.total_bytes() as f64 / (1u64 << 30) as f64,
        rate / 1e6
    );
    let runs: Vec<Rep> = (0..reps)
        .map(|rep| {
            let r = one_rep(&src, &dest_root, &m, (policy, &pfs, rate));
            println!(
                "rep {rep}: stage {:.2} s, epoch {:.2} s; served: up {:.2} s, first batch {:.2} s, stage + epoch {:.2} s, \
                 second-epoch wait {:.2} %",
                r.stage,
                r.epoch,
                r.up,
                r.first_batch,
                r.overlapped,
                100.0 * r.second_wait
            );
            r
        })
        .collect();
    // The preload library on files in place: plain `cat` against `cat`
    // under LD_PRELOAD, alternating, on one node's staged files.
    clear(&dest_root);
    let out = mpirun()
        .arg(STAGER)
        .args(stager_args("stage", &src, &dest_root, &policy.to_string(), "100GB/s"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let node0 = dest_root.join("node0");
    let files: Vec<PathBuf> =
        std::fs::read_dir(&node0).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    let library = preload_library();
    let (mut plain, mut preloaded) = (Vec::new(), Vec::new());
    for _ in 0..reps.max(3) {
        plain.push(cat_all(&node0, &files, None));
        preloaded.push(cat_all(&node0, &files, Some(&library)));
    }
    clear(&dest_root);
    let med = |f: fn(&Rep) -> f64| median(runs.iter().map(f).collect());
    let (stage, epoch, first, overlapped) =
        (med(|r| r.stage), med(|r| r.epoch), med(|r| r.first_batch), med(|r| r.overlapped));
    let (wait, amplification) = (med(|r| r.second_wait), med(|r| r.amplification));
    let read_ratio = median(plain.clone()) / median(preloaded.clone());
    let host = format!("{} files, {pfs}, consumer {:.0} MB/s per node", m.files.len(), rate / 1e6);
    let table = [
        Row::new("first-batch", format!("time to the first batch beside `stager serve`: {first:.2} s ({host})"))
            .peer(format!("the whole stage first: {stage:.2} s"))
            .ratio(format!("{:.2}", first / stage))
            .target("≤ 0.10", Some(first / stage <= 0.10)),
        Row::new("overlap", format!("stage + first epoch, overlapped: {overlapped:.2} s"))
            .peer(format!("stage then epoch: {:.2} s (max of the two {:.2} s)", stage + epoch, stage.max(epoch)))
            .ratio(format!("{:.2}× max", overlapped / stage.max(epoch)))
            .target("≤ 1.1× max", Some(overlapped <= 1.1 * stage.max(epoch))),
        Row::new("serve-read-amplification", format!("read amplification of the service {amplification:.2}"))
            .target("1.00", Some(amplification <= 1.0 + 1e-9)),
        Row::new("second-epoch-wait", format!("wait for the service in the second epoch: {:.2} %", 100.0 * wait))
            .target("< 2 %", Some(wait < 0.02)),
        Row::new(
            "preload-read",
            format!("`cat` of staged files under the preload library: {:.3} s", median(preloaded)),
        )
        .peer(format!("plain `cat`: {:.3} s", median(plain)))
        .ratio(format!("{read_ratio:.2} of plain"))
        .target("≥ 0.90", Some(read_ratio >= 0.90)),
    ];
    bench_rows::record(
        "serve",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-stager --bench serve"),
        &table,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
