//! Fetching from other nodes under a real `mpirun` (4 pretend nodes of one
//! rank): a dataset staged `--policy shard`, then each node reads a global
//! shuffle of it for 3 epochs through `stager::peers`, its cache far
//! smaller than what it reads. Every byte a node reads is the source's; the
//! cache never holds more than its capacity; files no node holds come from
//! the source; a holder's damaged copy fails the asker naming file and node.
//!
//! The test runs this test binary itself under mpirun, with an environment
//! variable that makes each rank run the probe instead.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::placement::Policy;
use formats::sampling::{Remainder, shuffled_sequence};
use serde_json::Value;
use stager::peers::cache::Cache;
use stager::peers::{Holdings, PeerConfig, Progress, exchange};

mod common;

/// Set on the ranks: run the probe in this directory, not the test.
const PROBE: &str = "STAGEHAND_PEERS_PROBE";
const NODES: usize = 4;
const EPOCHS: u64 = 3;

fn run_probe(root: &Path, test: &str) -> std::process::Output {
    let this = std::env::current_exe().unwrap();
    let env = [(PROBE, root.to_str().unwrap()), ("STAGEHAND_RANKS_PER_NODE", "1")];
    e2e::mpirun(NODES, &env, &this, &["--exact", test, "--nocapture", "--test-threads=1"])
}

/// The staged dataset: 24 files of up to `max_kib` KiB, sharded over 4
/// nodes.
fn staged(root: &Path, max_kib: usize) -> Manifest {
    let manifest = common::dataset(root, 24, max_kib);
    let staged = common::stage("1", root, &["--policy", "shard"]);
    assert!(staged.status.success(), "{}", String::from_utf8_lossy(&staged.stderr));
    manifest
}

fn reports(stdout: &str) -> Vec<Value> {
    // The harness prints the test's name on the line a report starts.
    let reports =
        stdout.lines().filter_map(|l| l.find("{\"capacity\"").map(|at| serde_json::from_str(&l[at..]).unwrap()));
    reports.collect()
}

#[test]
fn a_global_shuffle_reads_every_file_from_its_holder_or_the_source_within_the_cache() {
    if let Some(root) = std::env::var_os(PROBE) {
        probe(Path::new(&root));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    staged(dir.path(), 64);
    let out = run_probe(dir.path(), "a_global_shuffle_reads_every_file_from_its_holder_or_the_source_within_the_cache");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let reports = reports(&stdout);
    assert_eq!(reports.len(), NODES, "{stdout}");
    let total = |key: &str| reports.iter().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
    for r in &reports {
        assert!(r["most_held"].as_u64() <= r["capacity"].as_u64(), "{r}");
        assert!(r["on_disk"].as_u64() <= r["capacity"].as_u64(), "{r}");
    }
    assert!(total("peer_files") > 0 && total("evicted") > 0, "{stdout}");
    // File 0 is held by no node: whoever reads it (and does not still
    // have it cached) reads the source.
    assert!(total("source_files") >= 1 && total("source_files") <= total("reads_of_file_0"), "{stdout}");
    assert_eq!(total("served_bytes"), total("peer_bytes"));
}

#[test]
fn a_damaged_copy_on_its_holder_fails_the_asker_naming_file_and_node() {
    if let Some(root) = std::env::var_os(PROBE) {
        probe(Path::new(&root));
        return;
    }
    // Every file node 1 holds, damaged in place (same size).
    fails_naming_node_1("a_damaged_copy_on_its_holder_fails_the_asker_naming_file_and_node", 64, |bytes| {
        if let Some(first) = bytes.first_mut() {
            *first ^= 0xff;
        }
    });
}

#[test]
fn a_shorter_copy_on_its_holder_fails_the_asker_naming_file_and_node() {
    if let Some(root) = std::env::var_os(PROBE) {
        probe(Path::new(&root));
        return;
    }
    // Every file node 1 holds, a byte short: the asker takes the bytes
    // without giving them room and refuses them.
    fails_naming_node_1("a_shorter_copy_on_its_holder_fails_the_asker_naming_file_and_node", 64, |bytes| {
        bytes.pop();
    });
}

/// Files of up to 6 MiB travel in several messages (of 1 MiB), each
/// hashed as it lands, more of them than a holder has on their way at once.
#[test]
fn files_of_several_messages_arrive_whole() {
    if let Some(root) = std::env::var_os(PROBE) {
        probe(Path::new(&root));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let manifest = staged(dir.path(), 6 << 10);
    assert!(manifest.files.iter().filter(|f| f.bytes > 5 << 20).count() >= 2, "too few files of six messages");
    let out = run_probe(dir.path(), "files_of_several_messages_arrive_whole");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(reports(&stdout).iter().map(|r| r["peer_files"].as_u64().unwrap()).sum::<u64>() > 0, "{stdout}");
}

#[test]
fn a_copy_damaged_past_its_first_message_fails_the_asker_naming_file_and_node() {
    if let Some(root) = std::env::var_os(PROBE) {
        probe(Path::new(&root));
        return;
    }
    // Every file node 1 holds, its last byte changed: for the larger ones,
    // in the last of their messages.
    fails_naming_node_1(
        "a_copy_damaged_past_its_first_message_fails_the_asker_naming_file_and_node",
        3 << 10,
        |bytes| {
            if let Some(last) = bytes.last_mut() {
                *last ^= 0xff;
            }
        },
    );
}

/// Stage, change every file node 1 holds with `damage`, run `test`'s probe:
/// it fails with one line naming node 1 and one of its files.
fn fails_naming_node_1(test: &str, max_kib: usize, damage: impl Fn(&mut Vec<u8>)) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = staged(dir.path(), max_kib);
    let node1 = &manifest.files_per_node(NODES, Policy::Shard, 0).unwrap()[1];
    for &f in node1 {
        let path = dir.path().join("node1").join(&manifest.files[f].path);
        let mut bytes = std::fs::read(&path).unwrap();
        if !bytes.is_empty() {
            damage(&mut bytes);
            std::fs::write(&path, bytes).unwrap();
        }
    }
    let out = run_probe(dir.path(), test);
    assert!(!out.status.success(), "a damaged copy went unnoticed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("from node 1")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.starts_with("error:") && line.contains("the manifest says"), "{line}");
    assert!(node1.iter().any(|&f| line.contains(&manifest.files[f].path)), "{line}");
}

/// Each rank: read 3 epochs of a global shuffle of the files through
/// `stager::peers`, checking every byte against the source.
fn probe(root: &Path) {
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), Some("warn"));
    let node = world.topology().node;
    let source = root.join("src");
    let manifest = Manifest::load(&source.join(MANIFEST_FILE)).unwrap();
    let files = manifest.files.len();
    let mut owner = vec![None; files];
    for (n, held) in manifest.files_per_node(NODES, Policy::Shard, 0).unwrap().iter().enumerate() {
        held.iter().for_each(|&f| owner[f] = Some(n));
    }
    owner[0] = None;
    // Positions node, node + NODES, ... of each epoch's permutation of the files.
    let reads: Vec<usize> = (0..EPOCHS)
        .flat_map(|epoch| shuffled_sequence(files, NODES, (7, epoch), true, Remainder::Drop))
        .skip(node)
        .step_by(NODES)
        .collect();
    let largest = manifest.files.iter().map(|f| f.bytes).max().unwrap();
    let cache_dir = root.join(format!("cache{node}"));
    let config = PeerConfig { cache_dir: cache_dir.clone(), capacity: 3 * largest, window: 4 };
    let dest = root.join(format!("node{node}"));
    let holdings = Holdings { manifest: &manifest, owner: &owner, dest: &dest, source: &source, ready: &|_| Ok(()) };
    let progress = Progress::new(Cache::new(config.capacity, &reads, |f| owner[f] != Some(node)));
    let mut on_disk = 0u64;
    let done = std::sync::atomic::AtomicBool::new(false);
    let stats = std::thread::scope(|scope| {
        // The disk is watched all along, not only when the consumer reads:
        // the fetcher's renames and resizes happen between its reads.
        let watcher = scope.spawn(|| {
            let mut most = 0u64;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(dir_bytes(&cache_dir));
                std::thread::yield_now();
            }
            most
        });
        let consumer = scope.spawn(|| -> Result<u64, String> {
            let mut most = 0u64;
            for (at, &f) in reads.iter().enumerate() {
                // The node's own files were checked when staged.
                if owner[f] != Some(node) {
                    let path = &manifest.files[f].path;
                    progress.wait_cached(f, at).map_err(|e| e.to_string())?;
                    let got = std::fs::read(cache_dir.join(path)).map_err(|e| format!("{path}: {e}"))?;
                    assert!(got == std::fs::read(source.join(path)).unwrap(), "node {node}: {path} differs");
                }
                most = most.max(dir_bytes(&cache_dir));
                progress.consumed(at + 1);
            }
            Ok(most)
        });
        let stats = exchange(&world, &holdings, &reads, &config, &progress);
        let consumed = consumer.join().unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let watched = watcher.join().unwrap();
        if let Ok(most) = &consumed {
            on_disk = (*most).max(watched);
        }
        stats
    });
    let stats = stats.unwrap_or_else(|e| world.fail(cluster::logging::chain(&e)));
    let reads_of_file_0 = reads.iter().filter(|&&f| f == 0).count();
    let report = serde_json::json!({
        "node": node, "capacity": config.capacity, "on_disk": on_disk, "reads_of_file_0": reads_of_file_0,
        "peer_files": stats.peer_files, "peer_bytes": stats.peer_bytes, "source_files": stats.source_files,
        "evicted": stats.evicted, "most_held": stats.most_held, "served_bytes": stats.served_bytes,
    });
    println!("{report}");
}

/// Bytes of the files under `dir` (placed files and parts), skipping any
/// that go away while it looks (the fetcher renames and evicts meanwhile).
/// A file renamed while the directory is read may be listed under both
/// names: each inode counts once.
fn dir_bytes(dir: &Path) -> u64 {
    let mut seen = std::collections::HashMap::new();
    inode_bytes(dir, &mut seen);
    seen.values().sum()
}

fn inode_bytes(dir: &Path, seen: &mut std::collections::HashMap<u64, u64>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        match entry.file_type() {
            Ok(t) if t.is_dir() => inode_bytes(&entry.path(), seen),
            _ => {
                if let Ok(m) = entry.metadata() {
                    seen.insert(m.ino(), m.len());
                }
            }
        }
    }
}
