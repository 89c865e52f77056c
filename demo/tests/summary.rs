//! The demo's summary over the reports of real demo runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

/// The demo's summary, from reports the demo's pipelines wrote (trimmed
/// copies of a real run of each, in `demo/fixtures/reports`): every line is
/// there, with the figures of that run, and the verdict says it learned.
#[test]
fn the_demo_summary_reads_every_pipelines_reports() {
    use demo::{Reports, Run};
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/reports");
    let expected = [
        ("cosmoflow", true, "validation error 64 % of predicting the mean (Ωm 43 %, σ8 21 %"),
        ("deepcam", true, "minority mean 0.525 against 0 for all-background"),
        ("etalumis", false, "against 11.618 for proposing from the prior"),
        ("inverse", false, "against 0.5053 for the mean image"),
        ("hepcnn", true, "held-out ROC area 0.995 against 0.867 for the total E_T alone"),
        ("cosmogan", true, "power spectrum off by a factor e^0.61 on average over the rings (e^1.59 after the first"),
    ];
    let served = "served     first batch 0.5 s after the start beside `stager serve`, against 3.5 s staging first \
                  through a 60 MB/s source; one epoch done at 6.9 s against 7.9 s, same parameters\n";
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
        let compared = model == "cosmoflow";
        assert_eq!(reports.served.is_some(), compared, "{model}: served-train.json");
        assert_eq!(text.contains(served), compared, "{model}: {text}");
        let lines = 6 + usize::from(staged) + usize::from(compared);
        assert_eq!(text.lines().filter(|l| !l.is_empty()).count(), lines, "{text}");
    }
}

/// A report without a field the summary needs fails naming the report and
/// the field, instead of printing a made-up figure.
#[test]
fn a_report_missing_a_field_fails_naming_it() {
    use demo::{Report, Run, summary};
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
