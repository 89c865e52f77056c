//! `simgen massmaps` end to end: real `.npy` files under a real `mpirun`,
//! read back with the loader's reader, and the statistics file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use formats::manifest::{MANIFEST_FILE, Manifest};
use loader::dataset::Dataset;
use loader::massmaps::MassMaps;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");

fn args(out: &Path) -> Vec<String> {
    // 16² maps from boxes of 4-cell slabs: 12 maps per box, so files of
    // 10 maps start inside boxes another rank also simulates.
    let fixed =
        ["massmaps", "--maps", "50", "--per-file", "10", "--size", "16", "--depth", "4", "--val-fraction", "0.2"];
    fixed.into_iter().map(str::to_owned).chain(["--out".into(), out.to_str().unwrap().to_owned()]).collect()
}

/// The same seed on 1 and 3 ranks writes the same maps in the same files
/// (dealt to the ranks in turn), which the manifest counts, and the same
/// statistics: a spectrum falling from large to small scales and a pixel
/// histogram that sums to one.
#[test]
fn one_and_three_ranks_write_the_same_maps_and_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let mut read = Vec::new();
    for ranks in [1, 3] {
        let out = dir.path().join(format!("ranks-{ranks}"));
        let args = args(&out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let result = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
        assert!(result.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&result.stderr));
        let report: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
        assert_eq!((report["files"].as_u64(), report["maps_per_box"].as_u64()), (Some(5), Some(12)));
        assert!((report["pixel_mean"].as_f64().unwrap() - 1.0).abs() < 0.05, "{report}");
        let manifest = Manifest::load(&out.join(MANIFEST_FILE)).unwrap();
        assert_eq!(manifest.files.iter().map(|f| f.samples).sum::<u64>(), 50);
        assert_eq!(manifest.files.iter().filter(|f| f.path.starts_with("validation/")).count(), 1);
        assert!(manifest.files.iter().any(|f| f.path == "statistics.json" && f.samples == 0));
        let statistics: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("statistics.json")).unwrap()).unwrap();
        let power: Vec<f64> = statistics["power_spectrum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["power_pixels"].as_f64().unwrap())
            .collect();
        assert_eq!(power.len(), 8, "rings 1 to 8 of 16² maps");
        assert!(power[0] > 10.0 * power[7], "large scales hold more power: {power:?}");
        let fractions: f64 =
            statistics["pixel_histogram"].as_array().unwrap().iter().map(|b| b["fraction"].as_f64().unwrap()).sum();
        assert!((fractions - 1.0).abs() < 1e-9, "{fractions}");
        let maps = MassMaps::open(&loader::catalog::sample_paths(&out, &manifest, None)).unwrap();
        let (mut x, mut y) = (vec![0f32; maps.x_len()], vec![0f32; maps.y_len()]);
        let mut all = Vec::new();
        for i in 0..maps.len() {
            maps.read_into(i, &mut x, &mut y).unwrap();
            all.push(x.clone());
        }
        let files: Vec<_> = manifest.files.iter().map(|f| (f.path.clone(), f.xxh3)).collect();
        read.push((files, all, statistics));
    }
    assert_eq!(read[0].1, read[1].1, "maps differ between 1 and 3 ranks");
    assert_eq!(read[0].0, read[1].0, "files differ between 1 and 3 ranks");
    assert_eq!(read[0].2["power_spectrum"], read[1].2["power_spectrum"], "spectra differ between 1 and 3 ranks");
}

/// Bad arguments, and boxes too large for the machine's memory, are
/// refused before MPI starts with exit 2 and one line.
#[test]
fn bad_arguments_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for (extra, needle) in [
        (&["--maps", "0"][..], "--maps and --per-file must be at least 1"),
        (&["--maps", "4", "--size", "4"], "--size 4 must be 8 to 1024"),
        (&["--maps", "4", "--size", "64", "--depth", "7"], "--depth 7 must divide --size 64"),
        (&["--maps", "4", "--box-size", "1"], "apart"),
        (&["--maps", "4", "--omega-m", "2"], "outside what simgen models"),
        (&["--maps", "4", "--size", "1024", "--particles", "4096"], "lower --particles"),
    ] {
        let output = Command::new(SIMGEN).args(["massmaps", "--out", out]).args(extra).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle) && stderr.trim().lines().count() == 1, "{extra:?}: {stderr}");
    }
}
