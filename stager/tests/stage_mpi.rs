//! `stager stage` end to end under a real mpirun: 4 ranks as 2 and as 4
//! pretend nodes, every policy, and the faults that must not lose data.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use formats::manifest::MANIFEST_FILE;
use formats::placement::Policy;
use formats::placement_record::PlacementRecord;

mod common;
use common::{STAGER, assert_nodes_hold, contents, dataset, expected, is_root, report, spawn_stage, stage, walk};

/// Stage under `policy` and check every node's files and the report. The
/// test data is on a local file system, where `--read-method auto` maps.
fn check_policy(ranks_per_node: &str, nodes: usize, policy: &str, read_method: &str, chunk_size: &str) {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 24, 96);
    let parsed: Policy = policy.parse().unwrap();
    let r = report(&stage(
        ranks_per_node,
        dir.path(),
        &[
            "--policy",
            policy,
            "--seed",
            "5",
            "--chunk-size",
            chunk_size,
            "--threads",
            "3",
            "--read-method",
            read_method,
        ],
    ));
    let want = expected(dir.path(), &m, nodes, parsed, 5);
    let needs = m.files_per_node(nodes, parsed, 5).unwrap();
    let mut written = 0usize;
    for (node, files) in want.iter().enumerate() {
        // The placement record says what the node holds and why.
        let (record, copy) = PlacementRecord::open(&dir.path().join(format!("node{node}"))).unwrap();
        assert_eq!(copy, m);
        assert_eq!((record.policy, record.seed, record.nodes, record.node), (parsed, 5, nodes, node));
        assert_eq!(record.file_indices(), needs[node]);
        assert_eq!(record.source, std::path::absolute(dir.path().join("src")).unwrap());
        let got = contents(&dir.path().join(format!("node{node}")));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            files.keys().collect::<Vec<_>>(),
            "node {node} holds the wrong files"
        );
        assert!(got == *files, "node {node}: bytes differ from the source");
        written += files.values().map(Vec::len).sum::<usize>();
        assert!(
            !dir.path().join(format!("node{node}/.stagehand/tmp")).exists()
                || walk(&dir.path().join(format!("node{node}/.stagehand/tmp"))).is_empty()
        );
    }
    let unique: u64 = {
        let mut needed: Vec<&String> = want.iter().flat_map(|f| f.keys()).collect();
        needed.sort();
        needed.dedup();
        needed.iter().map(|p| m.entry(p).unwrap().bytes).sum()
    };
    assert_eq!(r["bytes_written"], written);
    assert_eq!(r["bytes_read_from_source"], unique);
    assert_eq!(r["unique_bytes_needed"], unique);
    assert_eq!(r["read_amplification"], 1.0);
    assert_eq!(r["nodes"], nodes);
    // Every byte written on a node other than its reader's crossed MPI.
    assert!(r["bytes_moved_over_mpi"].as_u64().unwrap() <= written as u64);
    // The phases are timed, whoever wrote (readers write their own node's
    // copies; under `shard` on 1 rank per node nothing else is written).
    let seconds = &r["seconds"];
    for phase in ["read", "write", "total"] {
        assert!(seconds[phase].as_f64().unwrap() > 0.0, "{policy}: {phase} took no time: {r}");
    }
    assert!(seconds["write"].as_f64().unwrap() <= seconds["total"].as_f64().unwrap(), "{r}");
}

#[test]
fn replicate_on_two_and_four_nodes() {
    check_policy("2", 2, "replicate", "auto", "20KiB");
    check_policy("1", 4, "replicate", "read", "20KiB");
}

#[test]
fn shard_on_two_and_four_nodes() {
    check_policy("2", 2, "shard", "read", "20KiB");
    // Chunks that do not start on a page: the maps start on the page before.
    check_policy("1", 4, "shard", "mmap", "10000");
}

#[test]
fn per_node_on_two_and_four_nodes() {
    check_policy("2", 2, "per-node=12", "mmap", "20KiB");
    check_policy("1", 4, "per-node=12", "read", "20KiB");
}

/// Readers gather whole small files into packs for the nodes that need
/// them: with the budget one buffer (one pack for three readers, which wait
/// for it in turn), receivers that change from file to file (`per-node` on
/// 4 nodes), empty files, and files of exactly what fits in a pack beside
/// larger ones sent in chunks.
#[test]
fn small_files_gathered_into_packs_arrive_whole_with_one_buffer_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 90, 3);
    let src = dir.path().join("src");
    std::fs::write(src.join("empty.bin"), b"").unwrap();
    // A pack's record is a 32-byte head and the file: this one fills a
    // pack of the 8 KiB chunk alone; the next goes in two chunks.
    std::fs::write(src.join("sub/fits.bin"), vec![7u8; 8192 - 32]).unwrap();
    std::fs::write(src.join("sub/over.bin"), vec![9u8; 8192 - 31]).unwrap();
    let m = formats::manifest::scan(&src, &formats::manifest::ScanOptions::new(formats::manifest::Schema::opaque()))
        .unwrap();
    m.save(&src.join(MANIFEST_FILE)).unwrap();
    for (per_node, nodes, policy) in [("1", 4, "per-node=50"), ("2", 2, "replicate")] {
        for node in 0..4 {
            let _ = std::fs::remove_dir_all(dir.path().join(format!("node{node}")));
        }
        let args = [
            "--policy",
            policy,
            "--chunk-size",
            "8KiB",
            "--max-inflight",
            "8KiB",
            "--threads",
            "3",
            "--read-method",
            "read",
        ];
        let r = report(&stage(per_node, dir.path(), &args));
        let parsed: Policy = policy.parse().unwrap();
        assert_nodes_hold(dir.path(), &expected(dir.path(), &m, nodes, parsed, 0), policy);
        assert_eq!(r["read_amplification"], 1.0, "{policy}: {r}");
        assert!(r["bytes_moved_over_mpi"].as_u64().unwrap() > 0, "{policy}: {r}");
    }
}

#[test]
fn naive_copy_reads_each_file_once_per_node_and_writes_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 16, 64);
    let r = report(&stage("1", dir.path(), &["--policy", "per-node=8", "--naive"]));
    let want = expected(dir.path(), &m, 4, Policy::PerNode(8), 0);
    assert_nodes_hold(dir.path(), &want, "after the naive copy");
    assert_eq!(r["mode"], "naive");
    assert_eq!(r["bytes_read_from_source"], r["bytes_written"]);
    assert_eq!(r["read_amplification"], 2.0);
}

#[test]
fn rerun_skips_journaled_files_and_repairs_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 12, 32);
    report(&stage("2", dir.path(), &["--policy", "replicate"]));
    let victim = &m.files[3];
    std::fs::write(dir.path().join("node1").join(&victim.path), b"damaged").unwrap();
    let r = report(&stage("2", dir.path(), &["--policy", "replicate"]));
    assert_eq!(r["files_skipped_from_journal"], 2 * 12 - 1);
    assert_eq!(r["bytes_read_from_source"], victim.bytes);
    assert_eq!(contents(&dir.path().join("node1")), expected(dir.path(), &m, 2, Policy::Replicate, 0)[1]);
}

fn assert_failed_cleanly(output: &Output, started: Instant, needles: &[&str], root: &Path) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "stage should have failed:\n{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    for needle in needles {
        assert!(stderr.contains(needle), "stderr lacks {needle:?}:\n{stderr}");
    }
    for node in 0..4 {
        let tmp = root.join(format!("node{node}/.stagehand/tmp"));
        assert!(!tmp.exists() || walk(&tmp).is_empty(), "temporary files left in {}", tmp.display());
    }
}

#[test]
fn missing_source_file_fails_every_rank_naming_file_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 12, 64);
    let gone = &m.files[5].path;
    std::fs::remove_file(dir.path().join("src").join(gone)).unwrap();
    // The manifest no longer matches the directory: rank 0 refuses it up front.
    let started = Instant::now();
    let out = stage("1", dir.path(), &["--policy", "replicate"]);
    assert_failed_cleanly(&out, started, &[gone.as_str(), "rank 0"], dir.path());
}

#[test]
fn source_file_changed_since_the_manifest_fails_naming_file_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 12, 64);
    let victim = m.files.iter().max_by_key(|f| f.bytes).unwrap();
    let path = dir.path().join("src").join(&victim.path);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    for read_method in ["read", "mmap"] {
        let started = Instant::now();
        let out =
            stage("1", dir.path(), &["--policy", "replicate", "--chunk-size", "8KiB", "--read-method", read_method]);
        assert_failed_cleanly(
            &out,
            started,
            &[victim.path.as_str(), "differs from the manifest", "error: rank"],
            dir.path(),
        );
    }
    // The naive copy checks what it read as well.
    let started = Instant::now();
    let out = stage("1", dir.path(), &["--policy", "replicate", "--naive"]);
    assert_failed_cleanly(&out, started, &[victim.path.as_str(), "as read has", "the manifest says"], dir.path());
    // Shorter than the manifest says: refused before a map could reach past
    // the end of the file.
    std::fs::write(&path, &bytes[..middle]).unwrap();
    let started = Instant::now();
    let out = stage("1", dir.path(), &["--policy", "replicate", "--read-method", "mmap"]);
    let says = format!("{middle} bytes, the manifest says {}", victim.bytes);
    assert_failed_cleanly(&out, started, &[victim.path.as_str(), says.as_str()], dir.path());
}

#[test]
fn destination_too_small_is_refused_before_any_data_moves() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 8, 256);
    let small = dir.path().join("node0");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(&small).status();
    if !mounted.is_ok_and(|s| s.success()) {
        assert!(!is_root(), "running as root but could not mount a small tmpfs");
        e2e::skip("destination_too_small_is_refused_before_any_data_moves", "mounting a small tmpfs needs root");
        return;
    }
    let out = stage("4", dir.path(), &["--policy", "replicate"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let leftovers = contents(&small);
    let _ = Command::new("umount").arg(&small).status();
    assert!(!out.status.success());
    assert!(
        stderr.contains("on node 0 has") && stderr.contains("free but needs") && stderr.contains("nothing was copied"),
        "{stderr}"
    );
    assert!(leftovers.is_empty(), "data written despite the refusal: {:?}", leftovers.keys());
}

#[test]
fn symlink_planted_in_destination_is_not_followed() {
    // Every rank of the node fails at once; none waits the 10 s for an
    // answer from the others (each counts the others' notices as theirs,
    // and a rank that heard another's notice before failing itself answers
    // every notice after). Which rank hears what first changes from run to
    // run, so the run is repeated.
    for run in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        dataset(dir.path(), 8, 16);
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("node0")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("node0/sub")).unwrap();
        let started = Instant::now();
        let out = stage("4", dir.path(), &["--policy", "replicate"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("symlink"), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(started.elapsed() < Duration::from_secs(8), "run {run} took {:?}", started.elapsed());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "wrote through the planted symlink");
    }
}

#[test]
fn manifest_entry_escaping_the_source_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = dataset(dir.path(), 4, 4);
    m.files[0].path = "../escape".into();
    std::fs::write(dir.path().join("src").join(MANIFEST_FILE), m.to_json()).unwrap();
    let out = stage("2", dir.path(), &["--policy", "shard"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("../escape"));
}

/// The pid of world rank `rank` among the processes running `pattern`
/// (Open MPI puts the rank in each process's environment).
fn pid_of_rank(pattern: &str, rank: usize) -> Option<String> {
    let pids = Command::new("pgrep").args(["-f", pattern]).output().unwrap();
    String::from_utf8_lossy(&pids.stdout).lines().map(str::to_owned).find(|pid| {
        std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes()))
    })
}

/// Lines in the journals of destination `node` (each rank that writes
/// there keeps one).
fn journaled(node: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(node.join(".stagehand")) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("journal"))
        .map(|e| std::fs::read_to_string(e.path()).map_or(0, |t| t.lines().count()))
        .sum()
}

/// Stage 24 files on 2 pretend nodes through a slow source, `kill -9`
/// world rank `victim` once some files are journaled, check the job ends
/// non-zero, then rerun and check every node holds exactly its files.
fn kill_rank_mid_stage_then_resume(victim: usize) {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 24, 256);
    let src = dir.path().join("src");
    // Emulate a slow file system so the run is still going when a rank dies:
    // about 3 MB at 300 KB/s take 10 s, while the first journal commit
    // (a second after the first file) comes 1-3 s in. At 1 MB/s (3 s) a run
    // in CI, beside other MPI jobs on 2 cores, once finished every file
    // before the kill took effect. The job ends at the kill, so the slower
    // source costs no time.
    let mut child = spawn_stage(
        dir.path(),
        4,
        "2",
        &["--policy", "replicate", "--chunk-size", "16KiB", "--source-bandwidth", "300KB/s"],
    );
    // Wait until some files are journaled, then kill -9 the victim.
    let deadline = Instant::now() + Duration::from_secs(30);
    while journaled(&dir.path().join("node1")) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let pattern = format!("{STAGER} stage --source {}", src.display());
    let pid = pid_of_rank(&pattern, victim).unwrap_or_else(|| panic!("no rank {victim} to kill"));
    Command::new("kill").args(["-9", &pid]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the job hung after rank {victim} was killed");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success(), "the job survived a killed rank");
    assert!(pid_of_rank(&pattern, 0).is_none() && pid_of_rank(&pattern, 3).is_none(), "ranks left behind");

    let done_before: usize = (0..2).map(|n| journaled(&dir.path().join(format!("node{n}")))).sum();
    assert!(done_before > 0 && done_before < 48, "{done_before} files journaled before the kill");
    let r = report(&stage("2", dir.path(), &["--policy", "replicate", "--chunk-size", "16KiB"]));
    // Files placed after the journal's last commit are re-hashed in place
    // and kept too.
    let skipped = r["files_skipped_from_journal"].as_u64().unwrap() as usize;
    assert!(skipped >= done_before, "{skipped} files kept, {done_before} journaled before the kill");
    assert!(r["bytes_read_from_source"].as_u64().unwrap() < m.total_bytes());
    let want = expected(dir.path(), &m, 2, Policy::Replicate, 0);
    assert_nodes_hold(dir.path(), &want, "after resume");
}

/// A destination claims nothing while a stage into it has not finished:
/// restaging after the source changed removes the placement record of the
/// earlier stage before anything moves, and the failed stage writes none.
#[test]
fn a_failed_stage_leaves_no_placement_record() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 12, 64);
    report(&stage("1", dir.path(), &["--policy", "replicate"]));
    let node1 = dir.path().join("node1");
    assert!(PlacementRecord::open(&node1).is_ok());
    let victim = m.files.iter().max_by_key(|f| f.bytes).unwrap();
    // Another file in the same place: journaled, but no longer the manifest's.
    let mut changed = m.clone();
    let path = dir.path().join("src").join(&victim.path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    changed.files.iter_mut().find(|f| f.path == victim.path).unwrap().xxh3 = formats::checksum::Checksum::of(b"x");
    changed.save(&dir.path().join("src").join(formats::manifest::MANIFEST_FILE)).unwrap();
    let out = stage("1", dir.path(), &["--policy", "replicate"]);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for node in ["node0", "node1"] {
        let error = PlacementRecord::open(&dir.path().join(node)).unwrap_err().to_string();
        assert!(error.contains("no placement record"), "{node}: {error}");
    }
}

/// Rank 3 only reads its share of the source and sends it to both nodes'
/// writers (the read and move phases).
#[test]
fn a_reading_and_sending_rank_killed_ends_the_job_and_a_rerun_finishes_byte_identical() {
    kill_rank_mid_stage_then_resume(3);
}

/// Rank 2 is node 1's writer: it reads, receives and writes (the write
/// phase, with temporary files open).
#[test]
fn a_writing_rank_killed_ends_the_job_and_a_rerun_finishes_byte_identical() {
    kill_rank_mid_stage_then_resume(2);
}

/// An empty source directory, or a source that is a file, is a clear error
/// on one rank and on several (it used to fail inside `MPI_Allgather`).
#[test]
fn an_empty_source_or_a_file_as_source_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("src");
    std::fs::create_dir(&empty).unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a dataset").unwrap();
    for (source, says) in [(&empty, "holds no files"), (&file, "is not a directory")] {
        for ranks in [1usize, 4] {
            let started = Instant::now();
            let dest = dir.path().join("node{node}");
            let args = ["stage", "--source", source.to_str().unwrap(), "--dest", dest.to_str().unwrap()];
            let out = e2e::mpirun(ranks, &[("STAGEHAND_RANKS_PER_NODE", "2")], Path::new(STAGER), &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{ranks} ranks: {stderr}");
            assert!(stderr.contains(says) && !stderr.contains("MPI_ERR"), "{ranks} ranks: {stderr}");
            assert!(started.elapsed() < Duration::from_secs(30));
        }
    }
}

/// A destination held by another job is refused before anything in it
/// changes, and the message names the holder.
#[test]
fn a_destination_locked_by_another_job_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 6, 16);
    let node0 = dir.path().join("node0");
    let held = stager::destination::lock::DestLock::acquire(&node0).unwrap();
    // A temporary file of the holder's must survive the refused job.
    let theirs = stager::destination::journal::create_temp_dir(&node0).unwrap().join("0.part");
    std::fs::write(&theirs, b"in progress").unwrap();
    let out = stage("2", dir.path(), &["--policy", "replicate"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let holder = format!("pid {}", std::process::id());
    assert!(stderr.contains("being staged by another job") && stderr.contains(&holder), "{stderr}");
    assert!(contents(&node0).is_empty() && contents(&dir.path().join("node1")).is_empty());
    assert_eq!(std::fs::read(&theirs).unwrap(), b"in progress");
    drop(held);
    report(&stage("2", dir.path(), &["--policy", "replicate"]));
}

/// Two jobs started at once on one destination (the hostile tester's
/// 3 MiB files under final names): each node's destination is staged by
/// one job and refused to the other (so both may fail, each winning one
/// node), every file under its final name is whole, and a rerun completes.
#[test]
fn two_jobs_started_at_once_on_one_destination_never_corrupt_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 16, 256);
    let slow = ["--policy", "replicate", "--threads", "2", "--chunk-size", "16KiB", "--source-bandwidth", "2MB/s"];
    let spawn = || spawn_stage(dir.path(), 2, "1", &slow);
    let (first, second) = (spawn(), spawn());
    let outputs = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
    for o in outputs.iter().filter(|o| !o.status.success()) {
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("being staged by another job"), "{stderr}");
    }
    let want = expected(dir.path(), &m, 2, Policy::Replicate, 0);
    for (node, files) in want.iter().enumerate() {
        for (path, bytes) in contents(&dir.path().join(format!("node{node}"))) {
            assert!(files.get(&path) == Some(&bytes), "node {node}: {path} is not the source's file");
        }
    }
    if outputs.iter().all(|o| !o.status.success()) {
        report(&stage("2", dir.path(), &["--policy", "replicate"]));
    }
    assert_nodes_hold(dir.path(), &want, "after the stage");
}

fn verify(root: &Path, extra: &[&str]) -> Output {
    let src = root.join("src");
    let dest = root.join("node{node}");
    let mut args = vec!["verify", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()];
    args.extend_from_slice(extra);
    e2e::mpirun(4, &[("STAGEHAND_RANKS_PER_NODE", "2")], STAGER.as_ref(), &args)
}

/// A staged file corrupted in place at its size: `verify` finds it and
/// says once how to repair. Its journal record names the file as it was
/// placed (inode and change time), and the write moved the change time, so
/// even a plain rerun re-stages exactly that file; `--recheck` then finds
/// nothing to repair. `--report` writes what was checked, node by node,
/// naming the corrupt file.
#[test]
fn verify_finds_a_same_size_corruption_and_stage_recheck_repairs_it() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 10, 32);
    report(&stage("2", dir.path(), &["--policy", "replicate"]));
    let victim = m.files.iter().find(|f| f.bytes > 0).unwrap();
    let path = dir.path().join("node0").join(&victim.path);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[0] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();

    let report_path = dir.path().join("verify.json");
    let checked = verify(dir.path(), &["--policy", "replicate", "--report", report_path.to_str().unwrap()]);
    assert!(!checked.status.success());
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!((written["ok"].as_u64(), written["corrupt"].as_u64()), (Some(2 * 10 - 1), Some(1)), "{written}");
    let nodes = written["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{written}");
    assert_eq!(nodes[0]["corrupt"], serde_json::json!([victim.path]), "{written}");
    assert_eq!((nodes[1]["ok"].as_u64(), nodes[1]["files"].as_u64()), (Some(10), Some(10)), "{written}");
    assert_eq!(nodes[0]["dest"], dir.path().join("node0").to_str().unwrap(), "{written}");
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert!(stderr.lines().any(|l| l.contains("checksum differs") && l.contains(&victim.path)), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    let summary: Vec<&&str> = errors.iter().filter(|l| l.contains("to repair")).collect();
    assert_eq!(summary.len(), 1, "{stderr}");
    assert!(summary[0].contains("1 corrupt") && summary[0].contains("--recheck"), "{stderr}");

    let r = report(&stage("2", dir.path(), &["--policy", "replicate"]));
    assert_eq!(r["bytes_read_from_source"], victim.bytes, "the journal vouched for a file changed since");
    assert!(verify(dir.path(), &["--policy", "replicate"]).status.success());
    let r = report(&stage("2", dir.path(), &["--policy", "replicate", "--recheck"]));
    assert_eq!(r["bytes_read_from_source"], 0);
    assert_eq!(contents(&dir.path().join("node0")), expected(dir.path(), &m, 2, Policy::Replicate, 0)[0]);
}

/// A destination that fills up while files arrive (another job's file
/// grows on the same node-local disk): the job fails naming the error,
/// leaves no temporary files, every file under its final name is whole,
/// and once there is room a rerun completes.
#[test]
fn a_destination_filling_up_mid_run_fails_cleanly_and_a_rerun_completes() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 16, 256);
    let node1 = dir.path().join("node1");
    let room = m.total_bytes() + (512 << 10);
    let Some(_disk) =
        e2e::Tmpfs::mount("a_destination_filling_up_mid_run_fails_cleanly_and_a_rerun_completes", &node1, room)
    else {
        return;
    };
    let child = spawn_stage(
        dir.path(),
        4,
        "2",
        &["--policy", "replicate", "--chunk-size", "16KiB", "--source-bandwidth", "1MB/s"],
    );
    let journal = node1.join(".stagehand/journal.jsonl");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // Fill the disk but for a few KiB.
    let filler = node1.join("other-job.bin");
    let free = stager::destination::space::free_space(&node1).unwrap().bytes;
    // The stage goes on writing meanwhile: if it took some of that room
    // first, the filler fills the disk short of its length, which is as full.
    match std::fs::write(&filler, vec![1u8; free.saturating_sub(8 << 10) as usize]) {
        Err(e) if e.kind() != std::io::ErrorKind::StorageFull => panic!("writing {}: {e}", filler.display()),
        _ => {}
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "the job reported success on a full disk");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let temp = node1.join(".stagehand/tmp");
    assert!(std::fs::read_dir(&temp).map_or(0, |d| d.count()) == 0, "temporary files left in {}", temp.display());
    let want = expected(dir.path(), &m, 2, Policy::Replicate, 0);
    for (path, bytes) in contents(&node1) {
        assert!(path == "other-job.bin" || want[1].get(&path) == Some(&bytes), "{path} is not whole");
    }
    std::fs::remove_file(&filler).unwrap();
    report(&stage("2", dir.path(), &["--policy", "replicate"]));
    assert_nodes_hold(dir.path(), &want, "after the rerun");
}

/// A source file the user may not read (the job runs as `nobody`, since
/// root reads anything): every rank exits non-zero, the error names the
/// file and says why once, and nothing is left under a final name.
#[test]
fn an_unreadable_source_file_fails_naming_it_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 6, 16);
    let is_root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !is_root {
        e2e::skip("an_unreadable_source_file_fails_naming_it_once", "it needs root to switch to nobody");
        return;
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let victim = &m.files[2].path;
    std::fs::set_permissions(dir.path().join("src").join(victim), std::fs::Permissions::from_mode(0o000)).unwrap();
    let src = dir.path().join("src");
    let dest = dir.path().join("node{node}");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "mpirun"])
        .args(e2e::MPIRUN_ARGS)
        .args(["-np", "2", "-x", "STAGEHAND_RANKS_PER_NODE"])
        .env("STAGEHAND_RANKS_PER_NODE", "1")
        .env("HOME", dir.path())
        .arg(STAGER)
        .args(["stage", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "staging an unreadable file succeeded");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.starts_with("error:") && l.contains(victim.as_str()));
    let line = line.unwrap_or_else(|| panic!("no error naming {victim}:\n{stderr}"));
    assert_eq!(line.matches("Permission denied").count(), 1, "{line}");
    for node in 0..2 {
        for (path, bytes) in contents(&dir.path().join(format!("node{node}"))) {
            let want = std::fs::read(src.join(&path)).unwrap();
            assert!(bytes == want, "node {node}: {path} is not whole");
        }
    }
}
