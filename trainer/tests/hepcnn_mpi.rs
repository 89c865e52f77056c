//! HEP-CNN end to end under a real `mpirun`, on events the real `simgen
//! jets` writes: it learns to tell signal from background on held-out
//! events, 2 ranks equal 1 rank with twice the batch, a resumed run
//! continues bit for bit, and bad images or labels fail before MPI starts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::trainer_report as ok;

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

/// `events` events of 64×64 in files of `per_file` in `dir/name`, written
/// by `simgen jets` on one rank; a sixth of the files are validation files.
fn events(dir: &Path, name: &str, events: u64, per_file: u64, seed: u64) -> PathBuf {
    let out = dir.join(name);
    let (events, per_file, seed) = (events.to_string(), per_file.to_string(), seed.to_string());
    let args = [
        "jets",
        "--out",
        out.to_str().unwrap(),
        "--events",
        &events,
        "--per-file",
        &per_file,
        "--size",
        "64",
        "--val-fraction",
        "0.17",
        "--seed",
        &seed,
    ];
    let result = e2e::mpirun(1, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
    out
}

fn train(ranks: usize, data: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["train", "--model", "hepcnn", "--config", "small", "--data", data.to_str().unwrap()];
    args.extend_from_slice(&["--workers", "1"]);
    args.extend_from_slice(extra);
    e2e::mpirun(ranks, &[], Path::new(TRAINER), &args)
}

/// On held-out events the network's ROC area passes 0.8 (it measured
/// 0.97-0.99 after 4-6 epochs on one rank, where the total transverse
/// energy alone gives 0.81), and validation reports the cut-based
/// selection beside it. Where the CPU has AVX512_BF16 it then learns as
/// well in bf16.
#[test]
fn the_network_tells_signal_from_background_on_held_out_events() {
    let dir = tempfile::tempdir().unwrap();
    let data = events(dir.path(), "events", 1200, 200, 1);
    let args = ["--epochs", "4", "--batch", "8", "--optimizer", "adam", "--lr", "0.001"];
    let report = ok(&train(2, &data, &args));
    let epochs = report["epochs"].as_array().unwrap();
    let series: Vec<String> =
        epochs.iter().map(|e| format!("{:.3}", e["validation"]["auc"].as_f64().unwrap())).collect();
    let last = &epochs[epochs.len() - 1]["validation"];
    eprintln!("AUC by epoch {}; last validation {last}", series.join(" "));
    assert_eq!(last["samples"], 200, "one validation file of 200 events");
    let auc = last["auc"].as_f64().unwrap();
    assert!(auc > 0.8, "held-out AUC {auc}");
    let energy = last["energy_auc"].as_f64().unwrap();
    assert!(energy > 0.5 && energy < 1.0, "the energy baseline's AUC {energy}");
    let selection = last["selection_accuracy"].as_f64().unwrap();
    assert!(selection > 0.5 && selection < 1.0, "the selection's accuracy {selection}");
    assert!(last["signal_efficiency_at_selection"].as_f64().unwrap() > 0.0, "{last}");
    // The same in bf16 (docs/precision.md): its held-out ROC area within
    // 5 % of f32's. The validation loss is no measure here: after 4
    // epochs it swings by a third between seeds in f32 alone (seeds 0-2:
    // f32 0.21, 0.17, 0.20 against bf16 0.20, 0.22, 0.20, with ROC areas
    // 0.979, 0.985, 0.977 against 0.985, 0.982, 0.977).
    if !trainer::kernels::Precision::Bf16.native() {
        e2e::skip("the_network_tells_signal_from_background_on_held_out_events (bf16)", "no AVX512_BF16 on this CPU");
        return;
    }
    let report = ok(&train(2, &data, &[&args[..], &["--precision", "bf16"]].concat()));
    let half = report["epochs"].as_array().unwrap().last().unwrap()["validation"]["auc"].as_f64().unwrap();
    eprintln!("HEP-CNN held-out ROC area: f32 {auc:.4}, bf16 {half:.4}");
    assert!(half > 0.8 && half >= 0.95 * auc, "bf16 {half:.4} against f32 {auc:.4}");
}

/// 1 rank with batch 2b equals 2 ranks with batch b (dropout off: its
/// masks depend on the rank).
#[test]
fn two_ranks_with_batch_b_match_one_rank_with_batch_2b() {
    let dir = tempfile::tempdir().unwrap();
    let data = events(dir.path(), "events", 16, 16, 2);
    // 16 training events in global batches of 8.
    let difference = e2e::ranks_against_batch(dir.path(), 4, 2, |ranks, batch, checkpoint| {
        let mut args = vec!["--epochs", "1", "--batch", batch, "--lr", "0.01", "--dropout", "0"];
        args.extend_from_slice(&["--val-fraction", "0", "--checkpoint", checkpoint.to_str().unwrap()]);
        ok(&train(ranks, &data, &args))
    });
    assert!(difference <= 1e-5, "parameters differ by {difference}");
}

/// Two epochs straight and one plus one resumed end with the same
/// parameters, bit for bit, with dropout on (its masks are keyed by step).
#[test]
fn a_resumed_hepcnn_run_continues_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let data = events(dir.path(), "events", 40, 20, 3);
    let run = |checkpoint: &Path, epochs: &str| {
        let args = [
            "--epochs",
            epochs,
            "--batch",
            "4",
            "--optimizer",
            "adam",
            "--dropout",
            "0.5",
            "--val-fraction",
            "0",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
        ];
        ok(&train(2, &data, &args))
    };
    e2e::assert_resumes_bit_for_bit(dir.path(), run, &["params.f32"]);
}

/// Images of another size than the configuration's, and a file with a
/// label that is neither 0 nor 1, fail before MPI starts with exit 2 and
/// one line naming the data.
#[test]
fn events_of_the_wrong_shape_or_label_fail_with_one_line_naming_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |data: &Path| {
        e2e::refusal(
            Path::new(TRAINER),
            &["train", "--model", "hepcnn", "--config", "small", "--data", data.to_str().unwrap()],
        )
    };
    let large = dir.path().join("large");
    let args = ["jets", "--out", large.to_str().unwrap(), "--events", "4", "--size", "32"];
    assert!(Command::new(e2e::workspace_binary("simgen")).args(args).output().unwrap().status.success());
    let (code, stderr) = refused(&large);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("images of 32×32") && stderr.contains("takes 64×64"), "{stderr}");
    assert!(stderr.contains(large.to_str().unwrap()) && stderr.trim().lines().count() == 1, "{stderr}");

    // A file rewritten by hand with a label 2 in its third event.
    let data = events(dir.path(), "labels", 12, 6, 4);
    let file = data.join("train/events-00000.h5");
    let shape = formats::jets::EventShape { channels: 3, height: 64, width: 64 };
    let images = vec![0.5f32; 6 * shape.values()];
    let labels = [0, 1, 2, 0, 1, 0];
    let (weights, psr) = ([1f32; 6], [0f32; 6]);
    let written = formats::jets::Events { data: &images, labels: &labels, weights: &weights, psr: &psr };
    formats::jets::write_events(&file, shape, written).unwrap();
    let (code, stderr) = refused(&data);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("events-00000.h5") && stderr.contains("label 2"), "{stderr}");
    assert!(stderr.trim().lines().count() == 1, "{stderr}");
}
