//! `stager serve --global-shuffle`: a dataset sharded over the nodes
//! (each file on one node, as much of each shard as the node's capacity
//! keeps), trained on with a global permutation every epoch. The ranks'
//! reads are known in advance ([`GlobalOrder`]), so while the stage runs
//! each node's service fetches the files its ranks will read and does not
//! hold from the nodes that hold them, a window ahead of its clients
//! ([`crate::peers`]), into a bounded cache that evicts by furthest next
//! use. Files no node keeps are read from the source again when needed.
//! Its clients ask `NEED position` before a read and say `DONE position`
//! after it ([`formats::service`]); this module keeps the node's reads and
//! how far they are done.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use formats::global_order::{GlobalOrder, file_of_sample, train_samples};
use formats::manifest::Manifest;
use formats::placement::Policy;

use crate::peers::Progress;
use crate::traffic::kept_shards;

/// How to serve a global shuffle.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalConfig {
    /// Epochs the clients read (the fetcher walks their reads).
    pub epochs: u64,
    /// Samples per rank per step.
    pub batch: usize,
    /// The training shuffle's seed.
    pub shuffle_seed: u64,
    /// Bytes each node may hold: its shard, cut to fit, and the cache.
    /// `None`: the whole shard and a cache of `cache` bytes.
    pub capacity: Option<u64>,
    /// Of that, the room for other nodes' files. Default: a sixteenth of
    /// `capacity` (as `stager plan --capacity` models), unbounded without
    /// one.
    pub cache: Option<u64>,
    /// Reads the fetcher may run ahead of the node's clients.
    pub window: usize,
    /// What a full cache gives up (furthest next use, unless comparing).
    pub eviction: crate::capacity::Eviction,
    /// Where fetched files go (a template like `--dest`; default
    /// `DEST/.stagehand/peers`). A RAM tier: a directory in `/dev/shm`.
    pub cache_dir: Option<String>,
}

/// Why a global shuffle cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum GlobalError {
    /// Not `--policy shard`.
    #[error("--global-shuffle serves a dataset with each file on one node: give --policy shard, not {0}")]
    Policy(String),
    /// Nothing to read.
    #[error(
        "--global-shuffle: {samples} training samples give no whole batch of {batch} to each of {ranks} ranks \
         ({nodes} nodes of {per_node})"
    )]
    NoBatch {
        /// Training samples.
        samples: usize,
        /// Batch.
        batch: usize,
        /// Ranks.
        ranks: usize,
        /// Nodes.
        nodes: usize,
        /// Ranks per node.
        per_node: usize,
    },
    /// The cache is larger than the capacity.
    #[error("--cache {cache} bytes is more than --capacity {capacity} bytes")]
    CacheTooLarge {
        /// Cache.
        cache: u64,
        /// Capacity.
        capacity: u64,
    },
    /// The shards cannot be placed.
    #[error(transparent)]
    Placement(#[from] formats::placement::PlacementError),
}

/// What every node computes before staging: the order, which node keeps
/// each file, and what the stage places.
#[derive(Debug, Clone)]
pub struct GlobalPlan {
    /// The order.
    pub order: GlobalOrder,
    /// The node keeping each manifest file (`None`: read from the source).
    pub holders: Vec<Option<usize>>,
    /// The files each node stages.
    pub kept: Vec<Vec<usize>>,
    /// The step of epoch 0 at which each file is first read.
    pub first_needed: Vec<u64>,
    /// Room for other nodes' files on each node: at least the cache asked
    /// for, and what its shard left of the capacity (as
    /// [`crate::traffic`] models it).
    pub cache: Vec<u64>,
    /// Training samples in each manifest file.
    pub samples: Vec<usize>,
}

impl GlobalPlan {
    /// The plan for `manifest` on `nodes` nodes of `ranks_per_node`
    /// training ranks, placed with `policy` and `placement_seed`.
    pub fn new(
        manifest: &Manifest,
        (nodes, ranks_per_node): (usize, usize),
        (policy, placement_seed): (Policy, u64),
        train_under: Option<&str>,
        config: &GlobalConfig,
    ) -> Result<GlobalPlan, GlobalError> {
        if policy != Policy::Shard {
            return Err(GlobalError::Policy(policy.to_string()));
        }
        let samples = train_samples(manifest, train_under);
        let order = GlobalOrder {
            samples: samples.iter().sum(),
            nodes,
            ranks_per_node: ranks_per_node.max(1),
            batch: config.batch.max(1),
            seed: config.shuffle_seed,
        };
        if order.per_rank() == 0 {
            return Err(GlobalError::NoBatch {
                samples: order.samples,
                batch: order.batch,
                ranks: order.world(),
                nodes,
                per_node: order.ranks_per_node,
            });
        }
        let (shard_room, cache) = match config.capacity {
            None => (u64::MAX, config.cache.unwrap_or(u64::MAX)),
            Some(capacity) => {
                let cache = config.cache.unwrap_or(capacity / 16);
                if cache > capacity {
                    return Err(GlobalError::CacheTooLarge { cache, capacity });
                }
                (capacity - cache, cache)
            }
        };
        let shards = manifest.files_per_node(nodes, Policy::Shard, placement_seed)?;
        let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
        let (mut holders, held) = kept_shards(&shards, &sizes, &samples, shard_room);
        let cache = match config.capacity {
            None => vec![cache; nodes],
            Some(capacity) => held.iter().map(|&h| capacity - h).collect(),
        };
        // A sidecar is kept with its file; a file holding no training
        // samples (validation, statistics) where the shard put it.
        let followers = manifest.followers();
        for (node, shard) in shards.iter().enumerate() {
            for &f in shard {
                if samples[f] == 0 {
                    holders[f] = match followers[f] {
                        Some(leader) => holders[leader],
                        None => Some(node),
                    };
                }
            }
        }
        let mut kept = vec![Vec::new(); nodes];
        for (f, holder) in holders.iter().enumerate() {
            if let Some(node) = holder {
                kept[*node].push(f);
            }
        }
        let mut first_needed = order.first_needed(&samples);
        for (f, leader) in followers.iter().enumerate() {
            if let Some(leader) = leader {
                first_needed[f] = first_needed[*leader];
            }
        }
        Ok(GlobalPlan { order, holders, kept, first_needed, cache, samples })
    }

    /// The manifest file of each of `node`'s reads over `epochs` epochs.
    pub fn node_files(&self, node: usize, epochs: u64) -> Vec<usize> {
        let file = file_of_sample(&self.samples);
        self.order.node_reads(node, epochs).into_iter().map(|s| file[s]).collect()
    }
}

/// Where the file of a read is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// In the node's destination: this manifest file (once staged).
    Local(usize),
    /// In the node's cache.
    Cached,
}

/// A node's reads of a global shuffle and how far they are done.
pub struct GlobalReads {
    /// The manifest file of each read, by position.
    files: Vec<usize>,
    holders: Vec<Option<usize>>,
    node: usize,
    paths: Vec<String>,
    /// The fetcher's side.
    pub progress: Arc<Progress>,
    done: Mutex<Done>,
    /// Where fetched files are.
    pub cache_dir: PathBuf,
}

/// Reads done: all before `next`, and those in `above`.
#[derive(Default)]
struct Done {
    next: usize,
    above: BTreeSet<usize>,
}

impl GlobalReads {
    /// `node`'s reads (`files`, by position) over `manifest`, whose files
    /// `holders` keep, fetched through `progress` into `cache_dir`.
    pub fn new(
        manifest: &Manifest,
        (node, files): (usize, Vec<usize>),
        holders: Vec<Option<usize>>,
        progress: Arc<Progress>,
        cache_dir: PathBuf,
    ) -> GlobalReads {
        let paths = manifest.files.iter().map(|f| f.path.clone()).collect();
        GlobalReads { files, holders, node, paths, progress, done: Mutex::new(Done::default()), cache_dir }
    }

    /// Where the file of read `position` is: `Ok(None)` while it is still
    /// being fetched.
    pub fn need(&self, position: u64) -> Result<Option<Where>, String> {
        let (at, file) = self.file_of(position)?;
        if self.holders[file] == Some(self.node) {
            return Ok(Some(Where::Local(file)));
        }
        match self.progress.cached_for(file, at) {
            None => Ok(None),
            Some(Ok(())) => Ok(Some(Where::Cached)),
            Some(Err(e)) => Err(format!("{}: {e}", self.paths[file])),
        }
    }

    /// Read `position` is done: its file may go once no earlier read needs it.
    pub fn done(&self, position: u64) -> Result<(), String> {
        let (at, _) = self.file_of(position)?;
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        if at == done.next {
            let mut next = at + 1;
            while done.above.remove(&next) {
                next += 1;
            }
            done.next = next;
            self.progress.consumed(next);
        } else if at > done.next {
            done.above.insert(at);
        }
        Ok(())
    }

    fn file_of(&self, position: u64) -> Result<(usize, usize), String> {
        usize::try_from(position).ok().and_then(|at| self.files.get(at).map(|&f| (at, f))).ok_or_else(|| {
            format!("no read at position {position}: this node reads {} over the epochs served", self.files.len())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::peers::cache::Cache;
    use formats::manifest::{FileEntry, Schema};

    fn manifest(files: usize) -> Manifest {
        let entries = (0..files)
            .map(|i| FileEntry { path: format!("f{i:03}"), bytes: 100, samples: 2, xxh3: Default::default() })
            .collect();
        Manifest::new(Schema::opaque(), entries)
    }

    fn config(capacity: Option<u64>) -> GlobalConfig {
        GlobalConfig {
            epochs: 2,
            batch: 2,
            shuffle_seed: 5,
            capacity,
            cache: None,
            window: 4,
            eviction: crate::capacity::Eviction::FurthestNextUse,
            cache_dir: None,
        }
    }

    #[test]
    fn each_file_is_kept_by_at_most_one_node_and_capacity_cuts_the_shards() {
        let m = manifest(32);
        let full = GlobalPlan::new(&m, (4, 2), (Policy::Shard, 1), None, &config(None)).unwrap();
        assert!(full.holders.iter().all(Option::is_some), "no capacity: every file kept");
        assert_eq!(full.kept.iter().map(Vec::len).sum::<usize>(), 32);
        // 1600 bytes a node, 100 of them cache: 15 files of the 8 a shard has... all fit.
        // 480 a node, 30 cache: 4 files of each shard's 8.
        let cut = GlobalPlan::new(&m, (4, 2), (Policy::Shard, 1), None, &config(Some(480))).unwrap();
        assert_eq!(cut.kept.iter().map(Vec::len).collect::<Vec<_>>(), vec![4; 4]);
        assert_eq!(cut.holders.iter().filter(|h| h.is_none()).count(), 16);
        let error = GlobalPlan::new(&m, (4, 2), (Policy::Replicate, 1), None, &config(None)).unwrap_err();
        assert!(error.to_string().contains("--policy shard"), "{error}");
    }

    #[test]
    fn a_read_is_local_or_waits_for_the_fetcher_and_done_reads_move_the_watermark() {
        let m = manifest(4);
        let holders = vec![Some(0), Some(1), Some(0), Some(1)];
        let files = vec![0, 1, 2, 3];
        let progress = Arc::new(Progress::new(Cache::new(1000, &files, |f| holders[f] != Some(0))));
        let reads = GlobalReads::new(&m, (0, files), holders, progress, "/c".into());
        assert_eq!(reads.need(0).unwrap(), Some(Where::Local(0)));
        assert_eq!(reads.need(1).unwrap(), None, "another node's file, not fetched yet");
        assert!(reads.need(9).unwrap_err().contains("no read at position 9"));
        reads.done(1).unwrap();
        assert_eq!(reads.done.lock().unwrap().next, 0, "read 0 is not done");
        reads.done(0).unwrap();
        assert_eq!(reads.done.lock().unwrap().next, 2);
        reads.progress.fail("node 1 left");
        assert!(reads.need(3).unwrap_err().contains("node 1 left"));
    }
}
