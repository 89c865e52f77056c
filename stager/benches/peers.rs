//! Fetching from other nodes (`stager::peers`) against bare MPI, in the
//! same run: 4 ranks as 4 pretend nodes, a dataset of 128 files of 8 MiB
//! staged `--policy shard` into `/dev/shm`, each node reading 2 epochs of a
//! global shuffle of it. Unpaced, the fetch rate (each node's bytes from
//! peers over the time to fetch them, slowest node) is compared with the
//! same bytes sent node to node in a ring over bare MPI point-to-point,
//! a file a message, from maps of the sender's own staged files into a
//! receive area the size of the cache (one sending and one receiving thread
//! per rank, as the exchange has); the ratio is the median of each rep's
//! own, as the two alternate within a rep. Each rep's fetch starts from an
//! empty cache, so it makes the pages it receives into; the bare transfer's
//! receive area is made in the rep too. The bare transfer into an area made
//! before the clock (the copy alone) is shown beside it. Paced at `STAGEHAND_BENCH_CONSUME` bytes/s per node (a
//! loader's rate; default 200MB/s), the share of the readers' time spent
//! waiting for a file. The cache holds a quarter of what a node reads in an
//! epoch, so files are evicted and fetched again. Each rep's line also
//! shows how many of the host's cores the ranks kept busy during the fetch
//! and during the bare transfer (CPU seconds of all ranks over the wall
//! time).
//!
//! ```sh
//! cargo bench -p stagehand-stager --bench peers
//! ```
//!
//! Environment: `STAGEHAND_BENCH_DIR` (the source, default
//! /tmp/stagehand-bench), `STAGEHAND_BENCH_DEST` (default
//! /dev/shm/stagehand-bench), `STAGEHAND_BENCH_REPS` (default 5),
//! `STAGEHAND_BENCH_CONSUME`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bench_rows::Row;
use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::placement::Policy;
use formats::sampling::{Remainder, shuffled_sequence};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use stager::peers::cache::Cache;
use stager::peers::{Holdings, PeerConfig, Progress, exchange};

const STAGER: &str = env!("CARGO_BIN_EXE_stager");
const PROBE: &str = "STAGEHAND_PEERS_BENCH_PROBE";
const NODES: usize = 4;
const FILES: usize = 128;
const FILE: usize = 8 << 20;
const EPOCHS: u64 = 2;

fn env_or(key: &str, default: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| default.to_owned())
}

fn make_dataset(src: &Path) -> Manifest {
    e2e::opaque_dataset(src, (FILES, FILE), 2028, "sample")
}

fn main() {
    if let Some(dirs) = std::env::var_os(PROBE) {
        probe(Path::new(&dirs));
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = PathBuf::from(env_or("STAGEHAND_BENCH_DIR", "/tmp/stagehand-bench"));
    let src = root.join("peers-src");
    let dest_root = PathBuf::from(env_or("STAGEHAND_BENCH_DEST", "/dev/shm/stagehand-bench"));
    let reps = bench_rows::repetitions(5).to_string();
    let consume = env_or("STAGEHAND_BENCH_CONSUME", "200MB/s");
    make_dataset(&src);
    let _ = std::fs::remove_dir_all(&dest_root);
    let dest = dest_root.join("node{node}");
    let staged = e2e::mpirun(
        NODES,
        &[("STAGEHAND_RANKS_PER_NODE", "1")],
        Path::new(STAGER),
        &["stage", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap(), "--policy", "shard"],
    );
    assert!(staged.status.success(), "{}", String::from_utf8_lossy(&staged.stderr));
    println!(
        "dataset: {FILES} files of {} MiB staged --policy shard on {NODES} pretend nodes; {EPOCHS} epochs of a \
         global shuffle; {reps} reps; paced readers {consume} per node",
        FILE >> 20
    );
    let this = std::env::current_exe().unwrap();
    let dirs = format!("{}:{}", src.display(), dest_root.display());
    let env = [
        (PROBE, dirs.as_str()),
        ("STAGEHAND_RANKS_PER_NODE", "1"),
        ("STAGEHAND_BENCH_REPS", reps.as_str()),
        ("STAGEHAND_BENCH_CONSUME", consume.as_str()),
    ];
    let out = e2e::mpirun(NODES, &env, &this, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let reports: Vec<serde_json::Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    for r in &reports {
        println!("{r}");
    }
    let figure = |key: &str| e2e::median(reports.iter().map(|r| r[key].as_f64().unwrap()).collect());
    let (peers, bare, wait) = (figure("peer_mb_s"), figure("bare_mb_s"), figure("paced_wait"));
    // The bare transfer's rate moves by half between reps on a shared
    // host; each rep's fetch and bare transfer run back to back.
    let ratio_to = |key: &str| {
        e2e::median(reports.iter().map(|r| r["peer_mb_s"].as_f64().unwrap() / r[key].as_f64().unwrap()).collect())
    };
    let (ratio, touched) = (ratio_to("bare_mb_s"), figure("bare_touched_mb_s"));
    let ratio_touched = ratio_to("bare_touched_mb_s");
    let _ = std::fs::remove_dir_all(&dest_root);
    let table = [
        Row::new("peer-fetch", format!("fetch from other nodes: {peers:.0} MB/s per node (slowest node)"))
            .peer(format!(
                "the same bytes over bare MPI point-to-point: {bare:.0} MB/s (into memory made before the clock: \
                 {touched:.0} MB/s, ratio {ratio_touched:.2})"
            ))
            .ratio(format!("{ratio:.2}"))
            .target("≥ 0.80", Some(ratio >= 0.80)),
        Row::new(
            "peer-data-wait",
            format!("readers paced at {consume} per node wait {:.2} % of their time", 100.0 * wait),
        )
        .target("< 2 %", Some(wait < 0.02)),
    ];
    bench_rows::record(
        "peers",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-stager --bench peers"),
        &table,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// Each rank: `reps` times, fetch (unpaced), then the bare MPI ring of the
/// same bytes, then fetch with paced readers; rank 0 prints each rep.
fn probe(dirs: &Path) {
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), Some("warn"));
    let text = dirs.to_str().unwrap();
    let (src, dest_root) = text.split_once(':').unwrap();
    let (src, dest_root) = (Path::new(src), Path::new(dest_root));
    let reps = bench_rows::repetitions(5);
    let rate = stager::units::parse_rate(&env_or("STAGEHAND_BENCH_CONSUME", "200MB/s")).unwrap();
    let node = world.topology().node;
    let manifest = Manifest::load(&src.join(MANIFEST_FILE)).unwrap();
    let mut owner = vec![None; manifest.files.len()];
    for (n, held) in manifest.files_per_node(NODES, Policy::Shard, 0).unwrap().iter().enumerate() {
        held.iter().for_each(|&f| owner[f] = Some(n));
    }
    let reads: Vec<usize> = (0..EPOCHS)
        .flat_map(|epoch| shuffled_sequence(FILES, NODES, (11, epoch), true, Remainder::Drop))
        .skip(node)
        .step_by(NODES)
        .collect();
    let dest = dest_root.join(format!("node{node}"));
    let holdings = Holdings { manifest: &manifest, owner: &owner, dest: &dest, source: src, ready: &|_| Ok(()) };
    let cache_dir = dest_root.join(format!("cache{node}"));
    let per_epoch = reads.len() / EPOCHS as usize;
    let config = PeerConfig { cache_dir: cache_dir.clone(), capacity: (per_epoch / 4 * FILE) as u64, window: 64 };
    let comm = world.thread_comm().expect("MPI_THREAD_MULTIPLE");
    // The bare transfer's sending side, ready before any clock starts:
    // this node's files mapped with their pages in place.
    let own: Vec<memmap2::Mmap> =
        (0..FILES).filter(|&f| owner[f] == Some(node)).map(|f| map_file(&dest.join(&manifest.files[f].path))).collect();
    let mut touched_area = vec![1u8; config.capacity as usize];
    for _ in 0..reps {
        let _ = std::fs::remove_dir_all(&cache_dir);
        world.barrier();
        let cpu = cpu_seconds();
        let (seconds, _, stats) = fetch(&world, &holdings, &reads, &config, None);
        let fetch_cores = sum_over(&world, cpu_seconds() - cpu) / slowest_of(&world, seconds);
        let fetched = stats.peer_bytes;
        let slowest = max_over(&world, seconds);
        let peer_mb_s = min_over(&world, fetched as f64 / seconds / 1e6);
        let mut bytes = [0u64; NODES];
        world.comm().all_gather_into(&fetched, &mut bytes[..]);
        // The fetch starts from an empty cache and makes its pages (a job's
        // first fill); the bare transfer receives into an area made in the
        // repetition likewise (allocated untouched, its pages made by the
        // receives), freed after the clock as the cache is.
        world.barrier();
        let cpu = cpu_seconds();
        let started = Instant::now();
        let mut fresh_area = vec![0u8; config.capacity as usize];
        bare_ring(&world, &comm, &own, &bytes, &mut fresh_area);
        let bare_seconds = started.elapsed().as_secs_f64();
        let bare_cores = sum_over(&world, cpu_seconds() - cpu) / slowest_of(&world, bare_seconds);
        drop(fresh_area);
        let bare_mb_s = min_over(&world, fetched as f64 / bare_seconds / 1e6);
        // The same into an area whose pages were made before the clock: the
        // copy alone, shown beside the row.
        world.barrier();
        let started = Instant::now();
        bare_ring(&world, &comm, &own, &bytes, &mut touched_area);
        let touched_mb_s = min_over(&world, fetched as f64 / started.elapsed().as_secs_f64() / 1e6);
        let _ = std::fs::remove_dir_all(&cache_dir);
        world.barrier();
        let (paced_seconds, waited, _) = fetch(&world, &holdings, &reads, &config, Some(rate));
        let paced_wait = max_over(&world, waited / paced_seconds);
        if world.is_root() {
            println!(
                "{}",
                serde_json::json!({ "peer_mb_s": peer_mb_s, "bare_mb_s": bare_mb_s, "bare_touched_mb_s": touched_mb_s,
                    "fetch_s": slowest,
                    "paced_wait": paced_wait, "evicted": stats.evicted,
                    "fetch_cores_busy": fetch_cores, "bare_cores_busy": bare_cores })
            );
        }
    }
    let _ = std::fs::remove_dir_all(&cache_dir);
}

/// Bare MPI: node n receives its fetched bytes (`bytes[n]`) from n - 1 and
/// sends n + 1 what n + 1 fetched, both at once: the bytes of n's `own`
/// files, whole, a file a message, into `area` used round. A re-sent
/// buffer would stay in the CPU's caches and time a cache-to-cache copy
/// that no transfer of a dataset gets.
fn bare_ring(world: &World, comm: &cluster::ThreadComm, own: &[memmap2::Mmap], bytes: &[u64; NODES], area: &mut [u8]) {
    let (to, from) = ((world.rank() + 1) % NODES, (world.rank() + NODES - 1) % NODES);
    std::thread::scope(|scope| {
        let send_bytes = bytes[to];
        // With no file of its own a node would send nothing and its
        // receiver would wait for ever.
        assert!(own.iter().any(|f| !f.is_empty()) || send_bytes == 0, "node {} holds no bytes to send", world.rank());
        let sending = scope.spawn(move || {
            let mut left = send_bytes;
            for file in own.iter().cycle() {
                if left == 0 {
                    break;
                }
                comm.comm().process_at_rank(to as i32).send_with_tag(&file[..], 50);
                left -= file.len() as u64;
            }
        });
        let slots = area.len() / FILE;
        for message in 0..bytes[world.rank()] as usize / FILE {
            let slot = &mut area[message % slots * FILE..][..FILE];
            comm.comm().process_at_rank(from as i32).receive_into_with_tag(slot, 50);
        }
        sending.join().unwrap();
    });
}

/// One exchange with a reader that takes each file as soon as it is there
/// (`rate` None) or paced to `rate` bytes/s: (seconds to the reader's end,
/// seconds it waited, stats).
fn fetch(
    world: &World,
    holdings: &Holdings<'_>,
    reads: &[usize],
    config: &PeerConfig,
    rate: Option<f64>,
) -> (f64, f64, stager::peers::PeerStats) {
    let node = world.topology().node;
    let progress = Progress::new(Cache::new(config.capacity, reads, |f| holdings.owner[f] != Some(node)));
    let started = Instant::now();
    let (waited, stats) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut waited = Duration::ZERO;
            for (at, &f) in reads.iter().enumerate() {
                if holdings.owner[f] != Some(node) {
                    let t = Instant::now();
                    progress.wait_cached(f, at).unwrap();
                    waited += t.elapsed();
                }
                if let Some(rate) = rate {
                    // The loader's work on this file's bytes.
                    std::thread::sleep(Duration::from_secs_f64(FILE as f64 / rate));
                }
                progress.consumed(at + 1);
            }
            waited
        });
        let stats = exchange(world, holdings, reads, config, &progress).unwrap();
        (reader.join().unwrap(), stats)
    });
    (started.elapsed().as_secs_f64(), waited.as_secs_f64(), stats)
}

/// `path` mapped for reading with its pages in place.
#[allow(unsafe_code)]
fn map_file(path: &Path) -> memmap2::Mmap {
    let file = std::fs::File::open(path).unwrap();
    // SAFETY: the bench's own staged copy, which nothing writes while mapped.
    unsafe { memmap2::MmapOptions::new().populate().map(&file) }.unwrap()
}

/// CPU seconds this process (all its threads) has used.
#[allow(unsafe_code)]
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()), 0);
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn sum_over(world: &World, value: f64) -> f64 {
    let mut out = 0.0;
    world.comm().all_reduce_into(&value, &mut out, SystemOperation::sum());
    out
}

fn slowest_of(world: &World, seconds: f64) -> f64 {
    max_over(world, seconds)
}

fn max_over(world: &World, value: f64) -> f64 {
    let mut out = 0.0;
    world.comm().all_reduce_into(&value, &mut out, SystemOperation::max());
    out
}

fn min_over(world: &World, value: f64) -> f64 {
    let mut out = 0.0;
    world.comm().all_reduce_into(&value, &mut out, SystemOperation::min());
    out
}
