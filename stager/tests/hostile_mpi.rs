//! Regression tests of what a hostile tester broke in `stager stage`,
//! under a real mpirun on pretend nodes: journals of several
//! runs, a former destination inside the source, a FIFO in the dataset,
//! two nodes given one destination, usage errors, many tiny files on a
//! small file system.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use formats::manifest::{MANIFEST_FILE, Manifest, ScanOptions, Schema};

mod common;
use common::{STAGER, contents, dataset, is_root, report, stage};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `root/src` rewritten with the same names and sizes but other bytes
/// (`fill`), and its manifest.
fn rewrite_same_sizes(root: &Path, m: &Manifest, fill: u8) -> Manifest {
    let src = root.join("src");
    for entry in &m.files {
        std::fs::write(src.join(&entry.path), vec![fill; entry.bytes as usize]).unwrap();
    }
    let rewritten = formats::manifest::scan(&src, &ScanOptions::new(Schema::opaque())).unwrap();
    rewritten.save(&src.join(MANIFEST_FILE)).unwrap();
    rewritten
}

/// Stage A, then B (same names and sizes, other bytes), then A again, each
/// with `--naive` (a journal per rank): the third run must restage what
/// holds B's bytes, and every node must end with A's bytes. Before the
/// fix, the older journal entry won and the run exited 0 skipping files
/// that held B's bytes.
#[test]
fn a_dataset_staged_again_after_another_is_restaged_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let a = dataset(dir.path(), 12, 8);
    let a_bytes = contents(&dir.path().join("src"));
    let naive = ["--policy", "replicate", "--naive"];
    report(&stage("2", dir.path(), &naive));
    let b = rewrite_same_sizes(dir.path(), &a, 0xBB);
    report(&stage("2", dir.path(), &naive));
    assert_ne!(a.files[1].xxh3, b.files[1].xxh3);
    for entry in &a.files {
        std::fs::write(dir.path().join("src").join(&entry.path), &a_bytes[&entry.path]).unwrap();
    }
    a.save(&dir.path().join("src").join(MANIFEST_FILE)).unwrap();
    let third = report(&stage("2", dir.path(), &naive));
    assert_eq!(third["files_skipped_from_journal"], 0, "{third}");
    for node in ["node0", "node1"] {
        let held = contents(&dir.path().join(node));
        assert_eq!(held.len(), a.files.len() + usize::from(held.contains_key(MANIFEST_FILE)), "{node}");
        for (path, bytes) in held.iter().filter(|(path, _)| *path != MANIFEST_FILE) {
            assert_eq!(Some(bytes), a_bytes.get(path), "{node}/{path} does not hold A's bytes");
        }
    }
    let verified = e2e::mpirun(
        4,
        &[("STAGEHAND_RANKS_PER_NODE", "2")],
        STAGER.as_ref(),
        &[
            "verify",
            "--source",
            dir.path().join("src").to_str().unwrap(),
            "--dest",
            dir.path().join("node{node}").to_str().unwrap(),
            "--policy",
            "replicate",
        ],
    );
    assert!(verified.status.success(), "verify: {}", stderr(&verified));
}

/// A source that is a former destination holds `.stagehand/` (journal,
/// lock): it is data of no one's, so the scan does not descend into it and
/// the destination's own journal and lock are untouched. A destination
/// inside the source is refused.
#[test]
fn a_former_destination_as_source_leaves_the_new_destinations_journal_alone() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 6, 4);
    let src = dir.path().join("src");
    std::fs::remove_file(src.join(MANIFEST_FILE)).unwrap();
    std::fs::create_dir_all(src.join(".stagehand/tmp")).unwrap();
    std::fs::write(src.join(".stagehand/journal.jsonl"), "{\"path\":\"x\",\"xxh3\":\"0000000000000001\"}\n").unwrap();
    std::fs::write(src.join(".stagehand/lock"), "host elsewhere pid 1\n").unwrap();
    let r = report(&stage("2", dir.path(), &["--policy", "replicate"]));
    assert_eq!(r["files_needed"], 6, "{r}");
    for node in ["node0", "node1"] {
        let journal = std::fs::read_to_string(dir.path().join(node).join(".stagehand/journal.jsonl")).unwrap();
        assert!(!journal.contains("\"x\""), "{node}'s journal came from the source: {journal}");
        assert!(!dir.path().join(node).join(".stagehand/tmp/journal.jsonl").exists());
    }
    let inside = src.join("cache/node{node}");
    let out = e2e::mpirun(
        4,
        &[("STAGEHAND_RANKS_PER_NODE", "2")],
        STAGER.as_ref(),
        &["stage", "--source", src.to_str().unwrap(), "--dest", inside.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is inside the source"), "{}", stderr(&out));
}

/// A manifest entry that became a FIFO: refused at once, naming it, not
/// blocked on forever in `open`.
#[test]
fn a_fifo_in_place_of_a_file_is_refused_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 6, 4);
    let victim = dir.path().join("src").join(&m.files[2].path);
    std::fs::remove_file(&victim).unwrap();
    let made = Command::new("mkfifo").arg(&victim).status().unwrap();
    assert!(made.success());
    for extra in [&["--policy", "replicate"][..], &["--policy", "replicate", "--naive"]] {
        let started = Instant::now();
        let out = stage("2", dir.path(), extra);
        assert!(!out.status.success(), "{extra:?}");
        assert!(started.elapsed() < Duration::from_secs(60), "{extra:?} took {:?}", started.elapsed());
        let text = stderr(&out);
        assert!(text.contains(&m.files[2].path) && text.contains("not a regular file (it is a FIFO)"), "{text}");
    }
}

/// `--dest` without `{node}` on pretend nodes (or with only
/// `{local_rank}`) gives two nodes one directory: said so, once, instead
/// of "being staged by another job" naming a rank of the same job.
#[test]
fn two_nodes_given_one_destination_are_told_so_once() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 4, 4);
    let src = dir.path().join("src");
    for dest in ["shared", "by-rank{local_rank}"] {
        let dest = dir.path().join(dest);
        let out = e2e::mpirun(
            4,
            &[("STAGEHAND_RANKS_PER_NODE", "2")],
            STAGER.as_ref(),
            &["stage", "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap()],
        );
        assert!(!out.status.success());
        let text = stderr(&out);
        assert!(text.contains("nodes 0 and 1 resolve --dest") && text.contains("same directory"), "{text}");
        assert!(!text.contains("another job"), "{text}");
        assert_eq!(text.matches("same directory").count(), 1, "printed more than once: {text}");
    }
}

/// A usage error prints one line for the job, not one per rank.
#[test]
fn a_usage_error_prints_once_for_all_ranks() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 2, 1);
    let out = stage("2", dir.path(), &["--chunk-size", "0.5"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).matches("whole number of bytes").count(), 1, "{}", stderr(&out));
    let out = stage("2", dir.path(), &["--no-such-option"]);
    assert!(!out.status.success());
    let text = stderr(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("--no-such-option")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    // One line: the error and the command whose --help explains, no usage block.
    assert!(lines[0].starts_with("error: ") && lines[0].ends_with("see `stager stage --help`"), "{text}");
    assert!(!text.contains("Usage:"), "{text}");
}

/// 2,000 one-byte files take 2,000 blocks: on a 5 MiB tmpfs the check
/// before any data moves refuses them (it counted bytes and passed, then
/// the run failed with ENOSPC on ten lines).
#[test]
fn many_tiny_files_are_counted_in_blocks_before_any_data_moves() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for i in 0..2000 {
        std::fs::write(src.join(format!("t{i:04}")), [i as u8]).unwrap();
    }
    let m = formats::manifest::scan(&src, &ScanOptions::new(Schema::opaque())).unwrap();
    m.save(&src.join(MANIFEST_FILE)).unwrap();
    let small = dir.path().join("node0");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=5m", "tmpfs"]).arg(&small).status();
    if !mounted.is_ok_and(|s| s.success()) {
        assert!(!is_root(), "running as root but could not mount a small tmpfs");
        e2e::skip("many_tiny_files_are_counted_in_blocks_before_any_data_moves", "mounting a tmpfs needs root");
        return;
    }
    let out = stage("4", dir.path(), &["--policy", "replicate"]);
    let left = contents(&small);
    let _ = Command::new("umount").arg(&small).status();
    assert!(!out.status.success());
    let text = stderr(&out);
    assert!(text.contains("for 2000 files") && text.contains("nothing was copied"), "{text}");
    assert!(!text.contains("No space left"), "{text}");
    assert!(left.is_empty(), "data written despite the refusal");
}

/// Thousands of tiny files (packed several to a message, placed by every
/// rank of a node, journaled in batches): every node ends with each file
/// whole, every file is journaled once on each node, and a rerun skips
/// them all. Their speed is the `small_files` bench's to show; this test
/// checks that the paths that make them fast lose nothing.
#[test]
fn thousands_of_tiny_files_arrive_whole_and_are_journaled_once() {
    let dir = tempfile::tempdir().unwrap();
    let m = dataset(dir.path(), 3000, 2);
    let src = contents(&dir.path().join("src"));
    let r = report(&stage("2", dir.path(), &["--policy", "replicate"]));
    assert_eq!(r["files_needed"], 3000, "{r}");
    for node in ["node0", "node1"] {
        let held = contents(&dir.path().join(node));
        for entry in &m.files {
            assert_eq!(held.get(&entry.path), src.get(&entry.path), "{node}/{}", entry.path);
        }
        let mut journaled = Vec::new();
        for item in std::fs::read_dir(dir.path().join(node).join(".stagehand")).unwrap().flatten() {
            if item.file_name().to_string_lossy().starts_with("journal") {
                let text = std::fs::read(item.path()).unwrap();
                journaled.extend(stager::destination::journal::parse(&text).0.into_iter().map(|e| e.path));
            }
        }
        journaled.sort();
        let want: Vec<String> = m.files.iter().map(|f| f.path.clone()).collect();
        assert_eq!(journaled, want, "{node}: every file journaled exactly once");
    }
    let again = report(&stage("2", dir.path(), &["--policy", "replicate"]));
    assert_eq!(again["files_skipped_from_journal"], 6000, "{again}");
}

/// A template naming a rank (`{local_rank}`) resolves, for every rank of a
/// node, as the node's writer resolves it: stage writes one directory per
/// node, and verify looks in that same directory.
#[test]
fn stage_and_verify_resolve_a_rank_template_to_the_nodes_one_directory() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path(), 8, 4);
    let src = dir.path().join("src");
    let dest = dir.path().join("node{node}-r{local_rank}");
    let env = [("STAGEHAND_RANKS_PER_NODE", "2")];
    for command in ["stage", "verify"] {
        let out = e2e::mpirun(
            4,
            &env,
            STAGER.as_ref(),
            &[command, "--source", src.to_str().unwrap(), "--dest", dest.to_str().unwrap(), "--policy", "replicate"],
        );
        assert!(out.status.success(), "{command}: {}", stderr(&out));
    }
    for node in ["node0-r0", "node1-r0"] {
        assert_eq!(contents(&dir.path().join(node)).len(), 8, "{node}");
    }
    assert!(!dir.path().join("node0-r1").exists() && !dir.path().join("node1-r1").exists());
}
