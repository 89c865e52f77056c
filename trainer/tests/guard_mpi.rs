//! What a hostile tester broke in `trainer train`, under a real
//! `mpirun`: a sample with NaN trained every parameter to NaN, exited 0 and
//! replaced the good checkpoints; non-finite options were accepted; two
//! jobs shared a checkpoint directory; a mid-epoch checkpoint resumed with
//! another batch ran the wrong steps and exited 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

use formats::cosmoflow::CosmoSample;
use formats::manifest::{MANIFEST_FILE, Manifest, ScanOptions, scan};
use formats::tfrecord::TfRecordFileWriter;

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

fn train(ranks: usize, data: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["train", "--config", "mlperf-small", "--data", data.to_str().unwrap()];
    args.extend_from_slice(&["--val-fraction", "0", "--workers", "1", "--dropout", "0"]);
    args.extend_from_slice(extra);
    e2e::mpirun(ranks, &[], Path::new(TRAINER), &args)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Add `bad.tfrecord` to `data`: copies of its first sample, the one at
/// `nan_at` with a NaN target, and rescan the manifest. Returns its path.
fn add_file_with_a_nan_target(data: &Path, nan_at: usize) -> PathBuf {
    let manifest = Manifest::load(&data.join(MANIFEST_FILE)).unwrap();
    let shape = manifest.schema.cosmo_shape().unwrap();
    let first = manifest.files.iter().find(|f| f.samples > 0).unwrap();
    let file = formats::tfrecord::TfRecordFile::open(&data.join(&first.path)).unwrap();
    let record = file.records().next().unwrap().unwrap();
    let sample = CosmoSample::from_example_bytes(record.data, shape).unwrap();
    let path = data.join("bad.tfrecord");
    let mut writer = TfRecordFileWriter::create(&path, false, true).unwrap();
    for k in 0..8 {
        let mut y = sample.y();
        if k == nan_at {
            y[1] = f32::NAN;
        }
        let bad = CosmoSample::new(shape, sample.x().to_vec(), y).unwrap();
        writer.write_record(&bad.to_example_bytes()).unwrap();
    }
    writer.finish().unwrap();
    let rescanned = scan(data, &ScanOptions::new(manifest.schema.clone())).unwrap();
    rescanned.save(&data.join(MANIFEST_FILE)).unwrap();
    path
}

/// Every file of a checkpoint directory (its lock, which names the last
/// job's pid, aside) and the xxh3 of its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, formats::checksum::Checksum)> {
    let mut out: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file() && e.file_name() != formats::checkpoint::LOCK_FILE)
        .map(|e| (e.path().to_owned(), formats::checksum::Checksum::of(&std::fs::read(e.path()).unwrap())))
        .collect();
    out.sort();
    out
}

/// One sample whose target is NaN: the run stops at the first step that
/// meets it, exits non-zero with one line naming the step, the rank and
/// the sample's file, and leaves the checkpoints of the good epochs as they
/// were. With `--check-finite` the loader names it before any step.
#[test]
fn a_nan_in_one_sample_stops_the_run_naming_it_and_keeps_the_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 2, 21);
    let checkpoint = dir.path().join("cp");
    let cp = checkpoint.to_str().unwrap();
    e2e::trainer_report(&train(2, &data, &["--epochs", "1", "--batch", "2", "--checkpoint", cp]));
    let good = snapshot(&checkpoint);

    let bad = add_file_with_a_nan_target(&data, 3);
    let out = train(2, &data, &["--epochs", "3", "--batch", "2", "--checkpoint", cp]);
    let text = stderr(&out);
    assert!(!out.status.success(), "{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    let line = errors[0];
    for part in ["step ", "(epoch 2)", "not a finite number on rank(s)", "bad.tfrecord", "target value 1 is NaN"] {
        assert!(line.contains(part), "{part:?} missing: {line}");
    }
    assert!(line.contains(&bad.file_name().unwrap().to_string_lossy().into_owned()));
    assert_eq!(snapshot(&checkpoint), good, "the checkpoints changed");

    let out = train(2, &data, &["--epochs", "1", "--batch", "2", "--check-finite"]);
    let text = stderr(&out);
    assert!(!out.status.success());
    assert!(text.contains("bad.tfrecord") && text.contains("target value 1 is NaN"), "{text}");
    assert!(!text.contains("not a finite number on rank"), "the loader should have found it first: {text}");
}

/// Options that are not finite numbers, or outside what they mean, fail
/// before MPI starts with one line naming the option.
#[test]
fn non_finite_and_negative_options_are_refused_once_before_training() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 1, 22);
    for (option, value) in [
        ("--lr", "nan"),
        ("--lr", "inf"),
        ("--lr", "1e30"),
        ("--lr", "-1"),
        ("--momentum", "nan"),
        ("--warmup-epochs", "-5"),
        ("--fusion-mb", "nan"),
    ] {
        let out = train(2, &data, &["--epochs", "1", &format!("{option}={value}")]);
        assert_eq!(out.status.code(), Some(2), "{option} {value}: {}", stderr(&out));
        let text = stderr(&out);
        assert_eq!(text.matches(option).count(), 1, "{option} {value}: not one line: {text}");
        assert!(!text.contains("negative"), "{text}");
    }
    let out = train(1, &data, &["--epochs", "1", "--schedule", "poly", "--poly-end", "nan"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--poly-end"), "{}", stderr(&out));
}

/// A checkpoint directory another job holds is refused, naming the holder,
/// and nothing in it changes.
#[test]
fn a_checkpoint_directory_held_by_another_job_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 1, 23);
    let checkpoint = dir.path().join("cp");
    std::fs::create_dir_all(&checkpoint).unwrap();
    let held = formats::lock::DirLock::acquire(&checkpoint.join(formats::checkpoint::LOCK_FILE)).unwrap();
    let out = train(2, &data, &["--epochs", "1", "--batch", "2", "--checkpoint", checkpoint.to_str().unwrap()]);
    let text = stderr(&out);
    assert!(!out.status.success());
    assert!(
        text.contains("in use by another training job") && text.contains(&format!("pid {}", std::process::id())),
        "{text}"
    );
    assert!(!checkpoint.join("latest").exists());
    drop(held);
    e2e::trainer_report(&train(
        2,
        &data,
        &["--epochs", "1", "--batch", "2", "--checkpoint", checkpoint.to_str().unwrap()],
    ));
}

/// A mid-epoch checkpoint resumed with another `--batch`, `--seed` or
/// optimiser is refused naming what differs; on another number of ranks
/// the rest of the epoch is dealt to them (`elastic_mpi.rs` checks how).
#[test]
fn a_mid_epoch_checkpoint_refuses_another_batch_seed_or_optimiser() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 2, 24);
    let checkpoint = dir.path().join("cp");
    let cp = checkpoint.to_str().unwrap();
    let mid = ["--epochs", "1", "--batch", "1", "--checkpoint", cp, "--checkpoint-every", "2", "--max-steps", "3"];
    e2e::trainer_report(&train(2, &data, &mid));
    let state: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            checkpoint.join(std::fs::read_to_string(checkpoint.join("latest")).unwrap().trim()).join("state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(state["steps_into_epoch"], 2, "{state}");
    for (ranks, extra, names) in [
        (2, &["--batch", "2"][..], "--batch 1 (this run: 2)"),
        (2, &["--batch", "1", "--seed", "5"], "--seed 0 (this run: 5)"),
        (2, &["--batch", "1", "--optimizer", "adam"], "--optimizer sgd (this run: adam)"),
    ] {
        let mut args = vec!["--epochs", "2", "--checkpoint", cp];
        args.extend_from_slice(extra);
        let out = train(ranks, &data, &args);
        assert!(!out.status.success(), "{extra:?} resumed");
        assert!(stderr(&out).contains(names), "{extra:?}: {}", stderr(&out));
    }
    let resumed = e2e::trainer_report(&train(1, &data, &["--epochs", "1", "--batch", "1", "--checkpoint", cp]));
    assert!(resumed["epochs"][0]["samples"].as_u64() > Some(0), "{resumed}");
}
