//! A staged destination opened for one rank: what `stager stage` placed on
//! the rank's node (its placement record), the node-local sampler over
//! exactly those files, and the node's dataset addressed by the source
//! dataset's global sample ids. The trainer and the Python package both
//! open a staged destination through [`StagedShare::open`]; which dataset
//! type reads the files stays theirs.
//!
//! ```no_run
//! use loader::sampler::Remainder;
//! use loader::staged::{NodePlace, StagedShare};
//!
//! // Rank 1 of 4, two ranks on each of two nodes: node 0, local rank 1.
//! let place = NodePlace { node: 0, local_rank: 1, ranks_per_node: vec![2, 2] };
//! let share = StagedShare::open(std::path::Path::new("/tmp/bb/node0"), &place, |_| Vec::new())?;
//! let sampler = share.sampler(Remainder::Drop)?;
//! println!("{} samples per rank per epoch from {:?}", sampler.per_rank(), share.sample_files());
//! # Ok::<(), loader::staged::StagedError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use formats::manifest::Manifest;
use formats::placement::PlacementError;
use formats::placement_record::{PlacementRecord, RecordError};

use crate::dataset::{Dataset, DatasetError};
use crate::sampler::{NodeLocalSampler, Remainder};
use crate::served::{FileOpener, ServedFiles, Waiter};

/// Where a rank is, as plain data (the loader knows no MPI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlace {
    /// The rank's node.
    pub node: usize,
    /// Its rank among the node's ranks.
    pub local_rank: usize,
    /// Ranks on each node of the job.
    pub ranks_per_node: Vec<usize>,
}

/// A staged destination this rank cannot train from. Every variant names
/// the destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StagedError {
    /// The placement record is missing, unreadable or does not match.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The destination was staged for another node or node count.
    #[error(
        "{}: staged as node {staged_node} of {staged_nodes}, opened by a rank of node {node} of {nodes}; \
         train with as many nodes as were staged, each on its own destination",
        dest.display()
    )]
    OtherNode {
        /// The destination.
        dest: PathBuf,
        /// The node the record names.
        staged_node: usize,
        /// The node count the record names.
        staged_nodes: usize,
        /// The opening rank's node.
        node: usize,
        /// The job's node count.
        nodes: usize,
    },
    /// The recorded placement cannot be computed again (another build's
    /// placement function, or an infeasible policy).
    #[error("{}: the recorded placement: {source}", dest.display())]
    Placement {
        /// The destination.
        dest: PathBuf,
        /// Cause.
        source: PlacementError,
    },
    /// Recomputing the recorded placement gives other files than the record.
    #[error(
        "{}: the placement ({policy}, seed {seed}) puts other files on node {node} than the record lists; \
         restage it with this build's `stager stage`",
        dest.display()
    )]
    Recomputed {
        /// The destination.
        dest: PathBuf,
        /// The recorded policy.
        policy: formats::placement::Policy,
        /// The recorded seed.
        seed: u64,
        /// The node.
        node: usize,
    },
    /// The destination is served with a global shuffle, whose reads need
    /// its service for every sample ([`crate::global`]).
    #[error(
        "{}: it is served with a global shuffle (`stager serve --global-shuffle`), whose files are spread over \
         the nodes; read it with the trainer's --staged, which asks the service for each sample",
        dest.display()
    )]
    GlobalShuffle {
        /// The destination.
        dest: PathBuf,
    },
    /// The global-shuffle record cannot be read.
    #[error(transparent)]
    ShuffleRecord(#[from] formats::global_order::ShuffleRecordError),
    /// The destination's staging service could not be reached.
    #[error(transparent)]
    Service(#[from] formats::service::ServiceError),
    /// The node's dataset could not be opened.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// The node's dataset holds another number of samples than its files.
    #[error("{}: node {node} holds {found} samples, its placement record says {recorded}", dest.display())]
    Samples {
        /// The destination.
        dest: PathBuf,
        /// The node.
        node: usize,
        /// Samples the opened dataset holds.
        found: usize,
        /// Samples the record's files hold.
        recorded: usize,
    },
}

/// One node's staged files, opened for one of its ranks.
pub struct StagedShare {
    dir: PathBuf,
    record: PlacementRecord,
    manifest: Manifest,
    place: NodePlace,
    /// Samples of each manifest file this reader trains on (0 for files
    /// it leaves out, and for files without samples).
    counts: Vec<u64>,
    sampler: NodeLocalSampler,
    /// The staging service still filling the destination, if one is.
    service: Option<Arc<Waiter>>,
}

impl StagedShare {
    /// Read `dir`'s placement record, check it was staged for `place`'s
    /// node and node count and that the placement it names still gives its
    /// files. `left_out(manifest)` names the files (manifest indices) whose
    /// samples this reader does not train on (a model's validation split,
    /// files outside a Python prefix); they are placed, never sampled.
    pub fn open(
        dir: &Path,
        place: &NodePlace,
        left_out: impl FnOnce(&Manifest) -> Vec<usize>,
    ) -> Result<Self, StagedError> {
        let name = format!("node {} local rank {} (pid {})", place.node, place.local_rank, std::process::id());
        let served = crate::served::served(dir)?;
        if served && formats::global_order::ShuffleRecord::read(dir)?.is_some() {
            return Err(StagedError::GlobalShuffle { dest: dir.to_owned() });
        }
        let service = if served { Waiter::connect(dir, &name)? } else { None };
        let (record, manifest) = match service {
            Some(_) => PlacementRecord::open_while_served(dir)?,
            None => PlacementRecord::open(dir)?,
        };
        let nodes = place.ranks_per_node.len();
        if record.nodes != nodes || record.node != place.node {
            return Err(StagedError::OtherNode {
                dest: dir.to_owned(),
                staged_node: record.node,
                staged_nodes: record.nodes,
                node: place.node,
                nodes,
            });
        }
        let mut counts: Vec<u64> = manifest.files.iter().map(|f| f.samples).collect();
        for file in left_out(&manifest) {
            if let Some(count) = counts.get_mut(file) {
                *count = 0;
            }
        }
        let sampler = node_sampler(dir, &manifest, &record, place, &counts, Remainder::Drop)?;
        if sampler.node_files() != record.file_indices() {
            return Err(StagedError::Recomputed {
                dest: dir.to_owned(),
                policy: record.policy,
                seed: record.seed,
                node: place.node,
            });
        }
        Ok(StagedShare { dir: dir.to_owned(), record, manifest, place: place.clone(), counts, sampler, service })
    }

    /// The node-local sampler over this node's kept samples with `remainder`.
    pub fn sampler(&self, remainder: Remainder) -> Result<NodeLocalSampler, StagedError> {
        // The one `open` built: the placement of every node is not cheap to recompute.
        if remainder == Remainder::Drop {
            return Ok(self.sampler.clone());
        }
        node_sampler(&self.dir, &self.manifest, &self.record, &self.place, &self.counts, remainder)
    }

    /// The destination directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The source dataset's manifest, as staged.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The placement record.
    pub fn record(&self) -> &PlacementRecord {
        &self.record
    }

    /// The manifest indices of the node's files whose samples are kept, to
    /// open the node's dataset over.
    pub fn sample_files(&self) -> Vec<usize> {
        self.record.files.iter().map(|f| f.index).filter(|&f| self.counts[f] > 0).collect()
    }

    /// The global ids of the node's kept samples, ascending: position `k` is
    /// sample `k` of the dataset over [`sample_files`](Self::sample_files).
    pub fn node_samples(&self) -> &[usize] {
        self.sampler.node_samples()
    }

    /// Where the source kept `file` (for a file a node may lack, like
    /// DeepCAM's statistics under `per-node=N`).
    pub fn source_file(&self, file: &str) -> PathBuf {
        self.record.source.join(file)
    }

    /// The staging service filling this destination, if one is.
    pub fn service(&self) -> Option<&Arc<Waiter>> {
        self.service.as_ref()
    }

    /// The node's dataset over [`sample_files`](Self::sample_files),
    /// addressed by global sample id, opened by `open` (all files at once)
    /// or, while a staging service fills the destination, by `opener` file
    /// by file as each is first read. Without an `opener` a served
    /// destination is opened once the service has every sample file.
    pub fn open_dataset(
        &self,
        open: impl FnOnce(&Path, &Manifest, &[usize]) -> Result<Arc<dyn Dataset>, DatasetError>,
        opener: Option<FileOpener>,
    ) -> Result<NodeSamples, StagedError> {
        let files = self.sample_files();
        let inner: Arc<dyn Dataset> = match (&self.service, opener) {
            (None, _) => open(&self.dir, &self.manifest, &files)?,
            (Some(waiter), Some(opener)) => {
                // The file this rank reads first: the service stages it
                // among the first, and it tells the samples' shapes.
                let first_id = self.sampler.indices(0).first().copied().unwrap_or(0);
                let first_file = self
                    .record
                    .files
                    .iter()
                    .rposition(|f| f.first_sample <= first_id as u64 && self.counts[f.index] > 0);
                let first =
                    first_file.and_then(|r| files.iter().position(|&f| f == self.record.files[r].index)).unwrap_or(0);
                Arc::new(ServedFiles::open(
                    &self.dir,
                    &self.manifest,
                    files,
                    &self.counts,
                    opener,
                    waiter.clone(),
                    first,
                )?)
            }
            (Some(waiter), None) => {
                let paths: Vec<&str> = self.record.files.iter().map(|f| f.path.as_str()).collect();
                waiter.wait(&paths)?;
                open(&self.dir, &self.manifest, &files)?
            }
        };
        self.remap(inner)
    }

    /// The node's dataset over [`sample_files`](Self::sample_files),
    /// addressed by global sample id.
    pub fn remap(&self, node_dataset: Arc<dyn Dataset>) -> Result<NodeSamples, StagedError> {
        self.check_samples(node_dataset.len())?;
        Ok(NodeSamples { inner: node_dataset, global: self.node_samples().to_vec(), service: self.service.clone() })
    }

    /// An error unless a dataset of `found` samples is the one over
    /// [`sample_files`](Self::sample_files).
    fn check_samples(&self, found: usize) -> Result<(), StagedError> {
        let recorded = self.node_samples().len();
        if found == recorded {
            return Ok(());
        }
        Err(StagedError::Samples { dest: self.dir.clone(), node: self.place.node, found, recorded })
    }
}

/// `dir`'s placement record and manifest copy, checked against the files
/// present unless a staging service is still filling `dir` (it answers for
/// each file as it is read; see [`served`](crate::served::served) for a
/// service still starting).
pub fn open_record(dir: &Path) -> Result<(PlacementRecord, Manifest), StagedError> {
    Ok(if crate::served::served(dir)? { PlacementRecord::open_while_served(dir)? } else { PlacementRecord::open(dir)? })
}

fn node_sampler(
    dir: &Path,
    manifest: &Manifest,
    record: &PlacementRecord,
    place: &NodePlace,
    counts: &[u64],
    remainder: Remainder,
) -> Result<NodeLocalSampler, StagedError> {
    let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
    NodeLocalSampler::new(
        counts,
        &sizes,
        &manifest.followers(),
        &place.ranks_per_node,
        (place.node, place.local_rank),
        (record.policy, record.seed),
        remainder,
    )
    .map_err(|source| StagedError::Placement { dest: dir.to_owned(), source })
}

/// A node's dataset addressed by global sample id: the node-local sampler
/// speaks in global ids, the dataset of the node's files in local ones.
pub struct NodeSamples {
    inner: Arc<dyn Dataset>,
    /// The global id of each local sample, ascending.
    global: Vec<usize>,
    /// The staging service this share waited on, if one served it: it
    /// counts every wait, for files opened one by one or all up front.
    service: Option<Arc<Waiter>>,
}

impl NodeSamples {
    fn local(&self, index: usize) -> Result<usize, DatasetError> {
        self.global.binary_search(&index).map_err(|_| DatasetError::OutOfRange { index, len: self.inner.len() })
    }

    /// The global ids this node holds, ascending.
    pub fn global_ids(&self) -> &[usize] {
        &self.global
    }

    /// The node's dataset, by local id.
    pub fn local_dataset(&self) -> &Arc<dyn Dataset> {
        &self.inner
    }
}

impl Dataset for NodeSamples {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn x_len(&self) -> usize {
        self.inner.x_len()
    }
    fn y_len(&self) -> usize {
        self.inner.y_len()
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        self.inner.read_into(self.local(index)?, x, y)
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        self.inner.read_ragged(self.local(index)?, x, y)
    }
    fn locate(&self, index: usize) -> String {
        self.local(index).map_or_else(|_| format!("sample {index}"), |local| self.inner.locate(local))
    }
    fn staging_wait_secs(&self) -> f64 {
        self.service.as_ref().map_or_else(|| self.inner.staging_wait_secs(), |waiter| waiter.waited_secs())
    }
}
