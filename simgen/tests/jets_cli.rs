//! `simgen jets` end to end: real HDF5 files under a real `mpirun`, read
//! back with the loader's reader.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::dataset::Dataset;
use loader::jets::JetEvents;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");

fn args(out: &Path) -> Vec<String> {
    let fixed = ["jets", "--events", "40", "--per-file", "8", "--size", "16", "--val-fraction", "0.2", "--seed", "4"];
    fixed.into_iter().map(str::to_owned).chain(["--out".into(), out.to_str().unwrap().to_owned()]).collect()
}

/// The same seed on 1 and 3 ranks writes the same events in the same
/// files (dealt to the ranks in turn), which the manifest counts.
#[test]
fn one_and_three_ranks_write_the_same_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut read = Vec::new();
    for ranks in [1, 3] {
        let out = dir.path().join(format!("ranks-{ranks}"));
        let args = args(&out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
        assert!(result.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&result.stderr));
        let report: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
        assert_eq!(report["files"], 5);
        assert_eq!(report["signal_events"].as_f64().unwrap() + report["background_events"].as_f64().unwrap(), 40.0);
        let manifest = Manifest::load(&out.join(MANIFEST_FILE)).unwrap();
        assert_eq!(manifest.files.iter().map(|f| f.samples).sum::<u64>(), 40);
        assert_eq!(manifest.files.iter().filter(|f| f.path.starts_with("validation/")).count(), 1);
        let paths = loader::catalog::sample_paths(&out, &manifest, None);
        let events = JetEvents::open(&paths).unwrap();
        let (mut x, mut y) = (vec![0f32; events.x_len()], vec![0f32; events.y_len()]);
        let mut all = Vec::new();
        for i in 0..events.len() {
            events.read_into(i, &mut x, &mut y).unwrap();
            all.push((x.clone(), y.clone()));
        }
        read.push((manifest.files.iter().map(|f| (f.path.clone(), f.xxh3)).collect::<Vec<_>>(), all));
    }
    assert_eq!(read[0].1, read[1].1, "events differ between 1 and 3 ranks");
    assert_eq!(read[0].0, read[1].0, "files differ between 1 and 3 ranks");
}

/// Bad arguments, and files too large for the machine's memory, are
/// refused before MPI starts with exit 2 and one line.
#[test]
fn bad_arguments_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for (extra, needle) in [
        (&["--events", "0"][..], "--events and --per-file must be at least 1"),
        (&["--events", "4", "--size", "4"], "--size 4 must be 8 to 1024"),
        (&["--events", "4", "--neutralino-mass", "1500"], "need 0 < neutralino < gluino"),
        (&["--events", "4", "--signal-fraction", "1.5"], "--signal-fraction 1.5"),
        (&["--events", "1000000", "--per-file", "1000000", "--size", "1024"], "lower --per-file"),
    ] {
        let output = Command::new(SIMGEN).args(["jets", "--out", out]).args(extra).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle) && stderr.trim().lines().count() == 1, "{extra:?}: {stderr}");
    }
}
