//! Whether a checkpoint can be resumed by this run. A checkpoint saved
//! mid-epoch holds a position in that epoch's sample order; the order is a
//! function of the seed, the batch, the number of ranks and the data, so a
//! run that differs in any of them would apply the position to another
//! order (skip samples it never trained on, or train on some twice) and
//! still exit 0. The optimiser's saved moments mean something only to the
//! optimiser that wrote them, at any point. Both are refused, naming what
//! differs; at an epoch's end the order starts afresh, so the seed, batch
//! and ranks may change there. Mid-epoch, the number of ranks may change
//! when the data is one shuffled sequence dealt to the ranks
//! (`loader::elastic`): the rest of the epoch is dealt to this run's ranks.

use crate::checkpoint::{RunShape, TrainState};

/// An error naming every difference between the run that saved `saved`
/// and this one (`now`, with `seed`) that its resuming cannot bridge.
/// `steps_at(ranks)` is this run's steps per epoch at another number of
/// ranks, `None` if its data cannot move an epoch between rank counts
/// (placed per node, or batched by the sampler).
pub fn check_resumable(
    saved: &TrainState,
    now: &RunShape,
    seed: u64,
    steps_at: &dyn Fn(u64) -> Option<u64>,
) -> Result<(), String> {
    let Some(then) = &saved.run else {
        // Older checkpoints did not record the run; only a mid-epoch one
        // depends on it.
        return if saved.steps_into_epoch == 0 {
            Ok(())
        } else {
            Err(format!(
                "the checkpoint was saved {} steps into epoch {} by an older version that did not record the run's \
                 batch, ranks and optimiser, so resuming there cannot be checked; resume from an epoch's end",
                saved.steps_into_epoch,
                saved.epochs_done + 1
            ))
        };
    };
    let mut differences = Vec::new();
    if then.optimizer != now.optimizer {
        differences.push(format!("--optimizer {} (this run: {})", then.optimizer, now.optimizer));
    }
    if saved.steps_into_epoch > 0 {
        if saved.seed != seed {
            differences.push(format!("--seed {} (this run: {seed})", saved.seed));
        }
        if then.batch != now.batch {
            differences.push(format!("--batch {} (this run: {})", then.batch, now.batch));
        }
        let dealt = then.ranks != now.ranks || saved.epoch_begun.is_some();
        let elastic = steps_at(now.ranks).is_some();
        if dealt && !elastic {
            differences.push(format!(
                "{} ranks (this run: {}; data placed per node or batched by its sampler resumes mid-epoch only on \
                 as many ranks as saved it)",
                then.ranks, now.ranks
            ));
        }
        let steps_then = if dealt { steps_at(then.ranks) } else { Some(now.steps_per_epoch) };
        if differences.is_empty() && steps_then != Some(then.steps_per_epoch) {
            differences.push(format!(
                "{} steps per epoch on {} ranks (this run: {}; the training data changed)",
                then.steps_per_epoch,
                then.ranks,
                steps_then.unwrap_or(now.steps_per_epoch)
            ));
        }
    }
    if differences.is_empty() {
        return Ok(());
    }
    let position = if saved.steps_into_epoch > 0 {
        format!("{} steps into epoch {}", saved.steps_into_epoch, saved.epochs_done + 1)
    } else {
        format!("at the end of epoch {}", saved.epochs_done)
    };
    Err(format!(
        "the checkpoint was saved {position} by a run with {}; resume with the same options, or start from another --checkpoint directory",
        differences.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn shape(batch: u64, ranks: u64, optimizer: &str) -> RunShape {
        RunShape { batch, ranks, steps_per_epoch: 5, optimizer: optimizer.into() }
    }

    fn saved(steps_into_epoch: u64, run: Option<RunShape>) -> TrainState {
        TrainState {
            epoch_begun: None,
            loss_scale: None,
            format: crate::checkpoint::FORMAT,
            model: "small".into(),
            lengths: vec![1],
            state_lengths: vec![],
            epochs_done: 1,
            steps_into_epoch,
            steps: 7,
            seed: 3,
            losses: vec![],
            checksum: 0,
            files: Default::default(),
            layout: serde_json::Value::Null,
            run,
        }
    }

    /// The hostile tester's case: `--batch 2` after a mid-epoch checkpoint
    /// of `--batch 1` ran epoch 2 for 1 step of 5 and exited 0.
    /// Data that cannot move between rank counts.
    fn placed(_ranks: u64) -> Option<u64> {
        None
    }

    /// A shuffled directory of 10 samples, batch 1.
    fn shuffled(ranks: u64) -> Option<u64> {
        Some(10 / ranks)
    }

    #[test]
    fn a_mid_epoch_checkpoint_refuses_another_seed_batch_ranks_or_optimiser() {
        let mid = saved(2, Some(shape(1, 2, "sgd")));
        check_resumable(&mid, &shape(1, 2, "sgd"), 3, &placed).unwrap();
        let e = check_resumable(&mid, &shape(2, 2, "sgd"), 3, &placed).unwrap_err();
        assert!(e.contains("2 steps into epoch 2") && e.contains("--batch 1 (this run: 2)"), "{e}");
        let e = check_resumable(&mid, &shape(1, 4, "adam"), 9, &placed).unwrap_err();
        for part in ["--optimizer sgd (this run: adam)", "--seed 3 (this run: 9)", "2 ranks (this run: 4; data placed"]
        {
            assert!(e.contains(part), "{part}: {e}");
        }
        let other_data = RunShape { steps_per_epoch: 4, ..shape(1, 2, "sgd") };
        let e = check_resumable(&mid, &other_data, 3, &placed).unwrap_err();
        assert!(e.contains("5 steps per epoch on 2 ranks (this run: 4"), "{e}");
    }

    #[test]
    fn a_mid_epoch_checkpoint_of_shuffled_data_moves_to_another_rank_count_unless_the_data_changed() {
        let mid = saved(2, Some(shape(1, 2, "sgd")));
        check_resumable(&mid, &shape(1, 5, "sgd"), 3, &shuffled).unwrap();
        check_resumable(&mid, &shape(1, 1, "sgd"), 3, &shuffled).unwrap();
        // The seed still decides the sequence.
        let e = check_resumable(&mid, &shape(1, 5, "sgd"), 4, &shuffled).unwrap_err();
        assert!(e.contains("--seed 3 (this run: 4)"), "{e}");
        // 12 samples now: 6 steps on the 2 ranks that saved 5.
        let e = check_resumable(&mid, &shape(1, 5, "sgd"), 3, &|ranks| Some(12 / ranks)).unwrap_err();
        assert!(e.contains("5 steps per epoch on 2 ranks (this run: 6; the training data changed"), "{e}");
        // An epoch already dealt once needs a sampler that can deal it, also at the same rank count.
        let dealt = TrainState { epoch_begun: Some(formats::checkpoint::EpochBegun { ranks: 4, taken: 8 }), ..mid };
        check_resumable(&dealt, &shape(1, 2, "sgd"), 3, &shuffled).unwrap();
        assert!(check_resumable(&dealt, &shape(1, 2, "sgd"), 3, &placed).is_err());
    }

    #[test]
    fn at_an_epoch_end_only_the_optimiser_must_match() {
        let end = saved(0, Some(shape(1, 2, "sgd")));
        check_resumable(&end, &shape(4, 8, "sgd"), 99, &placed).unwrap();
        let e = check_resumable(&end, &shape(1, 2, "adam"), 3, &placed).unwrap_err();
        assert!(e.contains("at the end of epoch 1") && e.contains("--optimizer sgd"), "{e}");
    }

    #[test]
    fn an_older_checkpoint_resumes_at_an_epoch_end_only() {
        check_resumable(&saved(0, None), &shape(1, 1, "sgd"), 0, &placed).unwrap();
        let e = check_resumable(&saved(3, None), &shape(1, 1, "sgd"), 3, &placed).unwrap_err();
        assert!(e.contains("older version"), "{e}");
    }
}
