//! Training beside `stager serve` under a real `mpirun`: two pretend nodes
//! of one rank each for the service and for the trainer, on CosmoFlow
//! volumes simgen writes for the test (one sample per file, as MLPerf's
//! layout has it), through a source throttled so staging takes seconds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");
const PRETEND_NODES: [(&str, &str); 1] = [("STAGEHAND_RANKS_PER_NODE", "1")];
/// Pretend nodes, and a trainer told to wait for a service still starting
/// (both `mpirun`s start at the same moment).
const BESIDE_THE_SERVICE: [(&str, &str); 2] = [("STAGEHAND_RANKS_PER_NODE", "1"), ("STAGEHAND_SERVICE_WAIT", "60")];

/// 4 boxes of 8 sub-volumes, one per file: 32 sample files.
fn dataset(dir: &Path) -> PathBuf {
    let mut config = e2e::cosmo_config(4, 23);
    config.samples_per_file = 1;
    e2e::simulate_cosmo(&dir.join("data"), &config)
}

fn stager_args<'a>(command: &'a str, data: &'a Path, dest: &'a str) -> Vec<&'a str> {
    vec![command, "--source", data.to_str().unwrap(), "--dest", dest, "--policy", "shard"]
}

/// `stager serve` on two pretend nodes, running until stopped.
fn spawn_service(dir: &Path, data: &Path, dest: &str, bandwidth: &str) -> Child {
    spawn_service_with(dir, data, dest, &["--source-bandwidth", bandwidth])
}

/// [`spawn_service`] with other options.
fn spawn_service_with(dir: &Path, data: &Path, dest: &str, extra: &[&str]) -> Child {
    let mut command = Command::new("mpirun");
    e2e::own_mpi_session(&mut command);
    command.args(e2e::MPIRUN_ARGS).args(["-np", "2"]);
    command.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    command.env("STAGEHAND_RANKS_PER_NODE", "1").args(["-x", "STAGEHAND_RANKS_PER_NODE"]);
    command.arg(e2e::workspace_binary("stager")).args(stager_args("serve", data, dest)).args(extra);
    let log = |name: &str| std::fs::File::create(dir.join(name)).unwrap();
    command.stdout(log("serve.out")).stderr(log("serve.err")).spawn().expect("starting mpirun")
}

fn train(dest: &str, env: &[(&str, &str)]) -> Output {
    let args = ["train", "--config", "mlperf-small", "--staged", dest, "--val-fraction", "0", "--epochs", "2"];
    let args: Vec<&str> = args.iter().copied().chain(["--batch", "2", "--workers", "1", "--seed", "3"]).collect();
    e2e::mpirun(2, env, Path::new(TRAINER), &args)
}

fn stager(args: &[&str]) -> Output {
    Command::new(e2e::workspace_binary("stager")).args(args).output().unwrap()
}

/// `stager status --json` of node 0, once the service answers.
fn status(node0: &Path) -> Option<serde_json::Value> {
    let output = stager(&["status", node0.to_str().unwrap(), "--json"]);
    output.status.success().then(|| serde_json::from_slice(&output.stdout).unwrap())
}

fn checksums(report: &serde_json::Value) -> Vec<String> {
    report["epochs"].as_array().unwrap().iter().map(|e| e["checksum"].as_str().unwrap().to_owned()).collect()
}

/// Started at the same moment as the service (a moment before it, so it
/// must wait for the service to come up), training reads exactly what it
/// reads from a fully staged destination (same parameters after every
/// epoch), gets its first batch well before staging ends, and the service
/// stops when asked, leaving a destination `stager verify` accepts.
#[test]
fn training_beside_the_service_matches_training_after_staging_and_starts_first() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let reference = format!("{}/ref{{node}}", dir.path().display());
    let staged =
        e2e::mpirun(2, &PRETEND_NODES, &e2e::workspace_binary("stager"), &stager_args("stage", &data, &reference));
    assert!(staged.status.success(), "{}", String::from_utf8_lossy(&staged.stderr));
    let expected = checksums(&e2e::trainer_report(&train(&reference, &PRETEND_NODES)));

    let served = format!("{}/sv{{node}}", dir.path().display());
    let node0 = dir.path().join("sv0");
    let started = Instant::now();
    let trainer = {
        let served = served.clone();
        std::thread::spawn(move || train(&served, &BESIDE_THE_SERVICE))
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut service = spawn_service(dir.path(), &data, &served, "1MB/s");
    // The time the service says it has staged everything, seen from the
    // trainer's start.
    let watcher = {
        let node0 = node0.clone();
        std::thread::spawn(move || {
            loop {
                if status(&node0).is_some_and(|s| s["phase"] == "staged")
                    || started.elapsed() > Duration::from_secs(120)
                {
                    return started.elapsed().as_secs_f64();
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let report = e2e::trainer_report(&trainer.join().unwrap());
    let staged_after = watcher.join().unwrap();
    assert_eq!(checksums(&report), expected, "the same parameters as training from the staged destination");
    let first_batch = report["first_batch_secs"].as_f64().unwrap();
    assert!(
        first_batch + 2.0 < staged_after,
        "first batch {first_batch:.2} s after the trainer started; everything staged {staged_after:.2} s after both did"
    );
    assert!(report["staging_wait_secs"].as_f64().unwrap() > 0.0, "it read files as they were staged: {report}");

    let clients = status(&node0).unwrap()["clients"].clone();
    assert!(clients.as_array().unwrap().iter().any(|c| c["waited"].as_u64().unwrap() > 0), "{clients}");
    assert!(stager(&["stop", node0.to_str().unwrap()]).status.success());
    let exit = service.wait().unwrap();
    assert!(exit.success(), "{}", std::fs::read_to_string(dir.path().join("serve.err")).unwrap());
    assert!(!formats::service::socket_path(&node0).exists(), "the socket is gone once stopped");
    let verified =
        e2e::mpirun(2, &PRETEND_NODES, &e2e::workspace_binary("stager"), &stager_args("verify", &data, &served));
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
}

/// A global shuffle served from two pretend nodes, each keeping half the
/// files (and with a capacity, a quarter: the rest read from the source
/// again), trains to the same parameters after every epoch as training
/// from the whole dataset in a directory every rank reads: the batches are
/// the same, though most of each node's samples come from the other node
/// or the source.
#[test]
fn a_served_global_shuffle_trains_as_the_whole_dataset_in_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let whole = ["train", "--config", "mlperf-small", "--data", data.to_str().unwrap(), "--val-fraction", "0"];
    let more = ["--epochs", "2", "--batch", "2", "--workers", "1", "--seed", "3"];
    let args: Vec<&str> = whole.iter().chain(&more).copied().collect();
    let expected = checksums(&e2e::trainer_report(&e2e::mpirun(2, &PRETEND_NODES, Path::new(TRAINER), &args)));

    let manifest = formats::manifest::Manifest::load(&data.join("manifest.json")).unwrap();
    // Room for a quarter of the dataset's files on each node, and three more in the cache.
    let cache = 3 * manifest.files.iter().map(|f| f.bytes).max().unwrap();
    let (capacity, cache) = ((manifest.total_bytes() / 4 + cache).to_string(), cache.to_string());
    let capped = vec!["--capacity", capacity.as_str(), "--cache", cache.as_str()];
    for (name, sizing) in [("gs", vec![]), ("cap", capped)] {
        let served = format!("{}/{name}{{node}}", dir.path().display());
        let global = ["--global-shuffle", "--epochs", "2", "--batch", "2", "--shuffle-seed", "3", "--window", "4"];
        let extra: Vec<&str> = global.iter().copied().chain(sizing).chain(["--source-bandwidth", "8MB/s"]).collect();
        let mut service = spawn_service_with(dir.path(), &data, &served, &extra);
        let report = e2e::trainer_report(&train(&served, &BESIDE_THE_SERVICE));
        assert_eq!(checksums(&report), expected, "{name}: the parameters of training from the whole dataset");
        let node0 = dir.path().join(format!("{name}0"));
        assert!(stager(&["stop", node0.to_str().unwrap()]).status.success());
        let exit = service.wait().unwrap();
        assert!(exit.success(), "{name}: {}", std::fs::read_to_string(dir.path().join("serve.err")).unwrap());
    }
}

/// A trainer asking a served global shuffle for other batches or more
/// epochs than the service was told is refused in one line.
#[test]
fn a_global_shuffle_served_for_another_batch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let served = format!("{}/gs{{node}}", dir.path().display());
    let global = ["--global-shuffle", "--epochs", "1", "--batch", "4", "--shuffle-seed", "3"];
    let mut service = spawn_service_with(dir.path(), &data, &served, &global);
    let output = train(&served, &BESIDE_THE_SERVICE);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("batches of 4 per rank; this run's --batch is 2"), "{stderr}");
    assert!(stager(&["stop", dir.path().join("gs0").to_str().unwrap()]).status.success());
    assert!(service.wait().unwrap().success());
}

/// DeepCAM's layout (one field per HDF5 file, `stats.h5` beside them)
/// trains beside the service exactly as after staging, opening each file as
/// it arrives: the source's `stats.h5` normalises the fields until the
/// node's copy is in place (the service stages it last: no sample in it).
#[test]
fn tiramisu_beside_the_service_matches_training_after_staging() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_climate(dir.path(), 20, 16, 5);
    let train = |dest: &str, env: &[(&str, &str)]| {
        let args = ["train", "--model", "tiramisu", "--config", "small", "--staged", dest, "--val"];
        let more = ["--epochs", "1", "--batch", "2", "--workers", "1", "--seed", "3"];
        let args: Vec<&str> = args.iter().copied().chain([data.to_str().unwrap()]).chain(more).collect();
        e2e::trainer_report(&e2e::mpirun(2, env, Path::new(TRAINER), &args))
    };
    let reference = format!("{}/ref{{node}}", dir.path().display());
    let staged =
        e2e::mpirun(2, &PRETEND_NODES, &e2e::workspace_binary("stager"), &stager_args("stage", &data, &reference));
    assert!(staged.status.success(), "{}", String::from_utf8_lossy(&staged.stderr));
    let expected = checksums(&train(&reference, &PRETEND_NODES));

    let served = format!("{}/sv{{node}}", dir.path().display());
    let extra = ["--source-bandwidth", "4MB/s", "--train-under", "train/"];
    let mut service = spawn_service_with(dir.path(), &data, &served, &extra);
    let report = train(&served, &BESIDE_THE_SERVICE);
    assert_eq!(checksums(&report), expected, "the same parameters as training from the staged destination");
    assert!(report["staging_wait_secs"].as_f64().unwrap() > 0.0, "it read files as they were staged: {report}");
    let node0 = dir.path().join("sv0");
    assert!(stager(&["stop", node0.to_str().unwrap()]).status.success());
    let exit = service.wait().unwrap();
    assert!(exit.success(), "{}", std::fs::read_to_string(dir.path().join("serve.err")).unwrap());
}

/// A client showing the wrong token is refused; a trainer whose service
/// is killed mid-way fails within seconds naming the service, instead of
/// waiting for files that will never come.
#[test]
fn a_wrong_token_is_refused_and_a_killed_service_fails_its_trainer_within_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path());
    let served = format!("{}/sv{{node}}", dir.path().display());
    let node0 = dir.path().join("sv0");
    let mut service = spawn_service(dir.path(), &data, &served, "100KB/s");
    let socket = formats::service::socket_path(&node0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while status(&node0).is_none() {
        assert!(Instant::now() < deadline, "the service never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    stream.write_all(b"HELLO 0123456789abcdef0123456789abcdef intruder\n").unwrap();
    let mut reply = String::new();
    BufReader::new(&stream).read_line(&mut reply).unwrap();
    assert_eq!(reply.trim(), "DENIED wrong token");

    let trainer = {
        let served = served.clone();
        std::thread::spawn(move || train(&served, &PRETEND_NODES))
    };
    std::thread::sleep(Duration::from_secs(3));
    let killed = Instant::now();
    // The service's ranks die at once (as on a node failure); mpirun goes with them.
    let pattern = format!("stager serve --source {}", data.display());
    assert!(Command::new("pkill").args(["-KILL", "-f", &pattern]).status().unwrap().success());
    let output = trainer.join().unwrap();
    let took = killed.elapsed();
    let _ = service.kill();
    let _ = service.wait();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the trainer must fail: {stderr}");
    assert!(took < Duration::from_secs(10), "failed {took:?} after the kill");
    assert!(stderr.contains("staging service of"), "{stderr}");
}

/// A `STAGEHAND_SERVICE_WAIT` that is not a number of seconds is one line
/// naming the variable and its value, before any training.
#[test]
fn a_malformed_service_wait_fails_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let dest = format!("{}/node{{node}}", dir.path().display());
    std::fs::create_dir_all(dir.path().join("node0")).unwrap();
    let output = train(&dest, &[("STAGEHAND_RANKS_PER_NODE", "1"), ("STAGEHAND_SERVICE_WAIT", "soon")]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("STAGEHAND_SERVICE_WAIT") && stderr.contains("soon"), "{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.contains("STAGEHAND_SERVICE_WAIT")).count(), 1, "{stderr}");
}
