//! A CosmoFlow dataset written, scanned and verified under mpirun (4 ranks
//! as 2 pretend nodes), and the demo's summary.

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

/// The demo's summary, from reports the demo's pipelines wrote (trimmed
/// copies of a real run of each, in `tests/fixtures/demo`): every line is
/// there, with the figures of that run, and the verdict says it learned.
#[test]
fn the_demo_summary_reads_every_pipelines_reports() {
    use e2e::demo::{Reports, Run};
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo");
    let expected = [
        ("cosmoflow", true, "validation error 64 % of predicting the mean (Ωm 43 %, σ8 21 %"),
        ("deepcam", true, "minority mean 0.525 against 0 for all-background"),
        ("etalumis", false, "against 11.618 for proposing from the prior"),
        ("inverse", false, "against 0.5053 for the mean image"),
    ];
    for (model, staged, result) in expected {
        let reports = Reports::read(&fixtures.join(model)).unwrap();
        assert_eq!(reports.stage.is_some(), staged, "{model}: stage.json");
        let dir = std::path::Path::new("/tmp/stagehand-demo");
        let pictures = [dir.join("loss.png"), dir.join("node0/cbed/preview_target.png")];
        let run = Run { model, ranks: 4, nodes: 2, seconds: 83, dir };
        let text = reports.summary(&run, &pictures).unwrap();
        println!("{text}");
        assert!(
            text.contains(&format!("Stagehand demo ({model}): 4 ranks as 2 pretend nodes, 1m23s in all")),
            "{text}"
        );
        assert!(text.contains(result), "{model}: {text}");
        assert!(text.contains(": it learned\n"), "{model}: {text}");
        assert_eq!(text.contains("  staged "), staged, "{model}: {text}");
        assert!(text.contains("pictures   in /tmp/stagehand-demo: loss.png, node0/cbed/preview_target.png"), "{text}");
        assert_eq!(text.lines().filter(|l| !l.is_empty()).count(), 6 + usize::from(staged), "{text}");
    }
}

/// A report without a field the summary needs fails naming the report and
/// the field, instead of printing a made-up figure.
#[test]
fn a_report_missing_a_field_fails_naming_it() {
    use e2e::demo::{Report, Run, summary};
    let simgen = serde_json::json!({ "boxes": 8, "bytes": 1e6, "seconds": 1.0 });
    let train = serde_json::json!({ "ranks": 4, "samples_per_sec": 10.0, "fractions": [0.01, 0.9, 0.09, 0.0],
        "epochs": [{ "train_loss": 0.5, "validation": { "samples": 8, "mae": [0.1, 0.1, 0.1, 0.1] } }] });
    let run = Run { model: "cosmoflow", ranks: 4, nodes: 2, seconds: 10, dir: std::path::Path::new("/tmp") };
    let error = summary(
        &run,
        &Report { name: "simgen.json", json: &simgen },
        None,
        &Report { name: "train.json", json: &train },
        &[],
    )
    .unwrap_err();
    let expected = "train.json, the last epoch's validation: field /relative_mae is missing or not a number";
    assert_eq!(error.to_string(), expected);
}
