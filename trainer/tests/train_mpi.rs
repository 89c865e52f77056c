//! The trainer end to end under a real `mpirun`, on CosmoFlow volumes that
//! simgen generates for the test: data-parallel equivalence, the one-step
//! lag, checkpoint/resume, a dying rank, bad input, and that the model
//! actually learns.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use formats::manifest::MANIFEST_FILE;

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

fn dataset(dir: &Path, boxes: usize, seed: u64) -> PathBuf {
    e2e::simulated_cosmo(dir, boxes, seed)
}

fn train(ranks: usize, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut all = vec!["train", "--config", "mlperf-small"];
    all.extend_from_slice(args);
    e2e::mpirun(ranks, env, Path::new(TRAINER), &all)
}

use e2e::{max_difference, trainer_report as ok};

fn params(checkpoint: &Path) -> Vec<f32> {
    e2e::checkpoint_floats(checkpoint, "params.f32")
}

/// Train one epoch of 16 samples with a global batch of 4, on 2 ranks × 2
/// and on 1 rank × 4; return both final parameter sets.
fn one_vs_two_ranks(dir: &Path, data: &Path, extra: &[&str]) -> (Vec<f32>, Vec<f32>) {
    let mut results = Vec::new();
    for (ranks, batch) in [(2usize, "2"), (1, "4")] {
        let checkpoint = dir.join(format!("cp-{ranks}-{}", extra.join("_")));
        let mut args = vec!["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "1"];
        args.extend_from_slice(&["--batch", batch, "--dropout", "0", "--lr", "0.01", "--workers", "1"]);
        args.extend_from_slice(&["--checkpoint", checkpoint.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let report = ok(&train(ranks, &[], &args));
        assert_eq!(report["epochs"][0]["steps"], 4);
        results.push(params(&checkpoint));
    }
    let one = results.pop().unwrap();
    (results.pop().unwrap(), one)
}

#[test]
fn two_ranks_with_batch_b_match_one_rank_with_batch_2b_with_and_without_fusion_and_augmentation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 11);
    // Standardisation statistics and each sample's turn do not depend on the ranks either.
    for extra in [&["--fusion-mb", "64"][..], &["--fusion-mb", "0", "--standardize", "--augment"]] {
        let fusion = extra[1];
        let (two, one) = one_vs_two_ranks(dir.path(), &data, extra);
        let moved = max_difference(&one, &params_at_start(dir.path(), &data));
        let diff = max_difference(&two, &one);
        assert!(moved > 1e-3, "training did not move the parameters ({moved})");
        assert!(diff < 1e-5, "fusion {fusion} MiB: 2 ranks differ from 1 rank by {diff}");
    }
}

/// The ways of exchanging gradients train to the same parameters as one
/// rank with the whole batch, up to floating-point reassociation: 2 ranks
/// reducing during back-propagation (in groups small enough that several
/// leave while the backward pass still runs, as the report shows), and 4
/// ranks as 2 pretend nodes summing hierarchically. The BatchNorm probe,
/// whose statistics depend on the per-rank batch, compares 4 ranks flat
/// against 4 ranks hierarchical during back-propagation, running
/// statistics included.
#[test]
fn reducing_during_backward_and_hierarchically_trains_to_the_parameters_of_the_flat_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 11);
    let nodes = [("STAGEHAND_RANKS_PER_NODE", "2")];
    let run = |name: &str, ranks: usize, args: &[&str]| {
        let checkpoint = dir.path().join(name);
        let mut all = vec!["train", "--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "1"];
        all.extend_from_slice(&["--workers", "1", "--lr", "0.01", "--checkpoint", checkpoint.to_str().unwrap()]);
        all.extend_from_slice(args);
        let report = ok(&e2e::mpirun(ranks, &nodes, Path::new(TRAINER), &all));
        (checkpoint, report)
    };
    let cosmoflow = ["--config", "mlperf-small", "--dropout", "0"];
    let (one, _) = run("one", 1, &[&cosmoflow[..], &["--batch", "4"]].concat());
    let (during, report) = run(
        "during",
        2,
        &[&cosmoflow[..], &["--batch", "2", "--reduce-during-backward", "--fusion-mb", "0.05"]].concat(),
    );
    let (hierarchical, _) =
        run("hierarchical", 4, &[&cosmoflow[..], &["--batch", "1", "--exchange", "hierarchical"]].concat());
    let groups = &report["gradient_groups"];
    eprintln!("groups {groups}");
    assert!(groups["during_backward"].as_u64().unwrap() > 0, "no group left before the backward pass ended: {groups}");
    assert!(groups["during_backward"].as_u64().unwrap() < groups["groups"].as_u64().unwrap(), "{groups}");
    for (name, checkpoint) in [("during back-propagation", &during), ("hierarchical", &hierarchical)] {
        let diff = max_difference(&params(checkpoint), &params(&one));
        eprintln!("{name}: largest difference from 1 rank {diff:e}");
        assert!(diff < 1e-5, "{name}: differs from 1 rank by {diff}");
    }
    let probe = ["--model", "bn-probe", "--config", "small", "--batch", "1"];
    let (flat, _) = run("probe-flat", 4, &[&probe[..], &["--exchange", "flat"]].concat());
    let (both, _) = run(
        "probe-both",
        4,
        &[&probe[..], &["--exchange", "hierarchical", "--reduce-during-backward", "--fusion-mb", "0"]].concat(),
    );
    let diff = max_difference(&params(&flat), &params(&both));
    eprintln!("BatchNorm probe: largest difference {diff:e}");
    assert!(diff < 1e-5, "BatchNorm probe: hierarchical during back-propagation differs from flat by {diff}");
    let diff = max_difference(&model_state(&flat), &model_state(&both));
    assert!(diff < 1e-5, "BatchNorm probe: running statistics differ by {diff}");
}

/// `--synthetic-data` trains on samples of the model's shapes made in
/// memory: no data directory, the loader's wait no more than the hand-over
/// of a made batch, the same steps as files of as many samples would give;
/// a model that cannot make its samples says so in one line.
#[test]
fn synthetic_data_trains_without_a_data_directory_and_waits_for_no_file() {
    let args = ["train", "--config", "mlperf-small", "--synthetic-data", "64", "--batch", "2", "--epochs", "1"];
    let report = ok(&e2e::mpirun(2, &[], Path::new(TRAINER), &args));
    assert_eq!(report["epochs"][0]["steps"], 16, "{report}");
    let wait = report["fractions"][0].as_f64().unwrap();
    eprintln!("data wait {:.4} % of the step", 100.0 * wait);
    // No file is read: what is left is handing batches over between
    // threads (0.3 % of the step on an idle machine). CI runs this beside
    // other ranks on 2 cores, where a hand-over may wait for a core (1.7 %
    // seen), so the bound is loose; a reader touching storage would
    // exceed it by far.
    assert!(wait < 0.05, "data wait {wait} of the step with synthetic data");
    assert!(report["epochs"][0]["validation"].is_null(), "{report}");
    // The inverse model fits its normalisation on the made samples.
    let args = ["train", "--model", "inverse", "--config", "small", "--synthetic-data", "4", "--batch", "2"];
    let report = ok(&e2e::mpirun(1, &[], Path::new(TRAINER), &[&args[..], &["--epochs", "1"]].concat()));
    assert_eq!(report["epochs"][0]["steps"], 2, "{report}");
    assert!(report["epochs"][0]["train_loss"].as_f64().is_some_and(f64::is_finite), "{report}");
    let args = ["train", "--model", "etalumis", "--config", "small", "--synthetic-data", "16"];
    let out = e2e::output(std::process::Command::new(TRAINER).args(args)).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("no synthetic data") && stderr.trim().lines().count() == 1, "{stderr}");
}

#[test]
fn the_report_names_the_kernels_the_ranks_measured_and_agreed_on_at_start_or_the_ones_forced() {
    use trainer::kernels::calibrate::{self, Candidate};
    let args = ["train", "--config", "mlperf-small", "--synthetic-data", "8", "--batch", "2", "--epochs", "1"];
    let out = e2e::mpirun(2, &[], Path::new(TRAINER), &args);
    let report = ok(&out);
    let names: Vec<String> = calibrate::candidates().iter().map(Candidate::name).collect();
    let kernels = &report["kernels"];
    assert_eq!(kernels["chosen_by"], "measured", "{kernels}");
    assert!(names.iter().any(|n| kernels["path"] == n.as_str()), "{kernels} not one of {names:?}");
    let timed: Vec<&str> =
        kernels["probe_ms"].as_array().unwrap().iter().map(|p| p["candidate"].as_str().unwrap()).collect();
    assert_eq!(timed, names, "{kernels}");
    // Both ranks' probes decided, so both run the path that is fastest on
    // the slower of them (the choice's own test checks the rule).
    assert_eq!(kernels["ranks"], 2, "{kernels}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().filter(|l| l.starts_with("kernels: ")).count(), 1, "rank 0 says it once: {stderr}");
    assert!(stderr.contains("a probe on the slowest of 2 ranks)"), "{stderr}");
    // Forced by the environment: no measurement, and the report names what
    // was forced (on AVX-512 CPUs both of that path's candidates, whatever
    // the table of CPU families would pick).
    let widest = trainer::kernels::cpu::best().name();
    for forced in names.iter().filter(|n| n.starts_with(widest)) {
        let report = ok(&e2e::mpirun(1, &[("STAGEHAND_KERNELS", forced.as_str())], Path::new(TRAINER), &args));
        assert_eq!(report["kernels"]["path"], forced.as_str(), "{report}");
        assert_eq!(report["kernels"]["chosen_by"], "forced", "{report}");
        assert!(report["kernels"]["probe_ms"].is_null(), "{report}");
    }
}

/// The initial parameters (seed 0): an epoch-0 checkpoint is not written,
/// so train zero steps and read them from the report-free checkpoint.
fn params_at_start(dir: &Path, data: &Path) -> Vec<f32> {
    let checkpoint = dir.join("cp-start");
    let args = ["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "1", "--batch", "2"];
    let mut args = args.to_vec();
    args.extend_from_slice(&["--lr", "0", "--checkpoint", checkpoint.to_str().unwrap(), "--dropout", "0"]);
    ok(&train(1, &[], &args));
    params(&checkpoint)
}

#[test]
fn lagged_gradients_on_two_ranks_match_an_explicit_lagged_update_on_one_rank() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 12);
    let lagged = ["--grad-lag", "1", "--momentum", "0"];
    let (two, one) = one_vs_two_ranks(dir.path(), &data, &lagged);
    let diff = max_difference(&two, &one);
    assert!(diff < 1e-5, "lagged: 2 ranks differ from 1 rank by {diff}");
    let explicit = explicit_sgd(&data, 4, 0.01, true);
    let diff = max_difference(&two, &explicit);
    assert!(diff < 1e-5, "lagged: 2 ranks differ from the explicit lagged update by {diff}");
    let (_, unlagged) = one_vs_two_ranks(dir.path(), &data, &["--momentum", "0"]);
    assert!(max_difference(&unlagged, &explicit_sgd(&data, 4, 0.01, false)) < 1e-5, "unlagged differs");
    assert!(max_difference(&one, &unlagged) > 1e-6, "the lag changed nothing");
}

/// One epoch of plain SGD (no momentum, no dropout, seed 0) written out
/// here, independently of the trainer's loop: the trainer's sample order
/// and initialisation, the gradient of each batch of `batch` at the current
/// parameters, and with `lag` each step applying the previous step's
/// gradient (the last one after the epoch's final step).
fn explicit_sgd(data: &Path, batch: usize, lr: f32, lag: bool) -> Vec<f32> {
    use burn::tensor::{Device, Tensor, TensorData};
    use loader::dataset::{CosmoTransform, CosmoflowDataset, Dataset};
    use loader::sampler::{DistributedSampler, Remainder};
    use trainer::models::cosmoflow::{CosmoflowConfig, mse};

    let manifest = formats::manifest::Manifest::load(&data.join(MANIFEST_FILE)).unwrap();
    let files: Vec<usize> = (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect();
    let dataset = CosmoflowDataset::from_manifest(data, &manifest, Some(&files), CosmoTransform::Log1p).unwrap();
    let sampler = DistributedSampler {
        len: dataset.len(),
        world: 1,
        rank: 0,
        seed: 0,
        shuffle: true,
        remainder: Remainder::Drop,
    };
    let config = CosmoflowConfig::mlperf_small();
    let device = Device::flex().autodiff();
    let model = config.init(&device).unwrap();
    let shapes = trainer::params::shapes(&model).unwrap();
    let mut values = trainer::params::glorot_uniform(&shapes, 0);
    let mut model = trainer::params::with_values(model, &values, &device);
    let d = config.input;
    let gradient_at = |model: &trainer::models::cosmoflow::Cosmoflow, indices: &[usize]| {
        let (mut x, mut y) = (vec![0f32; indices.len() * dataset.x_len()], vec![0f32; indices.len() * 4]);
        for (k, &i) in indices.iter().enumerate() {
            let (xs, ys) = (&mut x[k * dataset.x_len()..][..dataset.x_len()], &mut y[k * 4..][..4]);
            dataset.read_into(i, xs, ys).unwrap();
        }
        let x = Tensor::<5>::from_data(TensorData::new(x, [indices.len(), d, d, d, 4]), &device);
        let y = Tensor::<2>::from_data(TensorData::new(y, [indices.len(), 4]), &device);
        let grads = mse(model.forward(x, None), y).backward();
        let mut out: Vec<Vec<f32>> = Vec::new();
        trainer::params::gradients(model, &grads, |_, g| out.push(g.to_vec()));
        out
    };
    let descend = |values: &mut Vec<Vec<f32>>, g: &[Vec<f32>]| {
        for (w, g) in values.iter_mut().zip(g) {
            w.iter_mut().zip(g).for_each(|(w, g)| *w -= lr * g);
        }
    };
    let mut pending: Option<Vec<Vec<f32>>> = None;
    for indices in sampler.indices(0).chunks_exact(batch) {
        let g = gradient_at(&model, indices);
        if !lag {
            descend(&mut values, &g);
        } else if let Some(previous) = pending.replace(g) {
            descend(&mut values, &previous);
        }
        model = trainer::params::with_values(model, &values, &device);
    }
    if let Some(last) = pending {
        descend(&mut values, &last);
    }
    values.concat()
}

#[test]
fn a_resumed_run_continues_the_same_loss_curve_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 3, 13);
    let run = |checkpoint: &Path, epochs: &str| {
        let args = [
            "--data",
            data.to_str().unwrap(),
            "--epochs",
            epochs,
            "--batch",
            "2",
            "--optimizer",
            "adam",
            "--larc",
            "--schedule",
            "poly",
            "--poly-epochs",
            "3",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
        ];
        ok(&train(2, &[], &args))
    };
    let straight = run(&dir.path().join("straight"), "3");
    let resumed_dir = dir.path().join("resumed");
    let first = run(&resumed_dir, "1");
    assert_eq!(first["epochs"].as_array().unwrap().len(), 1);
    let second = run(&resumed_dir, "3");
    assert_eq!(second["resumed_from_epoch"], 1);
    assert_eq!(second["losses"], straight["losses"], "loss curves differ");
    assert_eq!(params(&resumed_dir), params(&dir.path().join("straight")));
    assert_eq!(second["epochs"][1]["checksum"], straight["epochs"][2]["checksum"]);
    let val = &straight["epochs"][2]["validation"];
    assert!(val["samples"].as_u64().unwrap() > 0, "{val}");
}

#[test]
fn a_job_killed_mid_epoch_resumes_from_the_mid_epoch_checkpoint_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 16);
    // 16 samples, 2 ranks x batch 2: 4 steps per epoch; a checkpoint every
    // 3 steps lands mid-epoch (after steps 3, 6 and 9) and at epoch ends.
    let run = |checkpoint: &Path, env: &[(&str, &str)]| {
        let args = [
            "--data",
            data.to_str().unwrap(),
            "--val-fraction",
            "0",
            "--epochs",
            "3",
            "--batch",
            "2",
            "--optimizer",
            "adam",
            "--checkpoint-every",
            "3",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
        ];
        train(2, env, &args)
    };
    let straight = ok(&run(&dir.path().join("straight"), &[]));
    let killed_dir = dir.path().join("killed");
    // Rank 0 (the one that writes checkpoints) dies in step 10, after 9
    // steps: the latest checkpoint is 1 step into epoch 3.
    let killed = run(&killed_dir, &[("STAGEHAND_TRAINER_ABORT_AT", "0:9")]);
    assert!(!killed.status.success(), "the job survived its rank's death");
    let latest = std::fs::read_to_string(killed_dir.join("latest")).unwrap();
    assert_eq!(latest.trim(), "epoch-2-step-1");
    let resumed = ok(&run(&killed_dir, &[]));
    assert_eq!(resumed["resumed_from_epoch"], 2);
    assert_eq!(resumed["epochs"][0]["steps"], 3, "the resumed epoch should run only its last 3 steps");
    assert_eq!(resumed["losses"], straight["losses"], "loss curves differ");
    assert_eq!(params(&killed_dir), params(&dir.path().join("straight")));
}

#[test]
fn a_rank_that_dies_ends_the_job_with_an_error_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 14);
    let started = Instant::now();
    let args = ["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "3", "--batch", "2"];
    let output = train(2, &[("STAGEHAND_TRAINER_ABORT_AT", "1:2")], &args);
    assert!(!output.status.success(), "the job succeeded although rank 1 died");
    assert!(started.elapsed() < Duration::from_secs(120), "took {:?}", started.elapsed());
}

#[test]
fn bad_input_fails_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    let output = train(1, &[], &["--data", missing.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nowhere") && stderr.contains("manifest.json"), "{stderr}");

    let data = dataset(dir.path(), 1, 15);
    let output =
        e2e::mpirun(1, &[], Path::new(TRAINER), &["train", "--config", "mlperf", "--data", data.to_str().unwrap()]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("32³×4") && stderr.contains("128³×4"), "{stderr}");

    // A flag of another model: the command line refuses it, in one line, exit 2.
    let output = std::process::Command::new(TRAINER)
        .args(["train", "--model", "cosmoflow", "--lstm-depth", "3", "--data", data.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--lstm-depth") && stderr.contains("trainer train cosmoflow --help"), "{stderr}");

    let output = e2e::mpirun(1, &[], Path::new(TRAINER), &["train", "--config", "resnet", "--data", "x"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown CosmoFlow configuration"));

    // An unwritable checkpoint directory fails before training, not after an epoch.
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let checkpoint = blocker.join("cp");
    let args = ["--data", data.to_str().unwrap(), "--checkpoint", checkpoint.to_str().unwrap(), "--batch", "2"];
    let started = Instant::now();
    let output = train(1, &[], &args);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--checkpoint") && stderr.contains("a-file"), "{stderr}");
    assert!(!stderr.contains("epoch 1"), "it trained first: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_one_rank_report_as_baseline_gives_weak_and_strong_scaling_efficiency() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 17);
    let (one, two) = (dir.path().join("one.json"), dir.path().join("two.json"));
    let run = |ranks: usize, batch: &str, extra: &[&str]| {
        let mut args = vec!["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "1"];
        args.extend_from_slice(&["--batch", batch, "--workers", "1"]);
        args.extend_from_slice(extra);
        train(ranks, &[], &args)
    };
    let baseline = ok(&run(1, "2", &["--report", one.to_str().unwrap()]));
    assert!(baseline.get("parallel_efficiency").is_none());
    let report = ok(&run(2, "2", &["--baseline", one.to_str().unwrap(), "--report", two.to_str().unwrap()]));
    let expected = report["samples_per_sec"].as_f64().unwrap() / (2.0 * baseline["samples_per_sec"].as_f64().unwrap());
    let efficiency = report["parallel_efficiency"].as_f64().unwrap();
    assert!((efficiency - expected).abs() < 1e-9 && efficiency > 0.0, "{efficiency} against {expected}");
    assert_eq!(report["scaling"], "weak");
    // The baseline's global batch of 2 split over 2 ranks.
    let strong = ok(&run(2, "1", &["--baseline", one.to_str().unwrap()]));
    assert_eq!(strong["scaling"], "strong");
    let expected = strong["samples_per_sec"].as_f64().unwrap() / (2.0 * baseline["samples_per_sec"].as_f64().unwrap());
    assert!((strong["parallel_efficiency"].as_f64().unwrap() - expected).abs() < 1e-9);

    // A 2-rank report, or one of another batch, is refused before training.
    for (baseline, batch, says) in [(&two, "2", "1-rank run"), (&one, "4", "batch 2")] {
        let output = run(2, batch, &["--baseline", baseline.to_str().unwrap()]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(baseline.file_name().unwrap().to_str().unwrap()) && stderr.contains(says), "{stderr}");
    }
}

/// Forward multiply-adds of one `mlperf-small` sample, by hand: five 3³
/// convolutions at 32³, 16³, 8³, 4³ and 2³ outputs (each pooled after),
/// 4 → 8 → 16 → 32 → 64 → 128 channels, then dense 128 → 128 → 64 → 4.
fn mlperf_small_forward_macs() -> f64 {
    let convs = [(32usize, 4usize, 8usize), (16, 8, 16), (8, 16, 32), (4, 32, 64), (2, 64, 128)];
    let conv: usize = convs.iter().map(|&(edge, from, to)| edge.pow(3) * 27 * from * to).sum();
    (conv + 128 * 128 + 128 * 64 + 64 * 4) as f64
}

#[test]
fn reports_give_step_time_statistics_sustained_flops_and_the_time_to_a_target_loss() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 19);
    let run = |target: &str| {
        let args = ["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "2", "--batch", "2"];
        let mut args = args.to_vec();
        args.extend_from_slice(&["--workers", "1", "--target-loss", target]);
        ok(&train(2, &[], &args))
    };
    let report = run("1e9");
    let stats = &report["step_time"];
    let number = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    let (low, median, high) = (number(&stats["low_secs"]), number(&stats["median_secs"]), number(&stats["high_secs"]));
    assert!(0.0 < low && low <= median && median <= high, "{stats}");
    assert!(number(&stats["imbalance"]) >= 1.0, "{stats}");
    // 16 samples over 2 ranks × 2: 4 steps an epoch on each rank.
    assert_eq!(stats["steps"], 2 * 2 * 4);
    assert_eq!(report["epochs"][0]["step_time"]["steps"], 2 * 4);
    // The epoch's Flop/s are its samples' training operations (6 × the
    // forward multiply-adds) over its seconds.
    let epoch = &report["epochs"][0];
    let flops = number(&epoch["flops_per_sec"]) * number(&epoch["seconds"]);
    let want = number(&epoch["samples"]) * 6.0 * mlperf_small_forward_macs();
    assert!((flops / want - 1.0).abs() < 1e-9, "{flops} against {want}");
    assert!(number(&report["flops_per_sec"]) > 0.0);
    // Any step's loss is below 1e9: the first step reached it.
    let reached = number(&report["time_to_target_secs"]);
    assert!(reached > 0.0 && reached <= number(&epoch["seconds"]) + number(&report["first_batch_secs"]), "{reached}");
    assert_eq!(report["target_loss"], 1e9);
    // No loss is negative.
    assert!(run("-1")["time_to_target_secs"].is_null());
}

/// The model learns what its data holds: on 4 simulated universes (32
/// samples) the training loss falls to a tenth of the first epoch's. This
/// checks the whole learning path (gradients, exchange, optimiser, write
/// back) on real data; the next test checks generalising.
#[test]
fn cosmoflow_small_fits_simulated_universes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 4, 16);
    let plot = dir.path().join("loss.png");
    let args = [
        "--data",
        data.to_str().unwrap(),
        "--val-fraction",
        "0",
        "--epochs",
        "20",
        "--batch",
        "4",
        "--optimizer",
        "adam",
        "--lr",
        "0.0003",
        "--dropout",
        "0",
        "--plot",
        plot.to_str().unwrap(),
    ];
    let report = ok(&train(2, &[], &args));
    let epochs = report["epochs"].as_array().unwrap();
    let first = epochs[0]["train_loss"].as_f64().unwrap();
    let last = epochs.last().unwrap()["train_loss"].as_f64().unwrap();
    assert!(last < 0.1 * first, "training loss went from {first} to {last}");
    assert!(std::fs::metadata(&plot).unwrap().len() > 1000);
    assert!(!dir.path().join("loss-predictions.png").exists(), "CosmoFlow draws no predictions");
}

/// The model learns the cosmology of universes it has not seen, as the
/// issue asks: validation MAE at least 30 % under that of predicting the
/// mean. 800 simulated whole boxes (32³ counts of 64³ particles) with
/// parameters from the wide Quijote priors, 8 epochs on 640 of them with
/// standardised inputs, random cube symmetries and a decaying rate.
/// Measured in release with seeds 0-3: see docs/trainer.md. Where the CPU
/// has AVX512_BF16 it then learns as well in bf16.
#[test]
fn cosmoflow_small_learns_the_parameters_of_unseen_universes() {
    use simgen::cosmo::generate::{CosmoConfig, Priors};
    let dir = tempfile::tempdir().unwrap();
    let config = CosmoConfig { grid: 32, split: 1, priors: Priors::Quijote, ..e2e::cosmo_config(800, 7) };
    let data = e2e::simulate_cosmo(&dir.path().join("quijote"), &config);
    let args = [
        "--data",
        data.to_str().unwrap(),
        "--epochs",
        "8",
        "--batch",
        "4",
        "--optimizer",
        "adam",
        "--lr",
        "0.001",
        "--schedule",
        "poly",
        "--poly-end",
        "0.05",
        "--dropout",
        "0",
        "--standardize",
        "--augment",
    ];
    let report = ok(&train(2, &[], &args));
    assert_eq!(report["augment"], true);
    let last = &report["epochs"].as_array().unwrap().last().unwrap()["validation"];
    let ratio = |i: usize| last["mae"][i].as_f64().unwrap() / last["baseline_mae"][i].as_f64().unwrap();
    let overall = last["relative_mae"].as_f64().unwrap();
    let (omega_m, sigma_8) = (ratio(0), ratio(1));
    assert!(
        overall < 0.7 && omega_m < 0.6 && sigma_8 < 0.4,
        "validation MAE / mean's: {overall:.3} overall, Ω_m {omega_m:.3}, σ8 {sigma_8:.3}: {last}"
    );
    // The same in bf16 (docs/precision.md): its validation error within
    // 5 % of f32's (measured on seeds 0-2: 0.609/0.620, 0.618/0.619,
    // 0.622/0.611 for f32/bf16).
    if !trainer::kernels::Precision::Bf16.native() {
        e2e::skip("cosmoflow_small_learns_the_parameters_of_unseen_universes (bf16)", "no AVX512_BF16 on this CPU");
        return;
    }
    let report = ok(&train(2, &[], &[&args[..], &["--precision", "bf16"]].concat()));
    assert_eq!(report["precision"], "bf16");
    let half = report["epochs"].as_array().unwrap().last().unwrap()["validation"]["relative_mae"].as_f64().unwrap();
    eprintln!("CosmoFlow validation MAE / mean's: f32 {overall:.4}, bf16 {half:.4}");
    assert!(half <= 1.05 * overall, "bf16 {half:.4} against f32 {overall:.4}");
}

/// CosmoFlow as SC18 trained it: `sc18-small` sees the z = 0 channel of
/// the four-redshift data alone and regresses Ω_m, σ_8 and n_s; `--channels`
/// and `--targets` pick others; a channel the data lack or an unknown
/// parameter fails in one line.
#[test]
fn sc18_trains_on_the_z0_snapshot_for_three_parameters_and_the_selection_can_change() {
    let dir = tempfile::tempdir().unwrap();
    // Two boxes of 8 samples, a file each: one trains, one validates.
    let data = dataset(dir.path(), 2, 15);
    let run = |extra: &[&str]| {
        let mut args = vec!["train", "--config", "sc18-small", "--data", data.to_str().unwrap()];
        args.extend_from_slice(&["--epochs", "1", "--batch", "2", "--val-fraction", "0.5", "--workers", "1"]);
        args.extend_from_slice(extra);
        e2e::mpirun(1, &[], Path::new(TRAINER), &args)
    };
    let report = ok(&run(&[]));
    let details = &report["model"]["details"];
    assert_eq!(details["data_channels"], serde_json::json!([0]), "{details}");
    assert_eq!(details["targets"], serde_json::json!(["omega_m", "sigma_8", "n_s"]));
    assert_eq!((details["channels"].as_u64(), details["outputs"].as_u64()), (Some(1), Some(3)));
    let validation = &report["epochs"][0]["validation"];
    assert_eq!(validation["mae"].as_array().map(Vec::len), Some(3), "{validation}");

    let report = ok(&run(&["--channels", "3,0", "--targets", "h,omega_m"]));
    let details = &report["model"]["details"];
    assert_eq!(details["data_channels"], serde_json::json!([3, 0]));
    assert_eq!(details["targets"], serde_json::json!(["h", "omega_m"]));
    assert_eq!((details["channels"].as_u64(), details["outputs"].as_u64()), (Some(2), Some(2)));

    for (extra, says) in
        [(["--channels", "4"], "--channels asks for 4"), (["--targets", "hubble"], "unknown parameter 'hubble'")]
    {
        let output = run(&extra);
        assert!(!output.status.success(), "{extra:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
    }
}

/// `stager stage` of `data` onto two pretend nodes of one rank each.
fn stage(data: &Path, dest: &str, policy: &str) {
    let stager = e2e::workspace_binary("stager");
    let args = ["stage", "--source", data.to_str().unwrap(), "--dest", dest, "--policy", policy];
    let output = e2e::mpirun(2, &[("STAGEHAND_RANKS_PER_NODE", "1")], &stager, &args);
    assert!(output.status.success(), "stager: {}", String::from_utf8_lossy(&output.stderr));
}

/// Training from what `stager stage` placed, with nothing but `--staged`:
/// each node's placement record says which files it holds. The source is
/// moved away first, so every sample read comes from a node's own copies.
#[test]
fn staged_training_reads_only_the_files_placed_on_each_node() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 4, 17);
    let val = dataset(&dir.path().join("val"), 2, 18);
    let dest = format!("{}/node{{node}}", dir.path().display());
    stage(&data, &dest, "per-node=2");
    let manifest = formats::manifest::Manifest::load(&data.join(MANIFEST_FILE)).unwrap();
    let needs = manifest.files_per_node(2, "per-node=2".parse().unwrap(), 0).unwrap();
    for (node, files) in needs.iter().enumerate() {
        let node_dir = dir.path().join(format!("node{node}"));
        let held: Vec<String> = std::fs::read_dir(&node_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| !name.starts_with('.'))
            .collect();
        assert_eq!(held.len(), files.len(), "node {node} holds {held:?}");
    }
    std::fs::rename(&data, dir.path().join("moved-away")).unwrap();
    let args = ["--staged", dest.as_str(), "--val", val.to_str().unwrap(), "--epochs", "1", "--batch", "2"];
    let report = ok(&train(2, &[("STAGEHAND_RANKS_PER_NODE", "1")], &args));
    assert!(report["epochs"][0]["steps"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(report["epochs"][0]["validation"]["samples"], 16);
}

/// A destination whose files are not those its placement record lists, or
/// whose record came from another dataset, is refused in one line naming
/// the destination, before any training.
#[test]
fn a_staged_destination_that_does_not_match_its_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(&dir.path().join("a"), 2, 19);
    let other = dataset(&dir.path().join("b"), 3, 20);
    let (dest_a, dest_b) = (dir.path().join("a-node{node}"), dir.path().join("b-node{node}"));
    let (dest_a, dest_b) = (dest_a.to_str().unwrap(), dest_b.to_str().unwrap());
    stage(&data, dest_a, "replicate");
    stage(&other, dest_b, "replicate");
    let refused = |needle: &str| {
        let output = train(2, &[("STAGEHAND_RANKS_PER_NODE", "1")], &["--staged", dest_a, "--batch", "2"]);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        let node1 = dir.path().join("a-node1").display().to_string();
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(&node1)).collect();
        assert!(!lines.is_empty() && lines[0].contains(needle), "{stderr}");
    };
    let record = |node: &str| dir.path().join(node).join(".stagehand/placement.json");
    std::fs::copy(record("b-node1"), record("a-node1")).unwrap();
    refused("manifest copy");
    stage(&data, dest_a, "replicate");
    let first = formats::manifest::Manifest::load(&data.join(MANIFEST_FILE)).unwrap().files[0].path.clone();
    std::fs::remove_file(dir.path().join("a-node1").join(&first)).unwrap();
    refused("files present");
}

/// A model's state tensors from the latest checkpoint.
fn model_state(checkpoint: &Path) -> Vec<f32> {
    e2e::checkpoint_floats(checkpoint, "model_state.f32")
}

/// BatchNorm's running statistics are state, not parameters: they start at
/// 0 (means) and 1 (variances), change as the forward passes see data, are
/// averaged over the ranks at every epoch's end (the run fails if the
/// ranks' parameters or state then differ: the checksum of both is agreed
/// every epoch), and survive checkpoint and resume bit for bit.
#[test]
fn batchnorm_state_trains_on_two_ranks_and_resumes_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 21);
    let run = |checkpoint: &Path, epochs: &str| {
        let args = [
            "train",
            "--model",
            "bn-probe",
            "--config",
            "small",
            "--data",
            data.to_str().unwrap(),
            "--val-fraction",
            "0.5",
            "--epochs",
            epochs,
            "--batch",
            "2",
            "--lr",
            "0.01",
            "--workers",
            "1",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
        ];
        ok(&e2e::mpirun(2, &[], Path::new(TRAINER), &args))
    };
    let (straight, resumed) = (dir.path().join("straight"), dir.path().join("resumed"));
    let first = run(&resumed, "1");
    assert_eq!(first["state_values"], 32, "two BatchNorm layers of 8 features, mean and variance each");
    let after_one = model_state(&resumed);
    assert_eq!(after_one.len(), 32);
    // Traversal order: norm1 (mean, var), norm2 (mean, var).
    let (means, vars): (Vec<f32>, Vec<f32>) = (
        after_one[..8].iter().chain(&after_one[16..24]).copied().collect(),
        after_one[8..16].iter().chain(&after_one[24..]).copied().collect(),
    );
    assert!(means.iter().any(|&m| m != 0.0), "running means never left 0: {means:?}");
    assert!(vars.iter().any(|&v| v != 1.0) && vars.iter().all(|&v| v > 0.0 && v.is_finite()), "{vars:?}");
    let validation = &first["epochs"][0]["validation"];
    let mae = validation["mae"].as_array().unwrap();
    assert!(!mae.is_empty() && mae.iter().all(|m| m.as_f64().unwrap().is_finite()), "{validation}");

    let two = run(&straight, "2");
    let continued = run(&resumed, "2");
    assert_eq!(continued["resumed_from_epoch"], 1);
    assert_eq!(params(&straight), params(&resumed), "parameters after resume");
    assert_eq!(model_state(&straight), model_state(&resumed), "running statistics after resume");
    assert_ne!(model_state(&straight), after_one, "the second epoch changed the running statistics");
    assert_eq!(two["epochs"][1]["checksum"], continued["epochs"][0]["checksum"]);
}

/// A panic on one rank prints one line naming the rank and ends the whole
/// job with MPI_Abort (the other rank would otherwise wait in its allreduce).
#[test]
fn a_panic_on_one_rank_ends_the_job_naming_the_rank() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 22);
    let started = Instant::now();
    let args = ["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "3", "--batch", "2"];
    let output = train(2, &[("STAGEHAND_TRAINER_PANIC_AT", "1:2")], &args);
    let elapsed = started.elapsed();
    assert!(!output.status.success(), "the job succeeded although rank 1 panicked");
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr.lines().find(|l| l.contains("panicked")).unwrap_or_else(|| panic!("no panic line in:\n{stderr}"));
    assert!(line.starts_with("error: rank 1 (node ") && line.contains("injected panic at step 2"), "{line}");
}

/// `--device gpu` on a machine (or build) without a GPU fails with one
/// line and exit code 2 before reading anything: the data given does not
/// even exist.
#[test]
fn a_gpu_device_without_a_gpu_fails_before_any_data_is_read() {
    let output = std::process::Command::new(TRAINER)
        .args(["train", "--device", "gpu", "--config", "mlperf-small", "--data", "/nonexistent/data"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--device gpu") && !stderr.contains("nonexistent"), "{stderr}");
}

#[test]
fn trainer_models_lists_every_model_with_its_configurations_and_sizes() {
    let output = std::process::Command::new(TRAINER).arg("models").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let row = |model: &str, config: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([model, config]))
            .unwrap_or_else(|| panic!("no {model} {config} row in:\n{stdout}"))
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap()
    };
    for config in ["mlperf", "mlperf-small", "sc18", "sc18-small"] {
        assert!(row("cosmoflow", config) > 0);
    }
    // 5 convolutions 3³ (4→8→16→32→64→128) and dense 128→128→64→4, weights and biases.
    let small: u64 = [4 * 8, 8 * 16, 16 * 32, 32 * 64, 64 * 128].iter().map(|io| io * 27).sum::<u64>()
        + (8 + 16 + 32 + 64 + 128)
        + (128 * 128 + 128)
        + (128 * 64 + 64)
        + (64 * 4 + 4);
    assert_eq!(row("cosmoflow", "mlperf-small"), small);
    assert!(row("bn-probe", "small") > 0);
    // The segmentation models: the same counts as their PyTorch twins in
    // bench/peers/torch_segmentation.py.
    assert_eq!(row("tiramisu", "small"), 44_547);
    assert_eq!(row("deeplabv3plus", "small"), 403_731);
    assert!(row("tiramisu", "paper") > 7_000_000 && row("deeplabv3plus", "paper") > 40_000_000);
    // The inverse-imaging FC-DenseNet: its PyTorch twin's count, and the
    // paper's 220 M.
    assert_eq!(row("inverse", "small"), 139_969);
    assert_eq!(row("inverse", "paper"), 220_257_281);
}

/// Rank 0 killed while it writes a checkpoint (arrays written, state not):
/// the latest checkpoint stays the previous one, a rerun resumes from it
/// to the same parameters as a run never killed, and the half-written
/// directory is removed.
#[test]
fn a_job_killed_while_writing_a_checkpoint_resumes_from_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 2, 16);
    let run = |checkpoint: &Path, env: &[(&str, &str)]| {
        let args = ["--data", data.to_str().unwrap(), "--val-fraction", "0", "--epochs", "3", "--batch", "2"];
        let mut args = args.to_vec();
        args.extend(["--checkpoint", checkpoint.to_str().unwrap()]);
        train(2, env, &args)
    };
    let straight = ok(&run(&dir.path().join("straight"), &[]));
    let killed_dir = dir.path().join("killed");
    let killed = run(&killed_dir, &[("STAGEHAND_TRAINER_ABORT_WHILE_WRITING", "epoch-2")]);
    assert!(!killed.status.success(), "the job survived its rank's death");
    assert_eq!(std::fs::read_to_string(killed_dir.join("latest")).unwrap().trim(), "epoch-1");
    let leftovers = || {
        std::fs::read_dir(&killed_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .count()
    };
    assert_eq!(leftovers(), 1, "the killed writer left no half-written checkpoint to test with");
    let resumed = ok(&run(&killed_dir, &[]));
    assert_eq!(resumed["resumed_from_epoch"], 1);
    assert_eq!(resumed["losses"], straight["losses"], "loss curves differ");
    assert_eq!(params(&killed_dir), params(&dir.path().join("straight")));
    assert_eq!(leftovers(), 0, "the half-written checkpoint was not removed");
}

/// Every scalar in the TensorBoard event files of `dir`: (step, tag, value).
fn tensorboard_scalars(dir: &Path) -> Vec<(i64, String, f32)> {
    use formats::tensorboard::{Event, Value, What};
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut scalars = Vec::new();
    for file in files {
        assert!(file.file_name().unwrap().to_str().unwrap().starts_with("events.out.tfevents."), "{file:?}");
        let bytes = std::fs::read(&file).unwrap();
        for record in formats::tfrecord::records(&bytes) {
            let event = Event::decode_record(record.unwrap().data).unwrap();
            if let Some(What::Summary(summary)) = event.what {
                for v in summary.value {
                    let Some(Value::SimpleValue(x)) = v.value else { panic!("{v:?}") };
                    scalars.push((event.step, v.tag, x));
                }
            }
        }
    }
    scalars
}

/// `--tensorboard`: the loss of every step (the report's `losses`, exact)
/// and each epoch's figures at its last step; a resumed run writes a new
/// file whose steps continue the first run's.
#[test]
fn tensorboard_events_hold_every_step_loss_and_each_epochs_figures_and_a_resume_continues_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 3, 13);
    let (board, checkpoint) = (dir.path().join("board"), dir.path().join("cp"));
    let run = |epochs: &str| {
        let args = [
            "--data",
            data.to_str().unwrap(),
            "--epochs",
            epochs,
            "--batch",
            "2",
            "--checkpoint",
            checkpoint.to_str().unwrap(),
            "--tensorboard",
            board.to_str().unwrap(),
        ];
        ok(&train(2, &[], &args))
    };
    run("1");
    let report = run("2");
    let scalars = tensorboard_scalars(&board);
    assert_eq!(std::fs::read_dir(&board).unwrap().count(), 2, "one file per run");
    let losses: Vec<(i64, f32)> =
        scalars.iter().filter(|(_, tag, _)| tag == "train/loss").map(|&(step, _, x)| (step, x)).collect();
    let expected: Vec<(i64, f32)> = report["losses"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(k, x)| (k as i64 + 1, x.as_f64().unwrap() as f32))
        .collect();
    assert_eq!(losses, expected);
    let steps = report["steps_per_epoch"].as_i64().unwrap();
    let at = |tag: &str| -> Vec<(i64, f32)> {
        scalars.iter().filter(|(_, t, _)| t == tag).map(|&(step, _, x)| (step, x)).collect()
    };
    assert_eq!(at("train/epoch"), vec![(steps, 1.0), (2 * steps, 2.0)]);
    let second = &report["epochs"][0];
    assert_eq!(at("train/epoch_loss")[1], (2 * steps, second["train_loss"].as_f64().unwrap() as f32));
    assert_eq!(at("train/learning_rate")[1].1, second["lr"].as_f64().unwrap() as f32);
    let validation = second["validation"].as_object().unwrap();
    // A number is one scalar, an array one per element, and null (a figure
    // that is undefined for this validation set) none.
    let mut figures: Vec<(String, f32)> = Vec::new();
    for (name, value) in validation {
        match value {
            serde_json::Value::Array(items) => figures.extend(
                items.iter().enumerate().map(|(i, x)| (format!("validation/{name}/{i}"), x.as_f64().unwrap() as f32)),
            ),
            serde_json::Value::Null => assert!(at(&format!("validation/{name}")).is_empty(), "{name} is null"),
            number if number.is_f64() => figures.push((format!("validation/{name}"), number.as_f64().unwrap() as f32)),
            _ => {}
        }
    }
    assert!(!figures.is_empty(), "{validation:?}");
    for (tag, value) in figures {
        assert_eq!(at(&tag)[1], (2 * steps, value), "{tag}");
    }
    for tag in ["perf/samples_per_sec", "perf/data_wait_percent", "perf/communication_percent"] {
        assert_eq!(at(tag).len(), 2, "{tag}");
    }
}

/// `trainer plot` of two runs' reports: one PNG holding both runs, each in
/// its own colour (decoded and counted); `--plot` draws the same way.
#[test]
fn trainer_plot_of_two_reports_draws_both_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 3, 13);
    let mut reports = Vec::new();
    for lr in ["0.01", "0.002"] {
        let report = dir.path().join(format!("lr-{lr}.json"));
        let plot = dir.path().join(format!("lr-{lr}.png"));
        let args = ["--data", data.to_str().unwrap(), "--epochs", "2", "--batch", "2", "--lr", lr];
        let extra = ["--report", report.to_str().unwrap(), "--plot", plot.to_str().unwrap()];
        ok(&train(1, &[], &[&args[..], &extra[..]].concat()));
        assert!(plot.is_file(), "--plot draws");
        reports.push(report);
    }
    let out = dir.path().join("both.png");
    let plotted = std::process::Command::new(TRAINER)
        .args(["plot", reports[0].to_str().unwrap(), reports[1].to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(["--validation", "relative_mae"])
        .output()
        .unwrap();
    assert!(plotted.status.success(), "{}", String::from_utf8_lossy(&plotted.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&out).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut rgb = vec![0u8; reader.output_buffer_size()];
    reader.next_frame(&mut rgb).unwrap();
    let count = |c: plotters::style::RGBColor| rgb.chunks_exact(3).filter(|p| *p == [c.0, c.1, c.2]).count();
    for colour in &trainer::plot::PALETTE[..2] {
        assert!(count(*colour) > 300, "{colour:?}: {} pixels", count(*colour));
    }
    assert_eq!(count(trainer::plot::PALETTE[2]), 0, "two runs, two colours");
    // A report that is not one fails in one line naming it.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let failed = std::process::Command::new(TRAINER).args(["plot", bad.to_str().unwrap()]).output().unwrap();
    assert!(!failed.status.success());
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("bad.json") && stderr.contains("not a trainer report"), "{stderr}");
}
