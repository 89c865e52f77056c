//! Sample orders. Every sampler is a pure function of (seed, epoch, rank,
//! world), so every rank computes its share without communicating, a
//! restarted job gets the same order, and every rank takes the same number of
//! steps (unequal step counts hang data-parallel jobs at the next allreduce).

use formats::placement::{PlacementError, Policy, files_per_node_with, permutation};

/// What to do with samples that do not divide evenly among ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remainder {
    /// Repeat samples from the start of the order so every rank gets ceil(n / world).
    Pad,
    /// Leave the last samples out so every rank gets floor(n / world).
    Drop,
}

/// The seed of one epoch's permutation: distinct per epoch, stable forever.
pub fn epoch_seed(seed: u64, epoch: u64) -> u64 {
    seed ^ epoch.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A rank's sample order, epoch by epoch: what the pipeline cuts into
/// batches. Every implementation is a pure function of its configuration
/// and the epoch.
pub trait Sampler: Send + Sync {
    /// This rank's sample indices for `epoch`, in order.
    fn order(&self, epoch: u64) -> Vec<usize>;

    /// Samples this rank takes per epoch (of epoch 0 where epochs differ).
    fn per_rank(&self) -> usize {
        self.order(0).len()
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
    fn order(&self, epoch: u64) -> Vec<usize> {
        let mut order = self.inner.order(epoch);
        order.truncate(self.len);
        order
    }

    fn per_rank(&self) -> usize {
        self.inner.per_rank().min(self.len)
    }
}

impl Sampler for DistributedSampler {
    fn order(&self, epoch: u64) -> Vec<usize> {
        self.indices(epoch)
    }

    fn per_rank(&self) -> usize {
        DistributedSampler::per_rank(self)
    }
}

impl Sampler for NodeLocalSampler {
    fn order(&self, epoch: u64) -> Vec<usize> {
        self.indices(epoch)
    }

    fn per_rank(&self) -> usize {
        NodeLocalSampler::per_rank(self)
    }
}

/// The batches' samples one after another: the pipeline cuts the order
/// into batches of the same `batch`, so they come out as the batches the
/// sampler made.
impl Sampler for BucketedSampler {
    fn order(&self, epoch: u64) -> Vec<usize> {
        self.batches(epoch).into_iter().flatten().collect()
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

    /// This rank's sample indices for `epoch`, in order.
    pub fn indices(&self, epoch: u64) -> Vec<usize> {
        let world = self.world.max(1);
        if self.len == 0 {
            return Vec::new();
        }
        let order =
            if self.shuffle { permutation(self.len, epoch_seed(self.seed, epoch)) } else { (0..self.len).collect() };
        let total = self.per_rank() * world;
        (self.rank..total).step_by(world).map(|i| order[i % self.len]).collect()
    }
}

/// The samples of the files the stager placed on one node, split among the
/// node's ranks, with the same step count on every rank of the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLocalSampler {
    /// The manifest files placed on this rank's node, ascending.
    node_files: Vec<usize>,
    /// Sample ids available to this rank's node, in file order.
    node_samples: Vec<usize>,
    /// Samples per rank per epoch, equal on every rank of the job.
    per_rank: usize,
    local_rank: usize,
    local_size: usize,
    seed: u64,
}

impl NodeLocalSampler {
    /// `samples_per_file[i]` is the sample count of manifest file `i`; the
    /// global sample ids are numbered file by file. `ranks_per_node[n]` is the
    /// number of ranks on node `n`. `staged` is the stager's policy and seed.
    /// `follows` says which files travel with which (the manifest's
    /// [`followers`](formats::manifest::Manifest::followers)).
    pub fn new(
        samples_per_file: &[u64],
        file_sizes: &[u64],
        follows: &[Option<usize>],
        ranks_per_node: &[usize],
        (node, local_rank): (usize, usize),
        staged: (Policy, u64),
        remainder: Remainder,
    ) -> Result<Self, PlacementError> {
        let (policy, seed) = staged;
        let needs = files_per_node_with(file_sizes, follows, ranks_per_node.len(), policy, seed)?;
        let mut first = Vec::with_capacity(samples_per_file.len());
        let mut next = 0usize;
        for &n in samples_per_file {
            first.push(next);
            next += n as usize;
        }
        let samples_of = |n: usize| -> Vec<usize> {
            needs[n].iter().flat_map(|&f| first[f]..first[f] + samples_per_file[f] as usize).collect()
        };
        let counts = (0..ranks_per_node.len()).flat_map(|n| {
            let total = samples_of(n).len();
            let size = ranks_per_node[n].max(1);
            (0..size).map(move |r| total / size + usize::from(r < total % size))
        });
        let per_rank = match remainder {
            Remainder::Pad => counts.max().unwrap_or(0),
            Remainder::Drop => counts.min().unwrap_or(0),
        };
        Ok(NodeLocalSampler {
            node_files: needs.get(node).cloned().unwrap_or_default(),
            node_samples: samples_of(node),
            per_rank,
            local_rank,
            local_size: ranks_per_node.get(node).copied().unwrap_or(1).max(1),
            seed,
        })
    }

    /// Samples per rank per epoch (the same on every rank).
    pub fn per_rank(&self) -> usize {
        self.per_rank
    }

    /// The manifest files placed on this rank's node (data files, sidecars
    /// and files without samples alike), ascending.
    pub fn node_files(&self) -> &[usize] {
        &self.node_files
    }

    /// The global sample ids on this rank's node, ascending: position `k`
    /// is the `k`-th sample of a dataset over the node's files in manifest
    /// order, so a node-local dataset maps an id back by binary search.
    pub fn node_samples(&self) -> &[usize] {
        &self.node_samples
    }

    /// This rank's global sample ids for `epoch`.
    pub fn indices(&self, epoch: u64) -> Vec<usize> {
        let n = self.node_samples.len();
        if n == 0 || self.per_rank == 0 {
            return Vec::new();
        }
        let order = permutation(n, epoch_seed(self.seed, epoch));
        (0..self.per_rank).map(|k| self.node_samples[order[(self.local_rank + k * self.local_size) % n]]).collect()
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
    /// Traces per batch.
    pub batch: usize,
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
    /// This rank's batches for `epoch`, each a range of trace indices.
    pub fn batches(&self, epoch: u64) -> Vec<std::ops::Range<usize>> {
        let (batch, world) = (self.batch.max(1), self.world.max(1));
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

    use proptest::prelude::*;

    use super::*;

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
            let all: Vec<_> = (0..world).map(|rank| BucketedSampler { len, batch, buckets, world, rank, seed }.batches(epoch)).collect();
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
