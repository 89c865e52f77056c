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

/// Rank `rank` of `world`'s batches for the rest of an epoch whose
/// sequence is `sequence`, from position `taken`. Position `taken + i`
/// goes to rank `i % world`; each rank cuts its share into batches of
/// `batch`. Shares differ by one sample at most; a rank left one batch
/// short splits its last batch in two (or, holding fewer samples than that,
/// takes an empty one), so that every rank takes the same number of steps.
pub fn remaining_batches(sequence: &[usize], taken: usize, world: usize, rank: usize, batch: usize) -> Vec<Vec<usize>> {
    let (world, batch) = (world.max(1), batch.max(1));
    let rest = sequence.get(taken..).unwrap_or_default();
    let largest = rest.len().div_ceil(world);
    let steps = largest.div_ceil(batch);
    let mine: Vec<usize> = rest.iter().skip(rank).step_by(world).copied().collect();
    let mut batches: Vec<Vec<usize>> = mine.chunks(batch).map(<[usize]>::to_vec).collect();
    while batches.len() < steps {
        match batches.last_mut() {
            Some(last) if last.len() >= 2 => {
                let tail = last.split_off(last.len().div_ceil(2));
                batches.push(tail);
            }
            _ => batches.push(Vec::new()),
        }
    }
    batches
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
            prop_assert!(visited[..at.taken].iter().all(|&v| v == 0));
            prop_assert!(visited[at.taken..].iter().all(|&v| v == 1));
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
