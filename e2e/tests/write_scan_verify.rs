//! A CosmoFlow dataset written, scanned and verified under mpirun (4 ranks
//! as 2 pretend nodes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn demo_writes_scans_and_verifies_on_four_ranks_as_two_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dataset");
    let report = dir.path().join("report.json");
    let output = e2e::mpirun(
        4,
        &[("STAGEHAND_RANKS_PER_NODE", "2")],
        env!("CARGO_BIN_EXE_write-scan-verify").as_ref(),
        &[
            "--out",
            out.to_str().unwrap(),
            "--samples",
            "10",
            "--samples-per-file",
            "3",
            "--size",
            "8",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(report["nodes"], 2);
    assert_eq!(report["verified"]["samples"], 10);
    assert_eq!(report["verified"]["files"], 4);
    let manifest = formats::manifest::Manifest::load(&out.join("manifest.json")).unwrap();
    // 4 data files, each with its index.
    assert_eq!(manifest.files.len(), 8);
    assert_eq!(manifest.total_samples(), 10);
    assert!(manifest.entry("cosmo_0002.tfrecord.gz").is_some());
}

#[test]
fn demo_fails_every_rank_with_one_clear_line_on_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let output = e2e::mpirun(
        2,
        &[],
        env!("CARGO_BIN_EXE_write-scan-verify").as_ref(),
        &["--out", dir.path().join("d").to_str().unwrap(), "--samples-per-file", "0"],
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error: rank") && stderr.contains("--samples-per-file must be positive"), "{stderr}");
}
