//! The order of a global shuffle over a dataset sharded across the nodes
//! (`stager serve --global-shuffle`): every epoch the ranks draw their
//! samples from one permutation of the whole training set, dealt as the
//! loader's distributed sampler deals it ([`shuffled_sequence`], rank `r`
//! taking positions `r`, `r + world`, ...), so the batches are those of
//! training from a full copy. A node's service must know, ahead of need,
//! which files its ranks read in which order; its clients name each read
//! by its *position* in that node-wide sequence: epoch by epoch, each
//! rank's `j`-th sample before anyone's `j+1`-th, the node's ranks in
//! order. Both sides compute it here, from the [`ShuffleRecord`] the
//! service writes into the destination. No I/O but the record's.
//!
//! ```
//! use formats::global_order::GlobalOrder;
//!
//! // 40 samples, 2 nodes of 2 ranks, batches of 3: 9 samples per rank per epoch.
//! let order = GlobalOrder { samples: 40, nodes: 2, ranks_per_node: 2, batch: 3, seed: 7 };
//! assert_eq!(order.per_rank(), 9);
//! let read = order.read(1, 3, 4); // epoch 1, global rank 3, its 5th sample
//! assert_eq!(read.node, 1);
//! assert_eq!(read.position, (9 + 4) * 2 + 1);
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::{Manifest, STATE_DIR};
use crate::sampling::{Remainder, shuffled_sequence};

/// The file in a destination's state directory that says it is served
/// with a global shuffle.
pub const RECORD_FILE: &str = "global-shuffle.json";

/// Where a node's service keeps the files it fetched from other nodes
/// unless told otherwise: `DEST/.stagehand/peers`.
pub fn default_cache_dir(dest: &Path) -> PathBuf {
    dest.join(STATE_DIR).join("peers")
}

/// A global shuffle's shape: enough to compute every rank's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalOrder {
    /// Training samples in the dataset (over its training files, in
    /// manifest order).
    pub samples: usize,
    /// Nodes.
    pub nodes: usize,
    /// Training ranks on every node.
    pub ranks_per_node: usize,
    /// Samples per rank per step: each rank's share is cut to whole batches.
    pub batch: usize,
    /// The sampler's seed.
    pub seed: u64,
}

/// Where one read lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    /// The global sample id.
    pub sample: usize,
    /// The node of the rank reading it.
    pub node: usize,
    /// Its position in that node's read sequence.
    pub position: usize,
}

impl GlobalOrder {
    /// Ranks in the job.
    pub fn world(&self) -> usize {
        (self.nodes * self.ranks_per_node).max(1)
    }

    /// Samples each rank reads per epoch: its share of the sequence, cut
    /// to whole batches so every sample dealt is read.
    pub fn per_rank(&self) -> usize {
        let share = self.samples / self.world();
        share - share % self.batch.max(1)
    }

    /// Epoch `epoch`'s sequence, dealt round-robin to the ranks.
    pub fn sequence(&self, epoch: u64) -> Vec<usize> {
        shuffled_sequence(self.samples, self.world(), (self.seed, epoch), true, Remainder::Drop)
    }

    /// The `j`-th read of epoch `epoch` by global rank `rank` (nodes hold
    /// consecutive ranks), given that epoch's [`sequence`](Self::sequence).
    pub fn read_in(&self, sequence: &[usize], epoch: u64, rank: usize, j: usize) -> Read {
        let rpn = self.ranks_per_node.max(1);
        let (node, local) = (rank / rpn, rank % rpn);
        let position = ((epoch as usize * self.per_rank() + j) * rpn) + local;
        Read { sample: sequence[j * self.world() + rank], node, position }
    }

    /// [`read_in`](Self::read_in), computing the epoch's sequence.
    pub fn read(&self, epoch: u64, rank: usize, j: usize) -> Read {
        self.read_in(&self.sequence(epoch), epoch, rank, j)
    }

    /// The samples node `node` reads over `epochs` epochs, by position.
    pub fn node_reads(&self, node: usize, epochs: u64) -> Vec<usize> {
        self.reads_of_nodes(node..node + 1, epochs).pop().unwrap_or_default()
    }

    /// Every node's reads over `epochs` epochs, by position: each epoch's
    /// permutation drawn once for all of them.
    pub fn reads_by_node(&self, epochs: u64) -> Vec<Vec<usize>> {
        self.reads_of_nodes(0..self.nodes, epochs)
    }

    fn reads_of_nodes(&self, nodes: std::ops::Range<usize>, epochs: u64) -> Vec<Vec<usize>> {
        let rpn = self.ranks_per_node.max(1);
        let each = epochs as usize * self.per_rank() * rpn;
        let mut reads: Vec<Vec<usize>> = nodes.clone().map(|_| Vec::with_capacity(each)).collect();
        for epoch in 0..epochs {
            let sequence = self.sequence(epoch);
            for j in 0..self.per_rank() {
                for (node, node_reads) in nodes.clone().zip(reads.iter_mut()) {
                    let first = j * self.world() + node * rpn;
                    node_reads.extend_from_slice(&sequence[first..first + rpn]);
                }
            }
        }
        reads
    }

    /// The step (one sample per rank) at which epoch 0 first reads each of
    /// `samples_per_file` files' samples (`u64::MAX`: never): the order a
    /// service stages in.
    pub fn first_needed(&self, samples_per_file: &[usize]) -> Vec<u64> {
        let file = file_of_sample(samples_per_file);
        let mut first = vec![u64::MAX; samples_per_file.len()];
        let sequence = self.sequence(0);
        let dealt = self.per_rank() * self.world();
        for (at, &sample) in sequence.iter().take(dealt).enumerate() {
            let step = (at / self.world()) as u64;
            let f = &mut first[file[sample]];
            *f = (*f).min(step);
        }
        first
    }
}

/// The file of each sample of files holding `samples_per_file` samples each.
pub fn file_of_sample(samples_per_file: &[usize]) -> Vec<usize> {
    samples_per_file.iter().enumerate().flat_map(|(f, &n)| std::iter::repeat_n(f, n)).collect()
}

/// Samples per manifest file that a global shuffle trains on: those of the
/// files under `train_under` (all when `None`), none for index sidecars
/// and the rest.
pub fn train_samples(manifest: &Manifest, train_under: Option<&str>) -> Vec<usize> {
    manifest
        .files
        .iter()
        .map(|f| match train_under {
            Some(prefix) if !f.path.starts_with(prefix) => 0,
            _ => f.samples as usize,
        })
        .collect()
}

/// What a service with a global shuffle writes into its node's
/// destination (`DEST/.stagehand/global-shuffle.json`) before it answers
/// a client: how its clients compute their reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShuffleRecord {
    /// The order.
    pub order: GlobalOrder,
    /// Epochs the service fetches for.
    pub epochs: u64,
    /// Only files under this prefix hold training samples.
    pub train_under: Option<String>,
    /// The node holding each manifest file (`None`: no node; the service
    /// reads it from the source when needed).
    pub holders: Vec<Option<usize>>,
    /// This node's cache of other nodes' files (at their manifest paths).
    pub cache_dir: PathBuf,
}

/// Why a shuffle record cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ShuffleRecordError {
    /// Reading or writing it failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The record.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// It is not a record.
    #[error("{}: not a global-shuffle record: {source}", path.display())]
    Invalid {
        /// The record.
        path: PathBuf,
        /// Cause.
        source: serde_json::Error,
    },
}

impl ShuffleRecord {
    /// `DEST/.stagehand/global-shuffle.json`.
    pub fn path(dest: &Path) -> PathBuf {
        dest.join(STATE_DIR).join(RECORD_FILE)
    }

    /// Write it into `dest`, durably.
    pub fn write(&self, dest: &Path) -> Result<(), ShuffleRecordError> {
        let path = Self::path(dest);
        let io = |source| ShuffleRecordError::Io { path: path.clone(), source };
        let json = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        crate::atomic::write_durably(&path, &json).map_err(io)
    }

    /// The record in `dest`, or `None` when it has none (no global shuffle).
    pub fn read(dest: &Path) -> Result<Option<ShuffleRecord>, ShuffleRecordError> {
        let path = Self::path(dest);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map(Some).map_err(|source| ShuffleRecordError::Invalid { path, source })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ShuffleRecordError::Io { path, source }),
        }
    }

    /// Remove it from `dest` (the service ended: the destination is a
    /// plain staged shard again).
    pub fn remove(dest: &Path) {
        let _ = std::fs::remove_file(Self::path(dest));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Over an epoch, the nodes' positions number every read once, and
        /// the samples read are the dealt ones, each at most once.
        #[test]
        fn positions_number_each_nodes_reads_and_match_its_sequence(
            samples in 1usize..300, nodes in 1usize..5, rpn in 1usize..4, batch in 1usize..6, seed: u64,
        ) {
            let order = GlobalOrder { samples, nodes, ranks_per_node: rpn, batch, seed };
            let epochs = 2;
            let reads: Vec<Vec<usize>> = (0..nodes).map(|n| order.node_reads(n, epochs)).collect();
            let mut seen = vec![vec![false; order.per_rank() * rpn * epochs as usize]; nodes];
            for epoch in 0..epochs {
                let sequence = order.sequence(epoch);
                let mut read_this_epoch = std::collections::HashSet::new();
                for rank in 0..order.world() {
                    for j in 0..order.per_rank() {
                        let r = order.read_in(&sequence, epoch, rank, j);
                        prop_assert!(!seen[r.node][r.position], "position {} twice", r.position);
                        seen[r.node][r.position] = true;
                        prop_assert_eq!(reads[r.node][r.position], r.sample);
                        prop_assert!(read_this_epoch.insert(r.sample), "sample {} twice in an epoch", r.sample);
                    }
                }
            }
            prop_assert!(seen.iter().flatten().all(|&s| s));
        }
    }

    #[test]
    fn a_rank_reads_what_the_distributed_sampler_deals_it() {
        let order = GlobalOrder { samples: 50, nodes: 2, ranks_per_node: 2, batch: 4, seed: 3 };
        let sequence = order.sequence(1);
        let dealt: Vec<usize> = (0..order.per_rank()).map(|j| sequence[j * 4 + 3]).collect();
        let read: Vec<usize> = (0..order.per_rank()).map(|j| order.read(1, 3, j).sample).collect();
        assert_eq!(read, dealt);
        assert_eq!(order.per_rank(), 12, "50 / 4 = 12 per rank, 3 whole batches");
    }

    #[test]
    fn files_are_first_needed_at_the_step_of_their_first_sample() {
        let order = GlobalOrder { samples: 12, nodes: 2, ranks_per_node: 1, batch: 1, seed: 0 };
        let first = order.first_needed(&[4, 4, 4, 0]);
        let sequence = order.sequence(0);
        assert_eq!(first[sequence[0] / 4], 0);
        assert_eq!(first[3], u64::MAX, "a file without samples is never needed");
        assert!(first[..3].iter().all(|&s| s < 6));
    }

    #[test]
    fn a_record_survives_the_disk_and_a_destination_without_one_has_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ShuffleRecord::read(dir.path()).unwrap().is_none());
        std::fs::create_dir_all(dir.path().join(STATE_DIR)).unwrap();
        let record = ShuffleRecord {
            order: GlobalOrder { samples: 8, nodes: 2, ranks_per_node: 1, batch: 2, seed: 1 },
            epochs: 3,
            train_under: Some("train/".into()),
            holders: vec![Some(0), None, Some(1)],
            cache_dir: dir.path().join("cache"),
        };
        record.write(dir.path()).unwrap();
        assert_eq!(ShuffleRecord::read(dir.path()).unwrap(), Some(record));
        std::fs::write(ShuffleRecord::path(dir.path()), b"{").unwrap();
        let error = ShuffleRecord::read(dir.path()).unwrap_err();
        assert!(error.to_string().contains(RECORD_FILE), "{error}");
        ShuffleRecord::remove(dir.path());
        assert!(ShuffleRecord::read(dir.path()).unwrap().is_none());
    }
}
