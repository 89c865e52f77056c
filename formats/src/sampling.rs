//! Sample orders the stager and the loaders both compute: the node-local
//! order of a staged destination's samples, which the loaders read and a
//! serving stager stages ahead of ([`first_needed`]), and the global
//! shuffle's sequence ([`shuffled_sequence`]), whose reads the stager
//! models under a node's capacity. Each is a pure
//! function of (seed, epoch, rank, world), so every rank computes its share
//! without communicating, a restarted job gets the same order, and every
//! rank takes the same number of steps.

use crate::placement::{PlacementError, Policy, files_per_node_with, permutation};

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

/// The samples of `len` every rank of `world` draws from in `epoch`, dealt
/// round-robin (position `i` to rank `i % world`): the permutation of
/// (`seed`, `epoch`) (or the natural order without `shuffle`), padded from
/// its start or cut to equal shares. The loader's distributed sampler is
/// this sequence's rank-strided view.
pub fn shuffled_sequence(
    len: usize,
    world: usize,
    (seed, epoch): (u64, u64),
    shuffle: bool,
    remainder: Remainder,
) -> Vec<usize> {
    if len == 0 {
        return Vec::new();
    }
    let world = world.max(1);
    let per_rank = match remainder {
        Remainder::Pad => len.div_ceil(world),
        Remainder::Drop => len / world,
    };
    let order = if shuffle { permutation(len, epoch_seed(seed, epoch)) } else { (0..len).collect() };
    (0..per_rank * world).map(|i| order[i % len]).collect()
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
        let job = JobSamples::new(samples_per_file, &needs, ranks_per_node, remainder);
        Ok(job.sampler(node, local_rank, seed))
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

/// Every node's samples under one placement: what each node's sampler is
/// built from, computed once for all nodes.
struct JobSamples<'a> {
    samples_per_file: &'a [u64],
    needs: &'a [Vec<usize>],
    ranks_per_node: &'a [usize],
    /// The global id of each file's first sample.
    first: Vec<usize>,
    per_rank: usize,
}

impl<'a> JobSamples<'a> {
    fn new(
        samples_per_file: &'a [u64],
        needs: &'a [Vec<usize>],
        ranks_per_node: &'a [usize],
        remainder: Remainder,
    ) -> Self {
        let mut first = Vec::with_capacity(samples_per_file.len());
        let mut next = 0usize;
        for &n in samples_per_file {
            first.push(next);
            next += n as usize;
        }
        let mut job = JobSamples { samples_per_file, needs, ranks_per_node, first, per_rank: 0 };
        let counts = (0..ranks_per_node.len()).flat_map(|n| {
            let total = job.node_samples(n).len();
            let size = ranks_per_node[n].max(1);
            (0..size).map(move |r| total / size + usize::from(r < total % size))
        });
        job.per_rank = match remainder {
            Remainder::Pad => counts.max().unwrap_or(0),
            Remainder::Drop => counts.min().unwrap_or(0),
        };
        job
    }

    fn node_samples(&self, node: usize) -> Vec<usize> {
        self.needs[node]
            .iter()
            .flat_map(|&f| self.first[f]..self.first[f] + self.samples_per_file[f] as usize)
            .collect()
    }

    fn sampler(&self, node: usize, local_rank: usize, seed: u64) -> NodeLocalSampler {
        NodeLocalSampler {
            node_files: self.needs.get(node).cloned().unwrap_or_default(),
            node_samples: if node < self.needs.len() { self.node_samples(node) } else { Vec::new() },
            per_rank: self.per_rank,
            local_rank,
            local_size: self.ranks_per_node.get(node).copied().unwrap_or(1).max(1),
            seed,
        }
    }

    /// The file holding global sample `id`.
    fn file_of(&self, id: usize) -> usize {
        // The last file whose first sample is at or before `id` and that
        // holds samples (files without any share their successor's start).
        let mut f = self.first.partition_point(|&start| start <= id) - 1;
        while self.samples_per_file[f] == 0 {
            f -= 1;
        }
        f
    }
}

/// For each manifest file, the first step of epoch 0 at which a rank reads
/// one of its samples, over every node that holds it: the ranks of a node
/// read their node's sample order (see [`NodeLocalSampler::indices`])
/// `ranks` samples per step, so position `p` of the order is read at step
/// `p / ranks`. This is the order a serving stager stages in, so training
/// waits for as little as it can. `u64::MAX` marks a file no rank reads in
/// epoch 0 (no samples, or samples past the epoch's last step); a file
/// that travels with another (`follows`) is needed when that one is.
/// Arguments as [`NodeLocalSampler::new`].
pub fn first_needed(
    samples_per_file: &[u64],
    file_sizes: &[u64],
    follows: &[Option<usize>],
    ranks_per_node: &[usize],
    staged: (Policy, u64),
    remainder: Remainder,
) -> Result<Vec<u64>, PlacementError> {
    let (policy, seed) = staged;
    let needs = files_per_node_with(file_sizes, follows, ranks_per_node.len(), policy, seed)?;
    let job = JobSamples::new(samples_per_file, &needs, ranks_per_node, remainder);
    let mut step = vec![u64::MAX; samples_per_file.len()];
    for node in 0..ranks_per_node.len() {
        let sampler = job.sampler(node, 0, seed);
        let n = sampler.node_samples.len();
        if n == 0 {
            continue;
        }
        let ranks = sampler.local_size;
        let order = permutation(n, epoch_seed(seed, 0));
        for (p, &k) in order.iter().enumerate().take((job.per_rank * ranks).min(n)) {
            let file = job.file_of(sampler.node_samples[k]);
            step[file] = step[file].min((p / ranks) as u64);
        }
    }
    for (file, leader) in follows.iter().enumerate() {
        if let Some(leader) = *leader
            && samples_per_file[file] == 0
        {
            step[file] = step[file].min(step[leader]);
        }
    }
    Ok(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files a node's ranks read in epoch 0, in the order first read.
    fn read_order(sampler: &[NodeLocalSampler], file_of: impl Fn(usize) -> usize) -> Vec<(u64, usize)> {
        let mut seen = std::collections::BTreeMap::new();
        for s in sampler {
            for (k, id) in s.indices(0).into_iter().enumerate() {
                let f = file_of(id);
                let e = seen.entry(f).or_insert(k as u64);
                *e = (*e).min(k as u64);
            }
        }
        seen.into_iter().map(|(f, k)| (k, f)).collect()
    }

    #[test]
    fn first_needed_is_the_step_the_loaders_first_read_each_file() {
        // 3 nodes of 2, 1 and 3 ranks; files of 0 to 3 samples; shard.
        let samples: Vec<u64> = (0..40).map(|i| (i % 4) as u64).collect();
        let sizes: Vec<u64> = samples.iter().map(|&s| 100 + s).collect();
        let follows = vec![None; samples.len()];
        let ranks = [2, 1, 3];
        for (policy, remainder) in [(Policy::Shard, Remainder::Drop), (Policy::Replicate, Remainder::Pad)] {
            let steps = first_needed(&samples, &sizes, &follows, &ranks, (policy, 5), remainder).unwrap();
            let mut expected = vec![u64::MAX; samples.len()];
            for (node, &size) in ranks.iter().enumerate() {
                let samplers: Vec<NodeLocalSampler> = (0..size)
                    .map(|r| {
                        NodeLocalSampler::new(&samples, &sizes, &follows, &ranks, (node, r), (policy, 5), remainder)
                            .unwrap()
                    })
                    .collect();
                let starts: Vec<usize> =
                    samples.iter().scan(0usize, |at, &n| Some(std::mem::replace(at, *at + n as usize))).collect();
                let file_of =
                    |id: usize| (0..samples.len()).rev().find(|&f| samples[f] > 0 && starts[f] <= id).unwrap();
                for (k, f) in read_order(&samplers, file_of) {
                    expected[f] = expected[f].min(k);
                }
            }
            assert_eq!(steps, expected, "{policy:?}");
            assert!(steps.iter().enumerate().all(|(f, &s)| samples[f] > 0 || s == u64::MAX), "no samples, not needed");
        }
    }

    /// What staging in need order means for files of many samples: with k
    /// samples per file shuffled over the epoch, the share of files first
    /// needed by fraction t of the epoch is 1 - (1 - t)^k. Measured on the
    /// sampler itself (2,000 files, one node of 4 ranks): the figures
    /// docs/stager.md gives ("Files of many samples").
    #[test]
    fn files_of_k_samples_are_needed_by_fraction_t_of_the_epoch_as_one_minus_one_minus_t_to_the_k() {
        for k in [1u64, 8, 32] {
            let samples = vec![k; 2000];
            let sizes = vec![1u64; samples.len()];
            let follows = vec![None; samples.len()];
            let steps = first_needed(&samples, &sizes, &follows, &[4], (Policy::Shard, 9), Remainder::Drop).unwrap();
            let epoch_steps = (samples.len() as u64 * k / 4) as f64;
            for t in [0.05, 0.25, 0.5] {
                let by = steps.iter().filter(|&&s| (s as f64) < t * epoch_steps).count() as f64 / samples.len() as f64;
                let expected = 1.0 - (1.0 - t).powi(k as i32);
                assert!((by - expected).abs() < 0.04, "k {k}, t {t}: {by:.3} of the files, formula {expected:.3}");
            }
        }
    }
}
