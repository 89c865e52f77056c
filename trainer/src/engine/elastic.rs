//! A mid-epoch checkpoint resumed on another number of ranks. The data's
//! epoch is one shuffled sequence dealt round-robin to the ranks
//! (`loader::elastic`), so where the saving run stood is a number of
//! positions taken; the rest is dealt to this run's ranks, every rank the
//! same number of steps, each remaining sample once. The last step's
//! batches can be short or empty, so a dealt step weighs each rank's
//! gradient by its share of the step's samples ([`share_of_step`]): the
//! update is that of the mean loss over every sample of the step, as in an
//! ordinary step. A checkpoint saved within a dealt epoch records where
//! the epoch began (`EpochBegun`) and the steps of the deal, so it resumes
//! bit for bit on as many ranks and is dealt again on any other number.

use formats::checkpoint::{EpochBegun, TrainState};
use loader::elastic::{EpochStart, delivered_sequence, resumed_batches};
use loader::pipeline::LoaderConfig;
use loader::sampler::{DistributedSampler, Sampler};

use super::TrainError;
use cluster::World;

/// The rest of a checkpoint's epoch, dealt to this run's ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deal {
    /// Where the epoch began and what was taken before this deal.
    pub start: EpochStart,
    /// This rank's batches of the deal (every rank has as many).
    pub batches: Vec<Vec<usize>>,
    /// Batches of the deal already trained: a checkpoint saved within this
    /// deal, resumed on as many ranks.
    pub skip: usize,
}

/// This run's steps per epoch on `ranks` ranks, if its data can move an
/// epoch between rank counts (see `resume::check_resumable`).
pub fn steps_at(sampler: &dyn Sampler, config: &LoaderConfig, ranks: u64) -> Option<u64> {
    let distributed = sampler.as_distributed()?;
    let at = DistributedSampler { world: usize::try_from(ranks).ok()?.max(1), rank: 0, ..*distributed };
    Some(config.steps(&at) as u64)
}

/// How a checkpoint saved mid-epoch continues on `ranks` ranks: `None`
/// when it resumes by skipping batches of this run's own order (saved on
/// as many ranks, in an epoch never dealt), else this rank's deal of the
/// rest. [`resume::check_resumable`](super::resume::check_resumable) has
/// accepted `saved` for this run.
pub fn deal(
    saved: &TrainState,
    sampler: &dyn Sampler,
    config: &LoaderConfig,
    ranks: u64,
) -> Result<Option<Deal>, TrainError> {
    let Some(then) = &saved.run else { return Ok(None) };
    if saved.steps_into_epoch == 0 || (then.ranks == ranks && saved.epoch_begun.is_none()) {
        return Ok(None);
    }
    let distributed = sampler.as_distributed().ok_or_else(|| {
        TrainError::Invalid(
            "the checkpoint's epoch must be dealt to this run's ranks, but its data is placed per node".into(),
        )
    })?;
    let begun = match saved.epoch_begun {
        Some(EpochBegun { ranks, taken }) => EpochStart { world: to_usize(ranks)?, taken: to_usize(taken)? },
        None => EpochStart::fresh(to_usize(then.ranks)?),
    };
    let epoch = saved.epochs_done;
    let steps = to_usize(saved.steps_into_epoch)?;
    let (start, skip) = if then.ranks == ranks {
        (begun, steps)
    } else {
        let total = delivered_sequence(distributed, config, epoch, begun.world).len();
        (begun.after_steps(total, to_usize(then.ranks)?, config.batch, steps), 0)
    };
    let batches = resumed_batches(distributed, config, epoch, start)
        .map_err(|e| TrainError::context("dealing the checkpoint's epoch to this run's ranks", e))?;
    if skip >= batches.len() {
        return Err(TrainError::Invalid(format!(
            "the checkpoint was saved {skip} steps into the rest of epoch {}, which has only {} steps on {ranks} ranks",
            epoch + 1,
            batches.len()
        )));
    }
    Ok(Some(Deal { start, batches, skip }))
}

/// What a checkpoint saved within a deal records of where its epoch began.
pub fn begun(start: EpochStart) -> EpochBegun {
    EpochBegun { ranks: start.world as u64, taken: start.taken as u64 }
}

/// This rank's share of a dealt step's samples, `samples` of them here:
/// the weight of its gradient (and loss) in the sum over the ranks.
/// Collective.
pub fn share_of_step(world: &World, samples: usize) -> f32 {
    let all = super::collective::sum_over_ranks(world, samples as u64);
    // Every dealt step holds a sample on some rank (the deal has no empty step).
    if all == 0 { 0.0 } else { (samples as f64 / all as f64) as f32 }
}

fn to_usize(n: u64) -> Result<usize, TrainError> {
    usize::try_from(n).map_err(|_| TrainError::Invalid(format!("the checkpoint's epoch position {n} is too large")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use formats::checkpoint::RunShape;
    use loader::sampler::Remainder;

    fn sampler(len: usize, world: usize, rank: usize) -> DistributedSampler {
        DistributedSampler { len, world, rank, seed: 5, shuffle: true, remainder: Remainder::Drop }
    }

    fn config(batch: usize) -> LoaderConfig {
        LoaderConfig { batch, workers: 1, prefetch: 1, skip_corrupt: false, check_finite: false, drop_last: true }
    }

    fn saved(ranks: u64, steps_into_epoch: u64, epoch_begun: Option<EpochBegun>) -> TrainState {
        TrainState {
            format: formats::checkpoint::FORMAT,
            model: "small".into(),
            lengths: vec![1],
            state_lengths: vec![],
            epochs_done: 2,
            steps_into_epoch,
            steps: 0,
            seed: 5,
            losses: vec![],
            checksum: 0,
            files: Default::default(),
            layout: serde_json::Value::Null,
            run: Some(RunShape { batch: 1, ranks, steps_per_epoch: 16 / ranks, optimizer: "sgd".into() }),
            epoch_begun,
            loss_scale: None,
        }
    }

    /// 16 samples, batch 1: 2 ranks take 3 steps (6 positions), then 3
    /// ranks take 2 steps of the deal (6 more), then 2 ranks finish it. At
    /// the end every sample was trained exactly once.
    #[test]
    fn an_epoch_moved_2_to_3_to_2_ranks_trains_every_sample_once() {
        let mut trained = vec![0u32; 16];
        let order = |world: usize, rank: usize| sampler(16, world, rank).indices(2);
        for rank in 0..2 {
            order(2, rank)[..3].iter().for_each(|&id| trained[id] += 1);
        }
        let mut begun = None;
        for rank in 0..3 {
            let deal = deal(&saved(2, 3, None), &sampler(16, 3, rank), &config(1), 3).unwrap().unwrap();
            assert_eq!((deal.start, deal.skip, deal.batches.len()), (EpochStart { world: 2, taken: 6 }, 0, 4));
            deal.batches[..2].concat().iter().for_each(|&id| trained[id] += 1);
            begun = Some(super::begun(deal.start));
        }
        for rank in 0..2 {
            let deal = deal(&saved(3, 2, begun), &sampler(16, 2, rank), &config(1), 2).unwrap().unwrap();
            assert_eq!(deal.start, EpochStart { world: 2, taken: 12 });
            deal.batches.concat().iter().for_each(|&id| trained[id] += 1);
        }
        assert_eq!(trained, vec![1; 16]);
    }

    #[test]
    fn a_deal_saved_and_resumed_on_as_many_ranks_skips_its_steps_and_keeps_its_batches() {
        let begun = Some(EpochBegun { ranks: 2, taken: 6 });
        for rank in 0..3 {
            let first = deal(&saved(2, 3, None), &sampler(16, 3, rank), &config(1), 3).unwrap().unwrap();
            let again = deal(&saved(3, 2, begun), &sampler(16, 3, rank), &config(1), 3).unwrap().unwrap();
            assert_eq!(again, Deal { skip: 2, ..first });
        }
    }

    #[test]
    fn an_undealt_checkpoint_on_as_many_ranks_or_at_an_epoch_end_is_no_deal() {
        assert_eq!(deal(&saved(2, 3, None), &sampler(16, 2, 0), &config(1), 2).unwrap(), None);
        assert_eq!(deal(&saved(2, 0, None), &sampler(16, 3, 0), &config(1), 3).unwrap(), None);
        assert_eq!(steps_at(&sampler(16, 3, 0), &config(2), 4), Some(2));
    }
}
