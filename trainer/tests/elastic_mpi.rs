//! A checkpoint saved mid-epoch resumed on another number of ranks, under
//! a real `mpirun`: the rest of the epoch is dealt to the new ranks, each
//! remaining sample once, with gradients weighted by each rank's share of
//! a step's samples; a checkpoint within such a deal resumes bit for bit on
//! as many ranks and is dealt again on any other number.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use e2e::{max_difference, trainer_report as ok};

const TRAINER: &str = env!("CARGO_BIN_EXE_trainer");

fn train(ranks: usize, data: &Path, checkpoint: &Path, batch: &str, extra: &[&str]) -> Output {
    let mut args = vec!["train", "--config", "mlperf-small", "--data", data.to_str().unwrap()];
    args.extend_from_slice(&["--val-fraction", "0", "--epochs", "1", "--batch", batch, "--dropout", "0"]);
    args.extend_from_slice(&["--lr", "0.01", "--workers", "1", "--checkpoint", checkpoint.to_str().unwrap()]);
    args.extend_from_slice(extra);
    e2e::mpirun(ranks, &[], Path::new(TRAINER), &args)
}

fn params(checkpoint: &Path) -> Vec<f32> {
    e2e::checkpoint_floats(checkpoint, "params.f32")
}

/// A copy of a checkpoint directory, to resume one saved state twice.
fn copy(from: &Path, to: &Path) -> PathBuf {
    let status = Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap();
    assert!(status.success(), "cp -a {} {}", from.display(), to.display());
    to.to_owned()
}

fn latest(checkpoint: &Path) -> String {
    std::fs::read_to_string(checkpoint.join("latest")).unwrap().trim().to_owned()
}

/// 16 samples, 2 ranks x batch 4: 2 steps per epoch. Stopped after step 1,
/// the 8 samples left are one step on any number of ranks: 3 ranks hold
/// 3, 3 and 2 of them, 5 ranks 2, 2, 2, 1 and 1. With each rank's gradient
/// weighted by its share, that step is the uninterrupted 2-rank step (the
/// mean loss over the same 8 samples); an unweighted mean would not be.
#[test]
fn an_epoch_resumed_on_3_or_5_ranks_takes_the_same_step_as_on_2() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 2, 21);
    let straight = dir.path().join("straight");
    let report = ok(&train(2, &data, &straight, "4", &[]));
    assert_eq!(report["epochs"][0]["steps"], 2);
    let stopped = dir.path().join("stopped");
    ok(&train(2, &data, &stopped, "4", &["--checkpoint-every", "1", "--max-steps", "1"]));
    assert_eq!(latest(&stopped), "epoch-0-step-1");
    let start = max_difference(&params(&stopped), &params(&straight));
    assert!(start > 1e-3, "the second step should move the parameters ({start})");
    for ranks in [3usize, 5] {
        let resumed = copy(&stopped, &dir.path().join(format!("on-{ranks}")));
        let report = ok(&train(ranks, &data, &resumed, "4", &[]));
        let epoch = &report["epochs"][0];
        assert_eq!((epoch["steps"].as_u64(), epoch["samples"].as_u64()), (Some(1), Some(8)), "{epoch}");
        let diff = max_difference(&params(&resumed), &params(&straight));
        assert!(diff < 1e-5, "resumed on {ranks} ranks, the step differs from the 2-rank one by {diff}");
    }
}

/// 16 samples, 2 ranks x batch 1: 8 steps per epoch, stopped after 3 (10
/// samples left). On 3 ranks the rest is 4 steps (the last one leaves two
/// ranks without a sample). Stopped again after 2 of them and resumed on
/// 3 ranks, it ends bit for bit as the uninterrupted 3-rank deal; resumed
/// on 2 ranks instead, it trains exactly the 4 samples still left.
#[test]
fn a_checkpoint_within_a_dealt_epoch_resumes_bit_for_bit_on_as_many_ranks_and_deals_again_on_others() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 2, 22);
    let every = ["--checkpoint-every", "1"];
    let stopped = dir.path().join("stopped");
    ok(&train(2, &data, &stopped, "1", &[&every[..], &["--max-steps", "3"]].concat()));
    assert_eq!(latest(&stopped), "epoch-0-step-3");

    let dealt = copy(&stopped, &dir.path().join("dealt"));
    let whole = ok(&train(3, &data, &dealt, "1", &every));
    let epoch = &whole["epochs"][0];
    assert_eq!((epoch["steps"].as_u64(), epoch["samples"].as_u64()), (Some(4), Some(10)), "{epoch}");

    let twice = copy(&stopped, &dir.path().join("twice"));
    ok(&train(3, &data, &twice, "1", &[&every[..], &["--max-steps", "2"]].concat()));
    assert_eq!(latest(&twice), "epoch-0-step-2");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(twice.join("epoch-0-step-2/state.json")).unwrap()).unwrap();
    assert_eq!(state["epoch_begun"], serde_json::json!({ "ranks": 2, "taken": 6 }));
    let on_two = copy(&twice, &dir.path().join("on-two"));

    let rest = ok(&train(3, &data, &twice, "1", &every));
    assert_eq!(rest["epochs"][0]["steps"], 2);
    assert_eq!(params(&twice), params(&dealt), "the deal resumed on as many ranks differs");
    assert_eq!(rest["epochs"][0]["checksum"], epoch["checksum"]);

    let moved = ok(&train(2, &data, &on_two, "1", &every));
    let epoch = &moved["epochs"][0];
    assert_eq!((epoch["steps"].as_u64(), epoch["samples"].as_u64()), (Some(2), Some(4)), "{epoch}");
}

/// Data placed per node cannot move an epoch between rank counts: one line
/// saying so, before any step.
#[test]
fn node_local_data_refuses_a_mid_epoch_checkpoint_from_another_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    let data = e2e::simulated_cosmo(dir.path(), 2, 23);
    let dest = dir.path().join("staged");
    let dest_arg = dest.to_str().unwrap();
    // One node: its two training ranks and the one that resumes share it.
    let stage = e2e::mpirun(
        1,
        &[],
        &e2e::workspace_binary("stager"),
        &["stage", "--source", data.to_str().unwrap(), "--dest", dest_arg, "--policy", "replicate"],
    );
    assert!(stage.status.success(), "{}", String::from_utf8_lossy(&stage.stderr));
    let checkpoint = dir.path().join("cp");
    let staged = ["--staged", dest_arg];
    let run = |ranks: usize, extra: &[&str]| {
        let mut args = vec!["train", "--config", "mlperf-small", "--epochs", "1", "--batch", "1", "--workers", "1"];
        args.extend_from_slice(&["--checkpoint", checkpoint.to_str().unwrap(), "--checkpoint-every", "1"]);
        args.extend_from_slice(&staged);
        args.extend_from_slice(extra);
        e2e::mpirun(ranks, &[], Path::new(TRAINER), &args)
    };
    ok(&run(2, &["--max-steps", "1"]));
    let refused = run(1, &[]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("2 ranks (this run: 1; data placed per node"), "{stderr}");
}
