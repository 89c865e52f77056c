//! Sample orders. Every sampler is a pure function of (seed, epoch, rank,
//! world), so every rank computes its share without communicating, a
//! restarted job gets the same order, and every rank takes the same number of
//! steps (unequal step counts hang data-parallel jobs at the next allreduce).

use formats::placement::permutation;
pub use formats::sampling::{NodeLocalSampler, Remainder, epoch_seed};

/// A rank's sample order, epoch by epoch: what the pipeline cuts into
/// batches of `batch` (see [`LoaderConfig::order`](crate::pipeline::LoaderConfig::order),
/// the one caller). Every implementation is a pure function of its
/// configuration, the epoch and the batch size; only a sampler that groups
/// samples into batches itself (bucketed) looks at `batch`.
pub trait Sampler: Send + Sync {
    /// This rank's sample indices for `epoch`, in order.
    fn order(&self, epoch: u64, batch: usize) -> Vec<usize>;

    /// Samples this rank takes per epoch (of epoch 0 where epochs differ).
    fn per_rank(&self, batch: usize) -> usize {
        self.order(0, batch).len()
    }

    /// The distributed sampler this is, if it is one: its epochs are one
    /// sequence dealt to the ranks, so an epoch in progress can move to
    /// another number of ranks ([`crate::elastic`]). Samplers that place
    /// data per node or make batches themselves cannot.
    fn as_distributed(&self) -> Option<&DistributedSampler> {
        None
    }
}

/// The first `len` samples of another sampler's order each epoch: how
/// ranks holding different amounts of data take the same number of steps.
pub struct FirstOf {
    /// The sampler cut short.
    pub inner: Box<dyn Sampler>,
    /// Samples kept per epoch.
    pub len: usize,
}

impl Sampler for FirstOf {
    fn order(&self, epoch: u64, batch: usize) -> Vec<usize> {
        let mut order = self.inner.order(epoch, batch);
        order.truncate(self.len);
        order
    }

    fn per_rank(&self, batch: usize) -> usize {
        self.inner.per_rank(batch).min(self.len)
    }
}

impl Sampler for DistributedSampler {
    fn order(&self, epoch: u64, _batch: usize) -> Vec<usize> {
        self.indices(epoch)
    }

    fn per_rank(&self, _batch: usize) -> usize {
        DistributedSampler::per_rank(self)
    }

    fn as_distributed(&self) -> Option<&DistributedSampler> {
        Some(self)
    }
}

impl Sampler for NodeLocalSampler {
    fn order(&self, epoch: u64, _batch: usize) -> Vec<usize> {
        self.indices(epoch)
    }

    fn per_rank(&self, _batch: usize) -> usize {
        NodeLocalSampler::per_rank(self)
    }
}

/// The batches' samples one after another: the pipeline cuts the order
/// into batches of the same `batch`, so they come out as the batches the
/// sampler made.
impl Sampler for BucketedSampler {
    fn order(&self, epoch: u64, batch: usize) -> Vec<usize> {
        self.batches(epoch, batch).into_iter().flatten().collect()
    }
}

/// Every rank's share of `len` samples, shuffled per epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistributedSampler {
    /// Samples in the dataset.
    pub len: usize,
    /// Ranks.
    pub world: usize,
    /// This rank.
    pub rank: usize,
    /// Seed of the shuffles.
    pub seed: u64,
    /// Shuffle each epoch (else the natural order).
    pub shuffle: bool,
    /// Pad or drop the remainder.
    pub remainder: Remainder,
}

impl DistributedSampler {
    /// Samples per rank per epoch.
    pub fn per_rank(&self) -> usize {
        let world = self.world.max(1);
        match self.remainder {
            Remainder::Pad => self.len.div_ceil(world),
            Remainder::Drop => self.len / world,
        }
    }

    /// This rank's sample indices for `epoch`, in order: positions `rank`,
    /// `rank + world`, ... of the epoch's [`sequence`](Self::sequence).
    pub fn indices(&self, epoch: u64) -> Vec<usize> {
        self.sequence(epoch).into_iter().skip(self.rank).step_by(self.world.max(1)).collect()
    }

    /// The epoch's sample ids over all ranks, dealt round-robin (position
    /// `i` to rank `i % world`): the permutation, padded from its start or
    /// cut to equal shares. Its length is fixed by the world size the epoch
    /// began with; [`crate::elastic`] resumes the rest at another.
    pub fn sequence(&self, epoch: u64) -> Vec<usize> {
        formats::sampling::shuffled_sequence(self.len, self.world, (self.seed, epoch), self.shuffle, self.remainder)
    }
}

/// Samples that a simulator makes from their index as they are read
/// (Etalumis' online training, Baydin et al. 2019, Sec. IV-D): every epoch
/// takes `per_epoch` indices never used before, `epoch × per_epoch` on,
/// dealt round-robin to the ranks, so no rank sees a sample twice and the
/// run never repeats one. No shuffle: a simulator's samples are independent
/// draws already. A remainder that does not divide among the ranks is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreshSampler {
    /// Samples per epoch, over all ranks.
    pub per_epoch: usize,
    /// Ranks.
    pub world: usize,
    /// This rank.
    pub rank: usize,
}

impl Sampler for FreshSampler {
    fn order(&self, epoch: u64, _batch: usize) -> Vec<usize> {
        let world = self.world.max(1);
        let first = (epoch as usize).saturating_mul(self.per_epoch);
        (0..self.per_epoch / world).map(|k| first.saturating_add(k * world + self.rank)).collect()
    }
}

/// Etalumis' distributed bucketed sampler over traces sorted by trace type
/// (pyprob `pyprob/nn/dataset.py`): batches are consecutive chunks of the
/// sorted order, so a batch mostly holds one trace type; batches are grouped
/// into `buckets` buckets; each epoch the bucket order is shuffled, rank `r`
/// takes buckets `r, r + world, ...`, the ranks' batch lists are trimmed to
/// equal length, and each rank shuffles its batches. Traces beyond the last
/// full batch, and batches that do not divide among ranks, are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketedSampler {
    /// Traces in the store (in trace-type order).
    pub len: usize,
    /// Number of buckets.
    pub buckets: usize,
    /// Ranks.
    pub world: usize,
    /// This rank.
    pub rank: usize,
    /// Seed.
    pub seed: u64,
}

impl BucketedSampler {
    /// This rank's batches of `batch` traces for `epoch`, each a range of
    /// trace indices.
    pub fn batches(&self, epoch: u64, batch: usize) -> Vec<std::ops::Range<usize>> {
        let (batch, world) = (batch.max(1), self.world.max(1));
        let batches = self.len / batch;
        if batches == 0 {
            return Vec::new();
        }
        let per_bucket = batches.div_ceil(self.buckets.clamp(1, batches));
        let buckets: Vec<std::ops::Range<usize>> =
            (0..batches).step_by(per_bucket).map(|b| b..(b + per_bucket).min(batches)).collect();
        let order = permutation(buckets.len(), epoch_seed(self.seed, epoch));
        let mine: Vec<usize> = order.iter().skip(self.rank).step_by(world).flat_map(|&b| buckets[b].clone()).collect();
        // Every rank keeps the smallest share any rank gets.
        let share = (0..world)
            .map(|r| order.iter().skip(r).step_by(world).map(|&b| buckets[b].len()).sum::<usize>())
            .min()
            .unwrap_or(0);
        let mut kept: Vec<usize> = mine.into_iter().take(share).collect();
        let shuffle = permutation(kept.len(), epoch_seed(self.seed ^ self.rank as u64, epoch));
        kept = shuffle.iter().map(|&i| kept[i]).collect();
        kept.into_iter().map(|b| b * batch..(b + 1) * batch).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use formats::placement::Policy;
    use proptest::prelude::*;

    use super::*;

    /// Each epoch's indices are new, the ranks' are disjoint and equal, and
    /// together they are the epoch's block less the remainder.
    #[test]
    fn fresh_samples_are_never_repeated_across_ranks_or_epochs() {
        let mut seen = BTreeSet::new();
        for epoch in 0..3 {
            let orders: Vec<Vec<usize>> =
                (0..3).map(|rank| FreshSampler { per_epoch: 10, world: 3, rank }.order(epoch, 4)).collect();
            assert!(orders.iter().all(|o| o.len() == 3));
            for &i in orders.iter().flatten() {
                assert!(seen.insert(i), "index {i} twice");
                assert!((epoch as usize * 10..epoch as usize * 10 + 10).contains(&i));
            }
        }
        assert_eq!(seen.len(), 27);
    }

    proptest! {
        /// Ranks are disjoint, equal in length, and cover the epoch (pad: all
        /// samples; drop: all but fewer than `world`).
        #[test]
        fn distributed_ranks_are_equal_disjoint_and_cover(
            len in 0usize..500, world in 1usize..9, seed in any::<u64>(), epoch in 0u64..5, pad in any::<bool>(),
        ) {
            let remainder = if pad { Remainder::Pad } else { Remainder::Drop };
            let all: Vec<Vec<usize>> = (0..world)
                .map(|rank| DistributedSampler { len, world, rank, seed, shuffle: true, remainder }.indices(epoch))
                .collect();
            let per = all[0].len();
            prop_assert!(all.iter().all(|a| a.len() == per));
            let distinct: BTreeSet<usize> = all.iter().flatten().copied().collect();
            match remainder {
                Remainder::Pad => prop_assert_eq!(distinct.len(), len),
                Remainder::Drop => {
                    prop_assert_eq!(distinct.len(), per * world);
                    prop_assert!(len - distinct.len() < world);
                }
            }
        }

        /// The same (seed, epoch) gives the same order: a restarted job resumes it.
        #[test]
        fn orders_are_reproducible_and_change_per_epoch(len in 50usize..300, seed in any::<u64>()) {
            let s = DistributedSampler { len, world: 2, rank: 1, seed, shuffle: true, remainder: Remainder::Pad };
            prop_assert_eq!(s.indices(3), s.indices(3));
            prop_assert_ne!(s.indices(3), s.indices(4));
        }

        /// Node-local: each rank reads only files placed on its node, and every
        /// rank of the job takes the same number of steps.
        #[test]
        fn node_local_reads_only_its_node_files_with_equal_steps(
            files in 2usize..40, nodes in 1usize..5, per_node in 1usize..3, seed in any::<u64>(), pad in any::<bool>(),
        ) {
            let samples: Vec<u64> = (0..files).map(|i| 1 + (i % 3) as u64).collect();
            let sizes = vec![1u64; files];
            let ranks = vec![per_node; nodes];
            let policy = Policy::PerNode(files.div_ceil(nodes));
            let remainder = if pad { Remainder::Pad } else { Remainder::Drop };
            let needs = formats::placement::files_per_node(&sizes, nodes, policy, seed).unwrap();
            let first: Vec<usize> = samples.iter().scan(0usize, |acc, &n| { let f = *acc; *acc += n as usize; Some(f) }).collect();
            let mut steps = BTreeSet::new();
            for (node, files_here) in needs.iter().enumerate() {
                let allowed: BTreeSet<usize> = files_here.iter().flat_map(|&f| first[f]..first[f] + samples[f] as usize).collect();
                for local in 0..per_node {
                    let s = NodeLocalSampler::new(&samples, &sizes, &vec![None; sizes.len()], &ranks, (node, local), (policy, seed), remainder).unwrap();
                    let ids = s.indices(1);
                    steps.insert(ids.len());
                    prop_assert!(ids.iter().all(|i| allowed.contains(i)));
                    // The node's ids, ascending, are exactly its files' samples.
                    let expected: Vec<usize> = allowed.iter().copied().collect();
                    prop_assert_eq!(s.node_samples(), expected.as_slice());
                    prop_assert_eq!(s.node_files(), files_here.as_slice());
                }
            }
            prop_assert_eq!(steps.len(), 1);
        }

        /// Bucketed: ranks get equal numbers of disjoint, whole batches.
        #[test]
        fn bucketed_batches_are_equal_disjoint_and_whole(
            len in 0usize..2000, batch in 1usize..16, buckets in 1usize..12, world in 1usize..6, seed in any::<u64>(), epoch in 0u64..4,
        ) {
            let all: Vec<_> = (0..world).map(|rank| BucketedSampler { len, buckets, world, rank, seed }.batches(epoch, batch)).collect();
            let per = all[0].len();
            prop_assert!(all.iter().all(|b| b.len() == per));
            let mut seen = BTreeSet::new();
            for b in all.iter().flatten() {
                prop_assert_eq!(b.len(), batch);
                prop_assert!(b.end <= len);
                prop_assert!(seen.insert(b.start), "batch {:?} twice", b);
            }
        }
    }
}
