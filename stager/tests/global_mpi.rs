//! `stager serve --global-shuffle` under a real mpirun on 4 pretend nodes
//! of one rank each, with a client per node reading as a training rank
//! does (`NEED`, read, `DONE`, in the order the node's ranks read): every
//! sample once per epoch with the bytes of the source; the source read
//! once when the nodes have room, no more than `stager plan` predicts when
//! they hold half of it; a killed service fails its clients at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use formats::global_order::{ShuffleRecord, file_of_sample, train_samples};
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::service::ServiceClient;

mod common;
use common::STAGER;

const NODES: usize = 4;
const EPOCHS: u64 = 3;
const BATCH: &str = "2";

/// 48 files of up to 24 KiB holding 2 samples each.
fn dataset(root: &Path) -> Manifest {
    let mut m = common::dataset(root, 48, 24);
    for f in &mut m.files {
        f.samples = 2;
    }
    m.save(&root.join("src").join(MANIFEST_FILE)).unwrap();
    m
}

/// `stager serve --global-shuffle` of `root/src` into `root/node{node}`.
fn serve(root: &Path, extra: &[&str]) -> Child {
    let (src, dest) = (root.join("src"), root.join("node{node}"));
    let mut mpirun = Command::new("mpirun");
    e2e::own_mpi_session(&mut mpirun);
    let args = ["--policy", "shard", "--global-shuffle", "--epochs", "3", "--batch", BATCH, "--shuffle-seed", "9"];
    mpirun
        .args(e2e::MPIRUN_ARGS)
        .args(["-np", &NODES.to_string(), "-x", "STAGEHAND_RANKS_PER_NODE"])
        .env("STAGEHAND_RANKS_PER_NODE", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(STAGER)
        .args(["serve", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()])
        .args(args)
        .args(["--report", root.join("report.json").to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("serve.err")).unwrap())
        .spawn()
        .unwrap()
}

/// Node `node`'s client, once its service answers.
fn client(root: &Path, node: usize) -> (PathBuf, ServiceClient, ShuffleRecord) {
    let dest = root.join(format!("node{node}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(Some(client)) = ServiceClient::connect(&dest, "test reader") {
            let record = ShuffleRecord::read(&dest).unwrap().expect("the service writes its record first");
            return (dest, client, record);
        }
        let log = std::fs::read_to_string(root.join("serve.err")).unwrap_or_default();
        assert!(Instant::now() < deadline, "node {node}'s service never answered:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Read node `node`'s share of every epoch as its one training rank does,
/// checking each file against the source; the samples read, by epoch.
fn read_node(root: &Path, m: &Manifest, node: usize) -> Result<Vec<Vec<usize>>, String> {
    let (dest, mut client, record) = client(root, node);
    let samples = train_samples(m, None);
    let file = file_of_sample(&samples);
    let order = record.order;
    let mut read = vec![Vec::new(); EPOCHS as usize];
    for epoch in 0..EPOCHS {
        let sequence = order.sequence(epoch);
        for j in 0..order.per_rank() {
            let r = order.read_in(&sequence, epoch, node, j);
            let path = &m.files[file[r.sample]].path;
            let cached = client.need(r.position as u64, path).map_err(|e| e.to_string())?;
            let dir = if cached { &record.cache_dir } else { &dest };
            let got = std::fs::read(dir.join(path)).map_err(|e| format!("{path}: {e}"))?;
            assert!(got == std::fs::read(root.join("src").join(path)).unwrap(), "node {node}: {path} differs");
            client.done(r.position as u64).map_err(|e| e.to_string())?;
            read[epoch as usize].push(r.sample);
        }
    }
    Ok(read)
}

/// Read every node's share at once; stop the service; its report.
fn read_all_and_stop(root: &Path, m: &Manifest, mut service: Child) -> (Vec<Vec<Vec<usize>>>, serde_json::Value) {
    let reads: Vec<Vec<Vec<usize>>> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..NODES).map(|node| scope.spawn(move || read_node(root, m, node))).collect();
        readers.into_iter().map(|r| r.join().unwrap().unwrap()).collect()
    });
    let stopped = Command::new(STAGER).args(["stop", root.join("node0").to_str().unwrap()]).output().unwrap();
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let exit = service.wait().unwrap();
    assert!(exit.success(), "{}", std::fs::read_to_string(root.join("serve.err")).unwrap());
    let report = serde_json::from_slice(&std::fs::read(root.join("report.json")).unwrap()).unwrap();
    (reads, report)
}

/// Bytes the source served: the stage's reads and the fetchers'.
fn source_bytes(report: &serde_json::Value) -> u64 {
    let fetched: u64 =
        report["peers"]["per_node"].as_array().unwrap().iter().map(|n| n["source_bytes"].as_u64().unwrap()).sum();
    report["bytes_read_from_source"].as_u64().unwrap() + fetched
}

#[test]
fn every_sample_is_read_once_per_epoch_from_the_source_bytes_and_the_source_once_in_all() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path());
    // Slow enough that reads start while files are still being staged.
    let service = serve(dir.path(), &["--source-bandwidth", "2MB/s", "--window", "6"]);
    let (reads, report) = read_all_and_stop(dir.path(), &m, service);
    let (samples, world) = (96, NODES);
    for epoch in 0..EPOCHS as usize {
        let mut all: Vec<usize> = reads.iter().flat_map(|node| node[epoch].iter().copied()).collect();
        let read = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), read, "epoch {epoch}: a sample read twice");
        assert_eq!(read, samples / world / 2 * 2 * world, "epoch {epoch}: every dealt sample read");
    }
    assert_ne!(reads[0][0], reads[0][1], "epochs are shuffled anew");
    assert_eq!(source_bytes(&report), m.total_bytes(), "the source is read once in all: {report}");
    let fetched: u64 =
        report["peers"]["per_node"].as_array().unwrap().iter().map(|n| n["peer_bytes"].as_u64().unwrap()).sum();
    assert!(fetched > 0, "other nodes' files came from them: {report}");
    for node in 0..NODES {
        let dest = dir.path().join(format!("node{node}"));
        assert!(ShuffleRecord::read(&dest).unwrap().is_none(), "the record goes with the service");
        assert!(!formats::global_order::default_cache_dir(&dest).exists(), "so does the cache");
    }
}

/// Serve 3 epochs to readers with room for about half the dataset on the
/// nodes and the fetcher `window` reads ahead; the bytes the source served
/// and those `stager plan --capacity` predicts for the same job, evicting
/// by `eviction`.
fn served_and_predicted(window: &str, eviction: &str) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path());
    let largest = m.files.iter().map(|f| f.bytes).max().unwrap();
    let cache = 3 * largest;
    let capacity = m.total_bytes() / 8 + cache;
    let (capacity, cache) = (capacity.to_string(), cache.to_string());
    let sizing =
        ["--capacity", capacity.as_str(), "--cache", cache.as_str(), "--window", window, "--eviction", eviction];
    let service = serve(dir.path(), &sizing);
    let (reads, report) = read_all_and_stop(dir.path(), &m, service);
    assert!(reads.iter().all(|node| node.len() == EPOCHS as usize));
    let src = dir.path().join("src");
    let plan = Command::new(STAGER)
        .args(["plan", "--source", src.to_str().unwrap(), "--policy", "shard", "--nodes", "4", "--json"])
        .args(sizing)
        .args(["--epochs", "3", "--shuffle-seed", "9", "--batch", BATCH])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let epochs = plan["capacity"]["chosen"]["epochs"].as_array().unwrap_or_else(|| panic!("{plan}"));
    let predicted: u64 = epochs.iter().map(|e| e["source"].as_u64().unwrap()).sum();
    let read = source_bytes(&report);
    assert!(read > m.total_bytes(), "files no node keeps are read again: {report}");
    (read, predicted)
}

#[test]
fn with_room_for_half_the_dataset_the_source_is_read_no_more_than_plan_predicts() {
    // A window of one read: the fetcher fetches each file when the reader
    // reaches it, which is what the model replays, byte for byte.
    let (read, predicted) = served_and_predicted("1", "furthest");
    assert_eq!(read, predicted, "the source served {read} bytes, stager plan predicts {predicted}");
    let (lru, lru_predicted) = served_and_predicted("1", "lru");
    assert_eq!(lru, lru_predicted, "with LRU the source served {lru} bytes, stager plan predicts {lru_predicted}");
    assert!(read < lru, "furthest next use reads less than LRU: {read} against {lru}");
    // A wider window: the model takes the reader to be as far behind as
    // the window lets it (the fetcher never evicts a file still to be
    // read), the most the service can keep from eviction.
    let (read, predicted) = served_and_predicted("6", "furthest");
    assert!(read <= predicted, "the source served {read} bytes, stager plan predicts {predicted}");
}

#[test]
fn a_killed_service_fails_its_clients_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path());
    let mut service = serve(dir.path(), &["--source-bandwidth", "50KB/s"]);
    let (dest, mut client, record) = client(dir.path(), 1);
    let pattern = format!("stager serve --source {}", dir.path().join("src").display());
    let killed = Instant::now();
    assert!(Command::new("pkill").args(["-KILL", "-f", &pattern]).status().unwrap().success());
    // Whatever it asks next (a file it holds or another node's), it learns
    // the service is gone rather than waiting for it.
    let file = file_of_sample(&train_samples(&m, None));
    let r = record.order.read(0, 1, record.order.per_rank() - 1);
    let error = loop {
        match client.need(r.position as u64, &m.files[file[r.sample]].path) {
            Err(e) => break e,
            Ok(_) => assert!(killed.elapsed() < Duration::from_secs(10), "still answered after the kill"),
        }
    };
    assert!(killed.elapsed() < Duration::from_secs(10), "failed {:?} after the kill", killed.elapsed());
    assert!(error.to_string().contains(&dest.display().to_string()), "{error}");
    let _ = service.kill();
    let _ = service.wait();
}
