//! `stager serve` under a real mpirun on two pretend nodes of one rank
//! each: a stop mid-way, and the faults that end a service (a source file
//! changed while it stages, node-local storage filling up) with a client
//! waiting on the socket as a training process would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use formats::manifest::Manifest;
use formats::placement::Policy;
use formats::service::{ServiceClient, ServiceError};

mod common;
use common::{STAGER, assert_nodes_hold, contents, dataset, expected, report, spawn_stager, stage, walk};

/// `stager serve` of `root/src` into `root/node{node}`, two pretend nodes.
fn serve(root: &Path, bandwidth: &str) -> Child {
    let args = ["--policy", "shard", "--chunk-size", "16KiB", "--source-bandwidth", bandwidth];
    spawn_stager("serve", root, 2, "1", &args)
}

/// Block until `dir` holds `files` files under their final names.
fn until_placed(dir: &Path, files: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while contents(dir).len() < files {
        assert!(Instant::now() < deadline, "the service placed fewer than {files} files in {}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A client of `node`'s service asking for every file of `m` in turn, as a
/// training process does, in a thread: its first answer that is neither
/// READY nor UNKNOWN (another node's file) arrives on the channel, with
/// the moment it came.
fn waiting_client(node: &Path, m: &Manifest) -> mpsc::Receiver<(Result<(), ServiceError>, Instant)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !formats::service::socket_path(node).exists() {
        assert!(Instant::now() < deadline, "the service never opened its socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut client = ServiceClient::connect(node, "test client").unwrap().expect("a service");
    let paths: Vec<String> = m.files.iter().map(|f| f.path.clone()).collect();
    let (answer, answered) = mpsc::channel();
    std::thread::spawn(move || {
        for path in &paths {
            match client.wait(path) {
                Ok(()) | Err(ServiceError::Unknown { .. }) => {}
                Err(e) => {
                    let _ = answer.send((Err(e), Instant::now()));
                    return;
                }
            }
        }
        let _ = answer.send((Ok(()), Instant::now()));
    });
    answered
}

/// After a fault: the service exits non-zero saying `why`, the waiting
/// client was answered FAILED (never left waiting) within 10 s of `broken`,
/// no temporary file is left, every file under a final name is whole
/// (`want`, per node) and the socket is gone.
fn assert_ended_cleanly(
    root: &Path,
    service: Child,
    client: mpsc::Receiver<(Result<(), ServiceError>, Instant)>,
    broken: Instant,
    why: &str,
    want: &[std::collections::BTreeMap<String, Vec<u8>>],
) {
    let (answer, at) = client.recv_timeout(Duration::from_secs(60)).expect("the client was left waiting");
    match answer {
        Err(ServiceError::Failed { why: said, .. }) => assert!(said.contains(why), "FAILED {said}"),
        other => panic!("the client was answered {other:?}, not FAILED"),
    }
    assert!(at.duration_since(broken) < Duration::from_secs(10), "answered {:?} after the fault", at - broken);
    let out = service.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the service exited 0 after a fault:\n{stderr}");
    assert!(stderr.lines().any(|l| l.starts_with("error:") && l.contains(why)), "{stderr}");
    for (node, files) in want.iter().enumerate() {
        let dir = root.join(format!("node{node}"));
        let tmp = dir.join(".stagehand/tmp");
        assert!(!tmp.exists() || walk(&tmp).is_empty(), "temporary files left in {}", tmp.display());
        for (path, bytes) in contents(&dir) {
            assert!(path == "other-job.bin" || files.get(&path) == Some(&bytes), "node {node}: {path} is not whole");
        }
        assert!(!formats::service::socket_path(&dir).exists(), "node {node}'s socket is left behind");
    }
}

/// A staging service stopped mid-way keeps what it placed: the stage run
/// after it copies only the files not yet in place, none twice (those
/// placed after the journal's last commit are re-hashed where they are).
#[test]
fn a_service_stopped_mid_way_leaves_a_destination_restaged_without_copying_twice() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 24, 128);
    let mut service = serve(dir.path(), "500KB/s");
    let node0 = dir.path().join("node0");
    until_placed(&node0, 3);
    let stop = Command::new(STAGER).args(["stop", node0.to_str().unwrap()]).output().unwrap();
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    let status = service.wait().unwrap();
    assert_eq!(status.code(), Some(3), "a stop while staging ends the job as a failure does");
    for node in 0..2 {
        let tmp = dir.path().join(format!("node{node}/.stagehand/tmp"));
        assert!(!tmp.exists() || walk(&tmp).is_empty(), "temporary files left in {}", tmp.display());
    }
    let held: Vec<_> = (0..2).map(|n| contents(&dir.path().join(format!("node{n}")))).collect();
    let held_bytes: u64 = held.iter().flat_map(|h| h.values()).map(|b| b.len() as u64).sum();
    let held_files: usize = held.iter().map(|h| h.len()).sum();
    assert!(held_files < m.files.len(), "stopped after staging everything: slow the source down");
    let r = report(&stage("2", dir.path(), &["--policy", "shard"]));
    assert_eq!(r["files_skipped_from_journal"], held_files, "{r}");
    assert_eq!(r["bytes_read_from_source"], m.total_bytes() - held_bytes, "{r}");
    let want = expected(dir.path(), &m, 2, Policy::Shard, 0);
    assert_nodes_hold(dir.path(), &want, "after the stage");
}

/// Source files rewritten while the service stages them (same sizes, other
/// bytes: another job regenerating the dataset): the service fails naming
/// the file, answers its waiting client FAILED, and leaves only whole
/// files of the dataset as it was.
#[test]
fn a_source_file_changed_while_serving_fails_the_service_and_answers_its_client() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 24, 128);
    let want = expected(dir.path(), &m, 2, Policy::Shard, 0);
    let service = serve(dir.path(), "200KB/s");
    let node0 = dir.path().join("node0");
    let client = waiting_client(&node0, &m);
    until_placed(&node0, 2);
    // The last byte of each file not in place yet: a file being read
    // reaches it last, so any read still under way sees the change.
    let placed: Vec<_> = (0..2).flat_map(|n| contents(&dir.path().join(format!("node{n}"))).into_keys()).collect();
    let mut changed = 0;
    for file in m.files.iter().filter(|f| f.bytes > 0 && !placed.contains(&f.path)) {
        let path = dir.path().join("src").join(&file.path);
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 0x5a;
        std::fs::write(&path, bytes).unwrap();
        changed += 1;
    }
    assert!(changed > 4, "the service had nearly finished: slow the source down");
    let broken = Instant::now();
    assert_ended_cleanly(dir.path(), service, client, broken, "differs from the manifest", &want);
}

/// Node-local storage filling up while the service stages (another job's
/// file grows on the same disk): the service fails with the system's
/// reason, answers its waiting client FAILED, and leaves no part-written
/// file; once there is room, a stage run completes the destination.
#[test]
fn node_local_storage_filling_up_while_serving_fails_the_service_and_answers_its_client() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 24, 128);
    let want = expected(dir.path(), &m, 2, Policy::Shard, 0);
    let node0 = dir.path().join("node0");
    let test = "node_local_storage_filling_up_while_serving_fails_the_service_and_answers_its_client";
    let Some(_disk) = e2e::Tmpfs::mount(test, &node0, m.total_bytes() + (512 << 10)) else {
        return;
    };
    let service = serve(dir.path(), "300KB/s");
    let client = waiting_client(&node0, &m);
    until_placed(&node0, 2);
    let filler = node0.join("other-job.bin");
    fill_all_but(&filler, 8 << 10);
    let broken = Instant::now();
    assert_ended_cleanly(dir.path(), service, client, broken, "No space left on device", &want);

    std::fs::remove_file(&filler).unwrap();
    report(&stage("2", dir.path(), &["--policy", "shard"]));
    assert_nodes_hold(dir.path(), &want, "after the rerun");
}

/// Grows `filler` until the file system holding it has `spare` bytes
/// left, in chunks, because the service keeps placing files meanwhile:
/// the free space read before one large write is stale by the time it
/// lands. The service taking the last bytes first ends the filling too.
fn fill_all_but(filler: &Path, spare: u64) {
    use std::io::Write;
    let dir = filler.parent().unwrap();
    let mut file = std::fs::File::create(filler).unwrap();
    let chunk = vec![1u8; 16 << 10];
    loop {
        let free = stager::destination::space::free_space(dir).unwrap().bytes;
        if free <= spare {
            return;
        }
        let take = chunk.len().min((free - spare) as usize);
        match file.write_all(&chunk[..take]) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(28) => return,
            Err(e) => panic!("filling {}: {e}", filler.display()),
        }
    }
}

/// A second service on a destination a running one serves is refused with
/// one line naming the holder, and leaves the first serving; a destination
/// whose socket path `sun_path` cannot hold is refused before data moves
/// or a placement record is written.
#[test]
fn a_second_service_and_a_socket_path_too_long_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 8, 64);
    let mut first = serve(dir.path(), "100KB/s");
    let node0 = dir.path().join("node0");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !formats::service::socket_path(&node0).exists() {
        assert!(Instant::now() < deadline, "the first service never opened its socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = serve(dir.path(), "100KB/s").wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second service started on a served destination");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(lines.iter().any(|l| l.contains("being staged by another job") && l.contains("pid")), "{stderr}");
    assert!(formats::service::socket_path(&node0).exists(), "the refused service removed the first one's socket");
    assert!(ServiceClient::connect(&node0, "test").unwrap().is_some(), "the first service still answers");
    first.kill().unwrap();
    let _ = first.wait();

    let long = dir.path().join("d".repeat(100));
    dataset(&long, 8, 64);
    let out = serve(&long, "100KB/s").wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "served with a socket path longer than sun_path");
    let line = stderr.lines().find(|l| l.contains("a Unix socket path holds at most 107"));
    assert!(line.is_some_and(|l| l.starts_with("error:") && l.contains("use a shorter --dest")), "{stderr}");
    for node in 0..2 {
        let node_dir = long.join(format!("node{node}"));
        let placed = contents(&node_dir);
        assert!(placed.is_empty(), "node {node}: files moved before the refusal: {:?}", placed.keys());
        let record = formats::placement_record::PlacementRecord::path(&node_dir);
        assert!(!record.exists(), "node {node}: the refused service left a placement record");
    }
}
