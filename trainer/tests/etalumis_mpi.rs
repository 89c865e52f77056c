//! The Etalumis inference network end to end under a real `mpirun`, on
//! traces the real `simgen traces` writes: training lowers the proposals'
//! −log q below the prior's on held-out traces, 2 and 4 ranks equal 1 rank
//! with the whole batch even when the ranks' trace types differ (only the
//! layers some rank used are reduced; flat, and hierarchical during
//! back-propagation), a resumed run continues bit for
//! bit, and data the network cannot take fails before MPI starts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::{checkpoint_floats as floats, max_difference, trainer_report as ok};
use formats::lmdb::TraceStoreWriter;
use formats::lmdb::trace_codec::{Choice, Distribution, Trace};
use formats::manifest::{MANIFEST_FILE, ScanOptions, Schema, scan};

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

/// `count` traces of the tau-decay simulator in `dir/name`, in `files`
/// stores, written by `simgen traces` on one rank.
fn traces(dir: &Path, name: &str, count: u64, files: u64, seed: u64) -> PathBuf {
    noisy_traces(dir, name, count, files, seed, "0.002")
}

/// [`traces`] with a calorimeter noise of `noise` GeV per voxel.
fn noisy_traces(dir: &Path, name: &str, count: u64, files: u64, seed: u64, noise: &str) -> PathBuf {
    let out = dir.join(name);
    let (count, files, seed) = (count.to_string(), files.to_string(), seed.to_string());
    let args = [
        "traces",
        "--out",
        out.to_str().unwrap(),
        "--traces",
        &count,
        "--files",
        &files,
        "--seed",
        &seed,
        "--noise",
        noise,
    ];
    let result = e2e::mpirun(1, &[], &e2e::workspace_binary("simgen"), &args);
    assert!(result.status.success(), "simgen: {}", String::from_utf8_lossy(&result.stderr));
    out
}

fn train(ranks: usize, data: &Path, extra: &[&str]) -> Output {
    train_in(ranks, &[], data, extra)
}

fn train_in(ranks: usize, env: &[(&str, &str)], data: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["train", "--model", "etalumis", "--config", "small", "--data", data.to_str().unwrap()];
    args.extend_from_slice(&["--workers", "1"]);
    args.extend_from_slice(extra);
    e2e::mpirun(ranks, env, Path::new(TRAINER), &args)
}

/// The calorimeter noise (GeV per voxel) of the traces the network learns
/// from and infers with: at `simgen traces`' default of 2 MeV the
/// likelihood of 24,500 voxels gives one run of any hundred all the weight,
/// whatever proposes them; at 50 MeV (a realistic cell noise) weights
/// spread and effective sample sizes can be compared.
const NOISE: &str = "0.05";

/// A proposal that has learned nothing is about as wide as the prior; one
/// that reads the calorimeter narrows where the choices were (the decay
/// channel, the momentum, the products' directions), so on traces it never
/// saw its mean −log q falls below the prior's −log p. Each step also
/// leaves the heads of addresses no rank's batch visited out of the
/// gradient exchange. Then importance sampling with the trained network.
#[test]
fn training_lowers_the_proposals_loss_below_the_priors_on_held_out_traces() {
    let dir = tempfile::tempdir().unwrap();
    let data = noisy_traces(dir.path(), "train", 2000, 2, 1, NOISE);
    let val = noisy_traces(dir.path(), "val", 60, 1, 2, NOISE);
    let checkpoint = dir.path().join("checkpoint");
    let args = [
        ["--val", val.to_str().unwrap(), "--epochs", "4", "--batch", "16", "--optimizer", "adam", "--lr", "0.004"]
            .as_slice(),
        &["--checkpoint", checkpoint.to_str().unwrap()],
    ]
    .concat();
    let report = ok(&train(2, &data, &args));
    let epochs = report["epochs"].as_array().unwrap();
    let (first, last) = (&epochs[0]["validation"], &epochs[epochs.len() - 1]["validation"]);
    eprintln!("first epoch {first}, last {last}");
    let (loss, prior) = (last["loss"].as_f64().unwrap(), last["prior_loss"].as_f64().unwrap());
    assert!(loss < prior, "−log q {loss} is not below the prior's {prior}");
    assert!(loss < first["loss"].as_f64().unwrap(), "{first} -> {last}");
    assert!(last["samples"].as_u64().unwrap() >= 55, "{last}");
    let share = report["reduced_gradient_share"].as_f64().unwrap();
    assert!(share < 0.9, "{share} of the gradient values were reduced");
    importance_sampling_steps_the_network_as_training_scored_it(&checkpoint, &val, last);
}

/// `trainer infer` on the held-out traces: its network, stepped one
/// choice at a time, scores the choices that made each observation as
/// training's validation did in one pass per trace type; every effective
/// sample size lies in [1, samples]; the table and the JSON report agree;
/// and the network's proposals give a larger mean effective sample size
/// than the prior's.
fn importance_sampling_steps_the_network_as_training_scored_it(
    checkpoint: &Path,
    val: &Path,
    validation: &serde_json::Value,
) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("infer.json");
    let args = [
        "infer",
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--observations",
        val.to_str().unwrap(),
        "--count",
        "60",
        "--samples",
        "100",
        "--noise",
        NOISE,
        "--report",
        report.to_str().unwrap(),
    ];
    let output = e2e::output(Command::new(TRAINER).args(args)).unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    eprintln!("{stdout}");
    let results: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(results.len(), 60);
    assert!(stdout.contains("60 observations, 100 samples each"), "{stdout}");
    // Traces visiting an address no training trace did are not scored,
    // in training's validation as here.
    let scored: Vec<&serde_json::Value> = results.iter().filter(|r| !r["true_choices"].is_null()).collect();
    assert_eq!(scored.len() as u64, validation["samples"].as_u64().unwrap());
    let mean =
        |i: usize| scored.iter().map(|r| r["true_choices"][i].as_f64().unwrap()).sum::<f64>() / scored.len() as f64;
    let (loss, prior) = (validation["loss"].as_f64().unwrap(), validation["prior_loss"].as_f64().unwrap());
    assert!((mean(0) - loss).abs() < 1e-3 * loss.abs(), "stepped −log q {} against training's {loss}", mean(0));
    assert!((mean(1) - prior).abs() < 1e-6 * prior.abs(), "−log p {} against training's {prior}", mean(1));
    for r in &results {
        for proposal in ["network", "prior"] {
            let ess = r[proposal]["ess"].as_f64().unwrap();
            assert!((1.0 - 1e-9..=100.0 + 1e-9).contains(&ess), "{proposal} ESS {ess}");
        }
    }
    let ess = |proposal: &str| results.iter().map(|r| r[proposal]["ess"].as_f64().unwrap()).sum::<f64>() / 60.0;
    assert!(
        ess("network") > ess("prior"),
        "mean ESS {} with the network, {} with the prior",
        ess("network"),
        ess("prior")
    );

    // Both engines: the chains' posterior beside the importance-sampled
    // ones, and the distance of each from it.
    let both = dir.path().join("both.json");
    let args = ["infer", "--engine", "both", "--checkpoint", checkpoint.to_str().unwrap()]
        .into_iter()
        .chain(["--observations", val.to_str().unwrap(), "--count", "3", "--samples", "20", "--noise", NOISE])
        .chain(["--steps", "300", "--burn-in", "100", "--report", both.to_str().unwrap()]);
    let output = e2e::output(Command::new(TRAINER).args(args)).unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Metropolis-Hastings, 4 chains of 200 kept states") && stdout.contains("total variation"));
    let results: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&both).unwrap()).unwrap();
    for r in &results {
        for engine in ["network", "prior"] {
            let tv = r["distance"][engine]["channel"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&tv), "{r}");
        }
        assert!(r["rmh"]["posterior"]["ess"].as_f64().unwrap() > 0.0, "{r}");
    }

    // Importance sampling spread over 4 ranks, an observation each: the
    // results of one rank.
    let spread = |ranks: usize| -> Vec<serde_json::Value> {
        let report = dir.path().join(format!("is-{ranks}.json"));
        let args = ["infer", "--checkpoint", checkpoint.to_str().unwrap(), "--observations", val.to_str().unwrap()]
            .into_iter()
            .chain(["--count", "4", "--samples", "10", "--noise", NOISE, "--report", report.to_str().unwrap()])
            .collect::<Vec<_>>();
        let output = e2e::mpirun(ranks, &[], Path::new(TRAINER), &args);
        assert!(output.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&output.stderr));
        let mut results: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        for r in &mut results {
            r["rank"] = serde_json::Value::Null;
            r["network"]["seconds"] = serde_json::Value::Null;
            r["prior"]["seconds"] = serde_json::Value::Null;
        }
        results
    };
    let one = spread(1);
    let four = spread(4);
    assert_eq!(four, one);
}

/// `trainer infer --engine rmh` needs no network: chains of lightweight
/// Metropolis-Hastings over the tau simulator's traces, with what the
/// report promises (kept states, acceptance, R-hat and ESS per latent);
/// importance sampling without a checkpoint is one clear line.
#[test]
fn metropolis_hastings_chains_infer_without_a_network() {
    let dir = tempfile::tempdir().unwrap();
    let val = noisy_traces(dir.path(), "val", 10, 1, 2, NOISE);
    let report = dir.path().join("rmh.json");
    let args = ["infer", "--engine", "rmh", "--observations", val.to_str().unwrap(), "--count", "2"]
        .into_iter()
        .chain(["--chains", "3", "--steps", "400", "--burn-in", "100", "--thin", "2", "--noise", NOISE])
        .chain(["--report", report.to_str().unwrap()]);
    let output = e2e::output(Command::new(TRAINER).args(args)).unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r.get("network").is_none() && r.get("distance").is_none(), "{r}");
        let rmh = &r["rmh"];
        assert_eq!((rmh["chains"].as_u64(), rmh["draws_per_chain"].as_u64()), (Some(3), Some(150)), "{rmh}");
        let acceptance = rmh["acceptance"].as_f64().unwrap();
        assert!(acceptance > 0.0 && acceptance < 1.0, "{rmh}");
        assert_eq!(rmh["rhat"].as_array().map(Vec::len), Some(4));
        // The momentum moves in every chain, so its diagnostics exist.
        assert!(rmh["rhat"][3].as_f64().unwrap() >= 0.9 && rmh["ess"][3].as_f64().unwrap() > 0.0, "{rmh}");
        let channels: f64 = rmh["posterior"]["channels"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap()).sum();
        assert!((channels - 1.0).abs() < 1e-9);
    }

    let output = Command::new(TRAINER).args(["infer", "--observations", val.to_str().unwrap()]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("needs --checkpoint") && stderr.trim_end().lines().count() == 1, "{stderr}");

    // Spread over 3 ranks (1, 2 and 2 of the 5 observations), the same
    // posteriors as on one: an observation's seeds are its own.
    let spread = |ranks: usize| -> (Vec<serde_json::Value>, String) {
        let report = dir.path().join(format!("rmh-{ranks}.json"));
        let args = ["infer", "--engine", "rmh", "--observations", val.to_str().unwrap(), "--count", "5"]
            .into_iter()
            .chain(["--chains", "2", "--steps", "200", "--burn-in", "50", "--noise", NOISE])
            .chain(["--report", report.to_str().unwrap()])
            .collect::<Vec<_>>();
        let output = e2e::mpirun(ranks, &[], Path::new(TRAINER), &args);
        assert!(output.status.success(), "{ranks} ranks: {}", String::from_utf8_lossy(&output.stderr));
        let mut results: Vec<serde_json::Value> = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        for r in &mut results {
            r["rmh"]["seconds"] = serde_json::Value::Null;
            r["rmh"]["posterior"]["seconds"] = serde_json::Value::Null;
        }
        (results, String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let (one, _) = spread(1);
    let (three, stdout) = spread(3);
    assert!(stdout.contains("observations per rank: 1, 2, 2"), "{stdout}");
    assert_eq!(three.iter().map(|r| r["rank"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1, 1, 2, 2]);
    for (a, b) in one.iter().zip(&three) {
        let (mut a, mut b) = (a.clone(), b.clone());
        a["rank"] = serde_json::Value::Null;
        b["rank"] = serde_json::Value::Null;
        assert_eq!(a, b);
    }
}

/// With shuffled traces (`--buckets 0`) the ranks' batches hold different
/// trace types, so each rank has gradients for heads another lacks: the
/// ranks agree on the union with a bitvector and reduce only it. The mean
/// over 8 traces is the average of the ranks' means, so the parameters
/// after the epoch agree with one rank's with the whole batch up to
/// rounding: on 2 ranks with the flat exchange, and on 4 ranks as 2
/// pretend nodes with the hierarchical exchange during back-propagation
/// (which reduces every group whole, agreeing on the union only for the
/// optimiser).
#[test]
fn more_ranks_match_one_rank_with_the_whole_batch_even_when_their_trace_types_differ() {
    let dir = tempfile::tempdir().unwrap();
    let data = traces(dir.path(), "train", 48, 1, 5);
    let mut results = Vec::new();
    let runs: [(usize, &str, &[&str]); 3] = [
        (1, "8", &[]),
        (2, "4", &["--exchange", "flat"]),
        (4, "2", &["--exchange", "hierarchical", "--reduce-during-backward", "--fusion-mb", "0.01"]),
    ];
    for (ranks, batch, extra) in runs {
        let checkpoint = dir.path().join(format!("checkpoint-{ranks}"));
        let mut args = vec!["--buckets", "0", "--epochs", "1", "--batch", batch, "--lr", "0.01"];
        args.extend_from_slice(&["--checkpoint", checkpoint.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let report = ok(&train_in(ranks, &[("STAGEHAND_RANKS_PER_NODE", "2")], &data, &args));
        results.push((floats(&checkpoint, "params.f32"), report));
    }
    for (ranks, (params, report)) in [2, 4].iter().zip(&results[1..]) {
        let difference = max_difference(params, &results[0].0);
        eprintln!(
            "{ranks} ranks: largest difference {difference:e}; reduced share {}",
            report["reduced_gradient_share"]
        );
        assert!(difference < 1e-5, "{ranks} ranks: {difference}");
    }
    assert!(results[1].1["reduced_gradient_share"].as_f64().unwrap() < 1.0, "the 2-rank run reduced every gradient");
    // The observations' CNN is cut from the LSTM: its groups leave while
    // the backward pass is still in the CNN.
    let groups = &results[2].1["gradient_groups"];
    let during = groups["during_backward"].as_u64().unwrap();
    assert!(during > 0 && during < groups["groups"].as_u64().unwrap(), "{groups}");
}

/// Online training (`--online`): with no trace store, the ranks simulate
/// new traces every epoch as the loaders read them, and the network's
/// −log q on held-out stored traces falls well below the untrained
/// network's (the same initial parameters, `--lr 0`). A pilot too small to
/// meet every address leaves layers out: the traces that visit them are
/// dropped and counted, and training goes on.
#[test]
fn online_training_on_simulated_traces_lowers_the_held_out_loss_and_counts_what_it_drops() {
    let dir = tempfile::tempdir().unwrap();
    let val = noisy_traces(dir.path(), "val", 60, 1, 2, NOISE);
    let online = |traces: &str, extra: &[&str]| {
        let mut args = vec!["train", "--model", "etalumis", "--config", "small", "--online", traces];
        args.extend_from_slice(&["--online-noise", NOISE, "--val", val.to_str().unwrap(), "--workers", "1"]);
        args.extend_from_slice(&["--batch", "16", "--seed", "3"]);
        args.extend_from_slice(extra);
        ok(&e2e::mpirun(2, &[], Path::new(TRAINER), &args))
    };
    let val_loss =
        |report: &serde_json::Value, epoch: usize| report["epochs"][epoch]["validation"]["loss"].as_f64().unwrap();
    let untrained = val_loss(&online("32", &["--lr", "0", "--epochs", "1"]), 0);
    let trained = online("640", &["--optimizer", "adam", "--lr", "0.004", "--epochs", "2"]);
    eprintln!("held-out −log q: untrained {untrained}, trained {}", trained["epochs"]);
    assert_eq!(trained["steps_per_epoch"].as_u64(), Some(20), "640 traces in global batches of 32");
    assert!(val_loss(&trained, 1) < untrained - 0.5, "{untrained} -> {}", val_loss(&trained, 1));
    let starved = online("64", &["--online-pilot", "1", "--lr", "0.004", "--epochs", "1"]);
    let validation = &starved["epochs"][0]["validation"];
    let dropped = validation["dropped"].as_u64().unwrap();
    assert!(dropped > 0 && dropped <= 64, "{validation}");
    assert!(validation["skipped"].as_u64().unwrap() > 0, "{validation}");
}

/// Two epochs straight, and one then a resumed second, end with the same
/// bits, parameters and optimiser moments both.
#[test]
fn a_resumed_run_continues_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let data = traces(dir.path(), "train", 40, 1, 6);
    let run = |name: &str, epochs: &str| {
        let checkpoint = dir.path().join(name);
        ok(&train(2, &data, &["--epochs", epochs, "--batch", "4", "--checkpoint", checkpoint.to_str().unwrap()]));
        checkpoint
    };
    let straight = run("straight", "2");
    run("resumed", "1");
    let resumed = run("resumed", "2");
    for file in ["params.f32", "first.f32"] {
        assert_eq!(floats(&straight, file), floats(&resumed, file), "{file}");
    }
}

/// A trace store written by hand: four traces of one controlled choice at
/// `address` with observations of `shape`, and its manifest.
fn store(dir: &Path, name: &str, shape: &[u32], address: &str) -> PathBuf {
    let out = dir.join(name);
    let mut writer = TraceStoreWriter::create(&out.join("traces-00000.lmdb")).unwrap();
    let id = writer.address_id(address);
    let voxels: u32 = shape.iter().product();
    for i in 0..4 {
        let observation = (0..voxels).map(|v| ((v + i) % 7) as f32).collect();
        let choices = vec![Choice {
            address: id,
            controlled: true,
            distribution: Distribution::Normal { mean: 0.0, std: 1.0 },
            value: 0.5,
        }];
        writer.add(&Trace { shape: shape.to_vec(), observation, choices }).unwrap();
    }
    writer.finish().unwrap();
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    scan(&out, &ScanOptions::new(Schema::traces(&shape))).unwrap().save(&out.join(MANIFEST_FILE)).unwrap();
    out
}

/// Exit code and stderr of a run that must be refused before MPI starts.
fn refused(data: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["train", "--model", "etalumis", "--config", "small", "--data", data.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = e2e::output(Command::new(TRAINER).args(&args)).unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn data_the_network_cannot_take_fails_before_mpi_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let one_line = |(code, stderr): (Option<i32>, String), needle: &str| {
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains(needle) && stderr.trim().lines().count() == 1, "{stderr}");
    };
    // A checkpoint of a network laid out for other traces.
    let small = traces(dir.path(), "small", 16, 1, 1);
    let other = traces(dir.path(), "other", 200, 1, 9);
    let checkpoint = dir.path().join("checkpoint");
    let cp = checkpoint.to_str().unwrap();
    ok(&train(1, &small, &["--epochs", "1", "--batch", "8", "--checkpoint", cp]));
    one_line(refused(&other, &["--checkpoint", cp]), "laid out for other data: layout.addresses");
    // A prior the network has no proposal for.
    let gamma = store(dir.path(), "gamma", &[20, 35, 35], "muon__lifetime__Gamma__1");
    one_line(refused(&gamma, &[]), "has a Gamma prior");
    // A volume too small for the CNN, and validation data of another shape.
    let flat = store(dir.path(), "flat", &[2, 35, 35], "tau__px__Normal__1");
    one_line(refused(&flat, &[]), "too small for the 3-D CNN");
    // Online training reads no --data.
    one_line(refused(&small, &["--online", "64"]), "--online simulates the training traces");
    // No traces to train on is refused by the parser, before MPI starts.
    one_line(refused(&small, &["--online", "0"]), "invalid value '0' for '--online <TRACES>'");
    let thin = store(dir.path(), "thin", &[20, 35, 34], "tau__px__Normal__1");
    one_line(refused(&small, &["--val", thin.to_str().unwrap()]), "the training data's are [20, 35, 35]");
    // Inference: observations of another shape, traces of another
    // simulator, and a directory without a checkpoint.
    let infer = |observations: &Path, checkpoint: &str| {
        let args = ["infer", "--checkpoint", checkpoint, "--observations", observations.to_str().unwrap()];
        let output = e2e::output(Command::new(TRAINER).args(args)).unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    one_line(infer(&thin, cp), "the network was trained on [20, 35, 35]");
    let px = store(dir.path(), "px", &[20, 35, 35], "tau__px__Normal__1");
    one_line(infer(&px, cp), "not traces of simgen's tau simulator");
    one_line(infer(&small, dir.path().to_str().unwrap()), "holds no checkpoint");
}
