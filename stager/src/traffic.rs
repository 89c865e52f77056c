//! What training with a global shuffle reads, epoch by epoch, when a
//! dataset is sharded over the nodes (`--policy shard`: each file on one
//! node) and each node has `capacity` bytes of storage. Every epoch each
//! rank draws its samples from one permutation of the whole dataset (the
//! loader's distributed sampler over all ranks,
//! [`formats::sampling::shuffled_sequence`]), so most of a node's samples live in files other
//! nodes hold. A node keeps what fits of its own shard beside `cache`
//! bytes kept for other nodes' files (at least that room: more when its
//! shard leaves more), where they are fetched ahead of need. Keeping
//! shards rather than caching more is what reads the source least: a kept
//! file serves every node, a cached copy only its own. A read is
//!
//! - *local*: the node's shard, or a file its cache holds;
//! - *from a peer*: another node holds the file (fetched over the network
//!   and cached);
//! - *from the source*: no node holds it (the dataset is larger than the
//!   nodes together), read again from the shared file system.
//!
//! A file not held is fetched whole, as staging copies files; a read of a
//! sample of a held file reads that sample's share of its bytes. The first
//! epoch also reads each held file from the source once (the staging). The cache evicts by [`Eviction`]: furthest next use is
//! possible because the order is known in advance. No I/O here: the model
//! behind `stager plan --capacity` and `stager simulate --capacity`.
//!
//! ```
//! use stager::capacity::Eviction;
//! use stager::traffic::{GlobalShuffle, global_shuffle};
//!
//! // 8 files of 1 sample and 100 bytes, 2 nodes with room for all of it.
//! let shuffle = GlobalShuffle {
//!     nodes: 2, ranks_per_node: 1, batch: 1, seed: 0, epochs: 2, capacity: 800, cache: 100, window: 16,
//!     rule: Eviction::FurthestNextUse,
//! };
//! let report = global_shuffle(&[100; 8], &[1; 8], 0, &shuffle).unwrap();
//! assert_eq!(report.epochs[0].source, 800); // staged once
//! assert_eq!(report.epochs[1].source, 0); // never again
//! ```

use formats::global_order::{GlobalOrder, file_of_sample};
use formats::placement::{PlacementError, Policy, files_per_node};
use serde::Serialize;

use crate::capacity::Eviction;
use crate::peers::cache::replay_fetcher;

/// The job the model reads for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalShuffle {
    /// Nodes.
    pub nodes: usize,
    /// Training ranks per node.
    pub ranks_per_node: usize,
    /// Samples per rank per step (each rank's share is cut to whole batches).
    pub batch: usize,
    /// The training seed (the sampler's).
    pub seed: u64,
    /// Epochs to read.
    pub epochs: u64,
    /// Bytes each node can hold.
    pub capacity: u64,
    /// Of those, bytes kept for other nodes' files (and for files no node
    /// holds); the rest holds the node's shard.
    pub cache: u64,
    /// Reads the fetcher runs ahead of the node's readers (`stager serve
    /// --window`).
    pub window: usize,
    /// What a full cache gives up.
    pub rule: Eviction,
}

/// Bytes read in one epoch, over all nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EpochTraffic {
    /// Epoch (1-based).
    pub epoch: u64,
    /// From the shared file system (staging, and files no node holds).
    pub source: u64,
    /// From other nodes.
    pub peers: u64,
    /// From the node's own storage.
    pub local: u64,
}

/// What a global shuffle reads under a capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrafficReport {
    /// Bytes of the dataset's sample files.
    pub dataset_bytes: u64,
    /// Bytes of its shard each node holds.
    pub held_per_node: Vec<u64>,
    /// Bytes no node holds: read from the source whenever needed and not cached.
    pub unheld_bytes: u64,
    /// Each epoch's reads.
    pub epochs: Vec<EpochTraffic>,
}

impl TrafficReport {
    /// A table of each epoch's bytes from the source, from peers and local.
    pub fn table(&self) -> String {
        use crate::units::human_bytes;
        use std::fmt::Write as _;
        let held: u64 = self.held_per_node.iter().sum();
        let mut out = format!(
            "dataset {}; the nodes hold {} of it (largest node {}), {} on no node\n{:>6} {:>12} {:>12} {:>12}\n",
            human_bytes(self.dataset_bytes as f64),
            human_bytes(held as f64),
            human_bytes(self.held_per_node.iter().copied().max().unwrap_or(0) as f64),
            human_bytes(self.unheld_bytes as f64),
            "epoch",
            "source",
            "peers",
            "local"
        );
        for e in &self.epochs {
            let _ = writeln!(
                out,
                "{:>6} {:>12} {:>12} {:>12}",
                e.epoch,
                human_bytes(e.source as f64),
                human_bytes(e.peers as f64),
                human_bytes(e.local as f64)
            );
        }
        let _ = write!(
            out,
            "source reads {:.2}x the dataset over {} epochs",
            self.source_amplification(),
            self.epochs.len()
        );
        out
    }

    /// Bytes over every epoch from the source and from peers: what a
    /// node's storage did not serve.
    pub fn fetched(&self) -> (u64, u64) {
        self.epochs.iter().fold((0, 0), |(s, p), e| (s + e.source, p + e.peers))
    }

    /// Bytes read from the source over every epoch, as a multiple of the dataset.
    pub fn source_amplification(&self) -> f64 {
        let source: u64 = self.epochs.iter().map(|e| e.source).sum();
        if self.dataset_bytes == 0 { 0.0 } else { source as f64 / self.dataset_bytes as f64 }
    }
}

/// The node keeping each file of `sizes` bytes holding `samples` samples
/// (`None`: no node, or a file without samples) when each node keeps the
/// sample files of its shard (`shards`, as `--policy shard` places them)
/// that fit in `shard_room` bytes, in shard order; and the bytes each node
/// keeps. What `stager serve --global-shuffle` stages and this model
/// replays.
pub fn kept_shards(
    shards: &[Vec<usize>],
    sizes: &[u64],
    samples: &[usize],
    shard_room: u64,
) -> (Vec<Option<usize>>, Vec<u64>) {
    let mut owner: Vec<Option<usize>> = vec![None; sizes.len()];
    let mut held_per_node = vec![0u64; shards.len()];
    for (node, shard) in shards.iter().enumerate() {
        for &file in shard.iter().filter(|&&f| samples[f] > 0) {
            if held_per_node[node] + sizes[file] <= shard_room {
                held_per_node[node] += sizes[file];
                owner[file] = Some(node);
            }
        }
    }
    (owner, held_per_node)
}

/// Replay `shuffle`'s reads of files of `sizes` bytes holding `samples`
/// samples each (a file of 0 samples is never read), sharded over the
/// nodes with `placement_seed`. The reads are the service's
/// ([`GlobalOrder`]: each rank's share cut to whole batches), and the
/// cache is replayed as the service's fetcher runs it ([`replay_fetcher`]:
/// every fetched file goes through the cache, and a file the readers have
/// still to read is never evicted, the readers as far behind as the window
/// lets them).
pub fn global_shuffle(
    sizes: &[u64],
    samples: &[usize],
    placement_seed: u64,
    shuffle: &GlobalShuffle,
) -> Result<TrafficReport, PlacementError> {
    let nodes = shuffle.nodes.max(1);
    let shard_room = shuffle.capacity.saturating_sub(shuffle.cache);
    let shards = files_per_node(sizes, nodes, Policy::Shard, placement_seed)?;
    let (owner, held_per_node) = kept_shards(&shards, sizes, samples, shard_room);
    let file_of_sample = file_of_sample(samples);
    let first_sample: Vec<usize> = samples.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
    // A sample's share of its file's bytes (the remainder to the first ones).
    let sample_bytes = |sample: usize| {
        let file = file_of_sample[sample];
        let (k, j) = (samples[file] as u64, (sample - first_sample[file]) as u64);
        sizes[file] / k + u64::from(j < sizes[file] % k)
    };
    let order = GlobalOrder {
        samples: file_of_sample.len(),
        nodes,
        ranks_per_node: shuffle.ranks_per_node.max(1),
        batch: shuffle.batch.max(1),
        seed: shuffle.seed,
    };
    let reads_per_epoch = (order.per_rank() * order.ranks_per_node).max(1);
    let mut epochs: Vec<EpochTraffic> =
        (0..shuffle.epochs).map(|e| EpochTraffic { epoch: e + 1, ..EpochTraffic::default() }).collect();
    if let Some(first) = epochs.first_mut() {
        first.source = held_per_node.iter().sum();
    }
    for (node, reads) in order.reads_by_node(shuffle.epochs).into_iter().enumerate() {
        let files: Vec<usize> = reads.iter().map(|&s| file_of_sample[s]).collect();
        let mut count = |at: usize, cached: bool| {
            let (sample, file) = (reads[at], files[at]);
            let traffic = &mut epochs[at / reads_per_epoch];
            match (cached, owner[file]) {
                (true, _) => traffic.local += sample_bytes(sample),
                (false, Some(_)) => traffic.peers += sizes[file],
                (false, None) => traffic.source += sizes[file],
            }
        };
        for (at, &file) in files.iter().enumerate() {
            if owner[file] == Some(node) {
                count(at, true);
            }
        }
        // A file not held is fetched whole (as staging copies files); a
        // read of a sample of a held one reads that sample.
        let cache = shuffle.capacity - held_per_node[node];
        let fetched = |f: usize| owner[f] != Some(node);
        replay_fetcher(&files, sizes, (cache, shuffle.rule), shuffle.window, fetched, count);
    }
    let dataset_bytes = (0..sizes.len()).filter(|&f| samples[f] > 0).map(|f| sizes[f]).sum();
    let unheld_bytes = (0..sizes.len()).filter(|&f| samples[f] > 0 && owner[f].is_none()).map(|f| sizes[f]).sum();
    Ok(TrafficReport { dataset_bytes, held_per_node, unheld_bytes, epochs })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn shuffle(nodes: usize, capacity: u64, rule: Eviction) -> GlobalShuffle {
        GlobalShuffle {
            nodes,
            ranks_per_node: 2,
            batch: 1,
            seed: 3,
            epochs: 3,
            capacity,
            cache: capacity / 4,
            window: 4,
            rule,
        }
    }

    fn total(e: &EpochTraffic) -> u64 {
        e.peers + e.local + e.source
    }

    /// With a sample per file, every sample read is counted once, wherever
    /// it came from; the source serves the first epoch's staging on top.
    #[test]
    fn each_epoch_reads_every_sample_once_from_somewhere() {
        let sizes: Vec<u64> = (0..40).map(|i| 100 + i * 7).collect();
        let samples = vec![1; 40];
        for capacity in [0, 500, 2_000, 100_000] {
            for rule in [Eviction::FurthestNextUse, Eviction::LeastRecentlyUsed] {
                let report = global_shuffle(&sizes, &samples, 1, &shuffle(4, capacity, rule)).unwrap();
                let staged: u64 = report.held_per_node.iter().sum();
                assert_eq!(staged + report.unheld_bytes, report.dataset_bytes);
                for (k, e) in report.epochs.iter().enumerate() {
                    let read = total(e) - if k == 0 { staged } else { 0 };
                    assert_eq!(read, report.dataset_bytes, "capacity {capacity} {rule:?} epoch {}", e.epoch);
                }
            }
        }
    }

    /// Files of 4 samples: a node reads each held file's bytes once per
    /// epoch over its samples, so local bytes never exceed the dataset.
    #[test]
    fn samples_of_a_held_file_read_its_bytes_once_per_epoch() {
        let sizes = vec![1_001u64; 32];
        let samples = vec![4; 32];
        let report = global_shuffle(&sizes, &samples, 0, &shuffle(4, 100_000, Eviction::FurthestNextUse)).unwrap();
        for e in report.epochs.iter().skip(1) {
            assert_eq!(e.source, 0);
            assert!(e.local <= report.dataset_bytes && e.local + e.peers >= report.dataset_bytes, "{e:?}");
        }
    }

    /// Room for the whole shard and more: after the first epoch the source
    /// is never read, and what a node lacks comes from its peers or cache.
    #[test]
    fn a_dataset_the_nodes_hold_together_is_read_from_the_source_once() {
        let sizes = vec![1_000u64; 64];
        let samples = vec![2; 64];
        let report = global_shuffle(&sizes, &samples, 0, &shuffle(4, 24_000, Eviction::FurthestNextUse)).unwrap();
        assert_eq!(report.unheld_bytes, 0);
        assert_eq!(report.held_per_node, vec![16_000; 4]);
        assert!((report.source_amplification() - 1.0).abs() < 1e-9);
        assert!(report.epochs.iter().skip(1).all(|e| e.source == 0 && e.peers > 0));
    }

    /// Nodes that together hold half the dataset read the other half from
    /// the source every epoch (less what their cache keeps), and furthest
    /// next use never reads more than LRU.
    #[test]
    fn a_dataset_larger_than_the_nodes_reads_the_rest_again_and_furthest_next_use_beats_lru() {
        let sizes = vec![1_000u64; 64];
        let samples = vec![1; 64];
        let fnu = global_shuffle(&sizes, &samples, 0, &shuffle(2, 20_000, Eviction::FurthestNextUse)).unwrap();
        let lru = global_shuffle(&sizes, &samples, 0, &shuffle(2, 20_000, Eviction::LeastRecentlyUsed)).unwrap();
        assert_eq!(fnu.held_per_node, vec![15_000; 2]);
        assert_eq!(fnu.unheld_bytes, 34_000);
        let (mut fnu_total, mut lru_total) = (0, 0);
        for (f, l) in fnu.epochs.iter().zip(&lru.epochs).skip(1) {
            assert!(f.source > 0 && f.source < 34_000, "{f:?}");
            fnu_total += f.source + f.peers;
            lru_total += l.source + l.peers;
        }
        assert!(fnu_total < lru_total, "furthest next use {fnu_total} against LRU {lru_total}");
    }
}
