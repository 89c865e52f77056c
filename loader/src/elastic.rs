//! Resuming an epoch at another number of ranks. The distributed
//! sampler's epoch is one sequence of sample ids dealt round-robin
//! ([`DistributedSampler::sequence`](crate::sampler::DistributedSampler::sequence)):
//! after `s` steps of `b` samples on each of `w` ranks, exactly the first
//! `s * b * w` positions are taken, whatever the rank. So where an epoch
//! stands is one number that holds at any world size ([`EpochPosition`]),
//! and the rest of the sequence can be dealt to another number of ranks
//! ([`remaining_batches`]): every remaining position exactly once, every
//! rank the same number of steps; at the world size the epoch began with,
//! exactly the batches the uninterrupted epoch would have given.
//!
//! ```
//! use loader::elastic::{EpochPosition, remaining_batches};
//!
//! // 20 samples, 4 ranks, batches of 2: two steps taken 16 positions.
//! let sequence: Vec<usize> = (100..120).collect();
//! let at = EpochPosition::after(0, 2, 2, 4, sequence.len());
//! assert_eq!(at.taken, 16);
//! // Resumed on 2 ranks: the 4 positions left, 2 each, in one step.
//! assert_eq!(remaining_batches(&sequence, at.taken, 2, 0, 2), vec![vec![116, 118]]);
//! assert_eq!(remaining_batches(&sequence, at.taken, 2, 1, 2), vec![vec![117, 119]]);
//! ```

use serde::{Deserialize, Serialize};

use crate::pipeline::LoaderConfig;
use crate::sampler::DistributedSampler;

/// Where an epoch stands, at any world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochPosition {
    /// The epoch.
    pub epoch: u64,
    /// Positions of the epoch's sequence already taken by all ranks.
    pub taken: usize,
    /// Length of the epoch's sequence (fixed by the world size it began with).
    pub total: usize,
}

impl EpochPosition {
    /// After `steps` steps of `batch` samples on each of `world` ranks of
    /// an epoch whose sequence holds `total` positions.
    pub fn after(epoch: u64, steps: usize, batch: usize, world: usize, total: usize) -> EpochPosition {
        let taken = steps.saturating_mul(batch).saturating_mul(world).min(total);
        EpochPosition { epoch, taken, total }
    }
}

/// An epoch in progress as a resumed run takes it over: the world size
/// it began with (which fixes its sequence) and the positions of that
/// sequence all ranks had taken when the current deal began. A run that
/// saves mid-way through a dealt epoch records this and its steps into the
/// deal; [`EpochStart::after_steps`] turns the two back into one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochStart {
    /// Ranks the epoch began on.
    pub world: usize,
    /// Positions of its sequence taken before the current deal.
    pub taken: usize,
}

impl EpochStart {
    /// An epoch begun on `world` ranks, nothing taken.
    pub fn fresh(world: usize) -> EpochStart {
        EpochStart { world, taken: 0 }
    }

    /// Where the epoch stands after `steps` steps of the deal of its
    /// remaining `total - taken` positions to `world` ranks in batches of
    /// `batch` ([`remaining_batches`]): each step takes the next
    /// `world * batch` positions.
    pub fn after_steps(self, total: usize, world: usize, batch: usize, steps: usize) -> EpochStart {
        let left = total.saturating_sub(self.taken);
        let dealt = steps.saturating_mul(world.max(1)).saturating_mul(batch.max(1)).min(left);
        EpochStart { world: self.world, taken: self.taken + dealt }
    }
}

/// Steps of the deal of `left` positions to `world` ranks in batches of
/// `batch` ([`remaining_batches`] gives every rank this many).
pub fn dealt_steps(left: usize, world: usize, batch: usize) -> usize {
    left.div_ceil(world.max(1).saturating_mul(batch.max(1)))
}

/// The sequence of `epoch` as an epoch begun on `start.world` ranks
/// delivers it: `sampler`'s sequence at that world size, cut (with
/// `config.drop_last`) to each rank's whole batches.
pub fn delivered_sequence(sampler: &DistributedSampler, config: &LoaderConfig, epoch: u64, world: usize) -> Vec<usize> {
    let world = world.max(1);
    let mut sequence = DistributedSampler { world, rank: 0, ..*sampler }.sequence(epoch);
    if config.drop_last {
        let per_rank = sequence.len() / world;
        let batch = config.batch.max(1);
        sequence.truncate(per_rank / batch * batch * world);
    }
    sequence
}

/// `sampler`'s rank's batches of the rest of `epoch` (begun and dealt as
/// `start` says) at `sampler`'s world size: the one way the trainer and
/// the Python loader resume an epoch at another number of ranks.
pub fn resumed_batches(
    sampler: &DistributedSampler,
    config: &LoaderConfig,
    epoch: u64,
    start: EpochStart,
) -> Result<Vec<Vec<usize>>, ElasticError> {
    if start.world == 0 {
        return Err(ElasticError::NoRanks);
    }
    let sequence = delivered_sequence(sampler, config, epoch, start.world);
    if start.taken > sequence.len() {
        return Err(ElasticError::PastTheEnd { taken: start.taken, total: sequence.len(), world: start.world });
    }
    Ok(remaining_batches(&sequence, start.taken, sampler.world, sampler.rank, config.batch))
}

/// Why an epoch cannot be resumed where a saved state says it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElasticError {
    /// The saved world size is 0.
    #[error("the saved epoch began on 0 ranks")]
    NoRanks,
    /// More positions taken than the epoch holds (another dataset, seed or batch size).
    #[error("{taken} samples of the epoch taken, but it holds {total} at world size {world}")]
    PastTheEnd {
        /// Positions the state says were taken.
        taken: usize,
        /// Positions the epoch holds.
        total: usize,
        /// The world size it began on.
        world: usize,
    },
}

/// Rank `rank` of `world`'s batches for the rest of an epoch whose
/// sequence is `sequence`, from position `taken`. Step `j` takes the `j`-th
/// run of `world * batch` positions of the rest, dealt round-robin
/// (position `i` of the run to rank `i % world`), so every rank takes the
/// same number of steps, no batch holds more than `batch`, only the last
/// step's batches can be short (or empty, with fewer positions left than
/// ranks), and after any step exactly a prefix of the sequence is taken
/// ([`EpochStart::after_steps`]). At the world size the epoch began with
/// this is each rank's stride cut into batches: the uninterrupted epoch.
pub fn remaining_batches(sequence: &[usize], taken: usize, world: usize, rank: usize, batch: usize) -> Vec<Vec<usize>> {
    let (world, batch) = (world.max(1), batch.max(1));
    let rest = &sequence[taken.min(sequence.len())..];
    rest.chunks(world * batch).map(|run| run.iter().skip(rank).step_by(world).copied().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{DistributedSampler, Remainder};
    use proptest::prelude::*;

    fn sampler(len: usize, world: usize, rank: usize, seed: u64, remainder: Remainder) -> DistributedSampler {
        DistributedSampler { len, world, rank, seed, shuffle: true, remainder }
    }

    proptest! {
        /// An epoch stopped after any whole step at one world size and
        /// resumed at another (4 to 2, 4 to 8, and any other) visits every
        /// remaining position exactly once, each rank taking the same
        /// number of steps and no batch larger than the batch size.
        #[test]
        fn a_resumed_epoch_visits_each_remaining_position_once_at_any_world_size(
            len in 1usize..400,
            seed in any::<u64>(),
            batch in 1usize..9,
            (from, to) in prop_oneof![Just((4usize, 2usize)), Just((4, 8)), (1usize..9, 1usize..9)],
            stop in 0.0f64..1.0,
            pad in any::<bool>(),
        ) {
            let remainder = if pad { Remainder::Pad } else { Remainder::Drop };
            let sequence = sampler(len, from, 0, seed, remainder).sequence(3);
            let steps = sampler(len, from, 0, seed, remainder).per_rank().div_ceil(batch);
            let at = EpochPosition::after(3, (stop * steps as f64) as usize, batch, from, sequence.len());
            let mut visited = vec![0u32; sequence.len()];
            let mut counts = Vec::new();
            for rank in 0..to {
                let batches = remaining_batches(&sequence, at.taken, to, rank, batch);
                counts.push(batches.len());
                prop_assert!(batches.iter().all(|b| b.len() <= batch));
                // Positions, recovered from the dealing rule.
                let mine = batches.concat();
                for (j, &id) in mine.iter().enumerate() {
                    let position = at.taken + rank + j * to;
                    prop_assert_eq!(sequence[position], id);
                    visited[position] += 1;
                }
            }
            prop_assert!(counts.iter().all(|&c| c == counts[0]), "steps per rank {:?}", counts);
            prop_assert_eq!(counts[0], dealt_steps(sequence.len() - at.taken, to, batch));
            prop_assert!(visited[..at.taken].iter().all(|&v| v == 0));
            prop_assert!(visited[at.taken..].iter().all(|&v| v == 1));
        }

        /// A dealt epoch saved after any step but its last, then taken over
        /// at another world size: the position `after_steps` gives is
        /// exactly the positions the deal's first steps took, so the next
        /// deal visits each of the rest once.
        #[test]
        fn after_steps_of_a_deal_is_exactly_what_those_steps_took(
            total in 1usize..300,
            taken_frac in 0.0f64..1.0,
            world in 1usize..9,
            batch in 1usize..9,
            stop in 0.0f64..1.0,
        ) {
            let sequence: Vec<usize> = (0..total).collect();
            let start = EpochStart { world: 4, taken: (taken_frac * total as f64) as usize };
            let steps = dealt_steps(total - start.taken, world, batch);
            prop_assert!(steps > 0);
            let k = (stop * steps as f64) as usize;
            let mut took = vec![false; total];
            for rank in 0..world {
                let batches = remaining_batches(&sequence, start.taken, world, rank, batch);
                prop_assert_eq!(batches.len(), steps);
                for id in batches[..k].concat() {
                    took[id] = true;
                }
            }
            let after = start.after_steps(total, world, batch, k);
            prop_assert_eq!(after.world, 4);
            for (position, &t) in took.iter().enumerate() {
                prop_assert_eq!(t || position < start.taken, position < after.taken, "position {}", position);
            }
            // And the last step ends the epoch.
            prop_assert_eq!(start.after_steps(total, world, batch, steps).taken, total);
        }

        /// At the world size the epoch began with, after whole steps, the
        /// resumed batches are the uninterrupted epoch's, bit for bit.
        #[test]
        fn resumed_at_the_same_world_size_the_batches_are_the_uninterrupted_ones(
            len in 1usize..300,
            seed in any::<u64>(),
            batch in 1usize..9,
            world in 1usize..9,
            stop in 0.0f64..1.0,
            pad in any::<bool>(),
        ) {
            let remainder = if pad { Remainder::Pad } else { Remainder::Drop };
            for rank in 0..world {
                let s = sampler(len, world, rank, seed, remainder);
                let whole: Vec<Vec<usize>> = s.indices(1).chunks(batch).map(<[usize]>::to_vec).collect();
                let done = (stop * whole.len() as f64) as usize;
                let sequence = s.sequence(1);
                let at = EpochPosition::after(1, done, batch, world, sequence.len());
                prop_assert_eq!(remaining_batches(&sequence, at.taken, world, rank, batch), whole[done..].to_vec());
            }
        }
    }

    #[test]
    fn fewer_samples_left_than_ranks_give_the_others_an_empty_step() {
        let sequence: Vec<usize> = (0..10).collect();
        let batches: Vec<_> = (0..4).map(|r| remaining_batches(&sequence, 8, 4, r, 3)).collect();
        assert_eq!(batches, vec![vec![vec![8]], vec![vec![9]], vec![vec![]], vec![vec![]]]);
    }
}
