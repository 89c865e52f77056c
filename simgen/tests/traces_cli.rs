//! `simgen traces` end to end: real LMDB stores, real `mpirun`, the
//! loader's own reader and sampler.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use formats::lmdb::TraceStore;
use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::dataset::Dataset;
use loader::lmdb::TraceDataset;
use loader::sampler::BucketedSampler;
use simgen::traces::generate::{from_trace, replay, to_trace};

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");

fn args(out: &Path, traces: u64, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> =
        ["traces", "--seed", "5", "--out", out.to_str().unwrap(), "--traces"].into_iter().map(str::to_owned).collect();
    v.push(traces.to_string());
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run(ranks: usize, args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    e2e::mpirun(ranks, &[], Path::new(SIMGEN), &args)
}

fn stores(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "lmdb"))
        .collect();
    v.sort();
    v
}

#[test]
fn one_and_four_ranks_write_identical_sorted_stores_that_the_loader_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (one, four) = (dir.path().join("one"), dir.path().join("four"));
    let traces = 600;
    let out1 = run(1, &args(&one, traces, &["--files", "4"]));
    assert!(out1.status.success(), "{}", String::from_utf8_lossy(&out1.stderr));
    let out4 = run(4, &args(&four, traces, &["--files", "4"]));
    assert!(out4.status.success(), "{}", String::from_utf8_lossy(&out4.stderr));

    // Byte-identical stores whichever ranks made them.
    let (s1, s4) = (stores(&one), stores(&four));
    assert_eq!(s1.len(), 4);
    for (a, b) in s1.iter().zip(&s4) {
        let (a, b) = (std::fs::read(a.join("data.mdb")).unwrap(), std::fs::read(b.join("data.mdb")).unwrap());
        assert!(a == b, "store {} differs between 1 and 4 ranks", a.len());
    }

    // The manifest counts every trace; the report says what was made.
    let manifest = Manifest::load(&one.join(MANIFEST_FILE)).unwrap();
    assert_eq!(manifest.files.iter().map(|f| f.samples).sum::<u64>(), traces);
    let report: serde_json::Value = serde_json::from_slice(&out1.stdout).unwrap();
    assert_eq!(report["traces"], traces);
    let distinct = report["trace_types"]["distinct"].as_u64().unwrap();
    let once = report["trace_types"]["seen_once"].as_u64().unwrap();
    // A long tail: many types, a good part of them seen once, while the
    // ten most frequent still hold a large share.
    assert!(distinct > 60 && once * 3 > distinct, "{distinct} types, {once} seen once");
    assert!(report["trace_types"]["share_of_the_10_most_frequent"].as_f64().unwrap() > 0.25);
    assert!(std::fs::read_to_string(one.join("trace-types.csv")).unwrap().lines().count() as u64 == distinct + 1);
    let lengths = std::fs::read_to_string(one.join("trace-lengths.csv")).unwrap();
    let counted: u64 = lengths.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(counted, traces);

    let mut dictionary: Option<Vec<String>> = None;
    let mut read = 0;
    for path in &s1 {
        let store = TraceStore::open(path).unwrap();
        // One dictionary for every store of the run.
        let names = store.addresses().to_vec();
        assert_eq!(dictionary.get_or_insert_with(|| names.clone()), &names);
        // Each type's traces are contiguous, in the table's order, most
        // frequent first, and are exactly the traces of that type.
        let mut next = 0;
        for t in store.trace_types() {
            assert_eq!(t.first, next);
            next += t.count;
            for i in t.first..t.first + t.count {
                assert_eq!(store.get(i).unwrap().unwrap().trace_type(), t.addresses, "trace {i}");
            }
        }
        assert!(store.trace_types().windows(2).all(|w| w[0].count >= w[1].count));
        assert_eq!(next, store.len());
        // Replaying a stored trace re-executes the simulator to the same record.
        for i in [0, store.len() / 2, store.len() - 1] {
            let stored = store.get(i).unwrap().unwrap();
            let again = replay(&from_trace(&stored, &names).unwrap()).unwrap();
            let id = |a: &str| names.iter().position(|n| n == a).unwrap() as u32;
            assert_eq!(to_trace(&again, id), stored, "trace {i} of {}", path.display());
        }
        // The loader's dataset and Etalumis' bucketed sampler read every
        // trace (heed opens an environment once per process).
        drop(store);
        let dataset = TraceDataset::open(path).unwrap();
        assert_eq!(dataset.observation_shape(), [20, 35, 35]);
        let sampler = BucketedSampler { len: dataset.len(), buckets: 4, world: 1, rank: 0, seed: 3 };
        let mut x = vec![0f32; dataset.x_len()];
        let mut seen = vec![false; dataset.len()];
        for batch in sampler.batches(0, 1) {
            for i in batch {
                let mut y = Vec::new();
                dataset.read_ragged(i, &mut x, &mut y).unwrap();
                assert!(!y.is_empty() && y.len() % 2 == 0);
                seen[i] = true;
            }
        }
        assert!(seen.iter().all(|&s| s), "the sampler missed traces of {}", path.display());
        read += dataset.len();
    }
    assert_eq!(read as u64, traces);
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(u64, &[&str], &str); 5] = [
        (0, &[], "--traces"),
        (10, &["--files", "0"], "--files"),
        (10, &["--files", "11"], "--files"),
        (10, &["--noise", "0"], "--noise"),
        (10, &["--noise", "NaN"], "--noise"),
    ];
    for (i, (traces, extra, expect)) in cases.iter().enumerate() {
        let out_dir = dir.path().join(format!("case{i}"));
        let out = Command::new(SIMGEN).args(args(&out_dir, *traces, extra)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(expect) && err.trim().lines().count() == 1, "{extra:?}: {err}");
        assert!(!out_dir.exists(), "{extra:?} created {}", out_dir.display());
    }
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("theirs"), b"x").unwrap();
    let out = Command::new(SIMGEN).args(args(&full, 5, &[])).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not empty"));
}

/// A disk that fills while the traces are staged, or that cannot hold the
/// sorted copy: the run fails naming the store, and neither a store nor its
/// temporary directory is left.
#[test]
fn a_disk_that_fills_fails_cleanly_and_leaves_no_store() {
    let dir = tempfile::tempdir().unwrap();
    // 60 traces stage about 6 MB; sorting needs as much again.
    for (mib, says) in [(9u64, "needs about"), (3, "staging trace")] {
        let disk = dir.path().join(format!("disk{mib}"));
        let Some(_disk) = e2e::Tmpfs::mount("a_disk_that_fills_fails_cleanly_and_leaves_no_store", &disk, mib << 20)
        else {
            return;
        };
        let out = Command::new(SIMGEN).args(args(&disk.join("out"), 60, &[])).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "a {mib} MiB disk held 60 traces twice");
        let first = err.lines().find(|l| l.starts_with("error")).expect("no error line");
        assert!(first.contains("traces-00000.lmdb") && first.contains(says), "{err}");
        let left: Vec<String> = std::fs::read_dir(disk.join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("lmdb"))
            .collect();
        assert!(left.is_empty(), "{mib} MiB: left behind: {left:?}");
    }
}
