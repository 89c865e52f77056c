//! Where the training and validation samples come from: a dataset directory
//! every rank can read (split into training and validation files), or what
//! the stager placed in this node's local storage.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::placement::Policy;
use loader::dataset::{CosmoTransform, CosmoflowDataset, Dataset, DatasetError};
use loader::sampler::{DistributedSampler, NodeLocalSampler, Remainder};

use super::TrainError;

/// The training data.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSource {
    /// A dataset directory (with `manifest.json`) that every rank reads.
    Dir(PathBuf),
    /// Node-local copies made by `stager stage`: `dest` is the same
    /// template, `policy`/`seed` the same placement, `manifest` the
    /// source's manifest.
    Staged {
        /// Node-local template (`/tmp/bb/node{node}`).
        dest: String,
        /// The source dataset's manifest.
        manifest: PathBuf,
        /// The stager's policy.
        policy: Policy,
        /// The stager's placement seed.
        seed: u64,
    },
}

/// A dataset whose indices are remapped: the node-local sampler speaks in
/// global sample ids, the dataset of this node's files in local ones.
pub struct Remapped {
    inner: CosmoflowDataset,
    /// The global id of each local sample, ascending
    /// ([`NodeLocalSampler::node_samples`]).
    global: Vec<usize>,
}

impl Dataset for Remapped {
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
        let local =
            self.global.binary_search(&index).map_err(|_| DatasetError::OutOfRange { index, len: self.inner.len() })?;
        self.inner.read_into(local, x, y)
    }
}

/// The training samples: all files of a directory, or this node's staged files.
pub enum TrainSet {
    /// Files every rank can read.
    Files(CosmoflowDataset),
    /// This node's staged files, addressed by global sample id.
    Staged(Remapped),
}

impl Dataset for TrainSet {
    fn len(&self) -> usize {
        match self {
            TrainSet::Files(d) => d.len(),
            TrainSet::Staged(d) => d.len(),
        }
    }
    fn x_len(&self) -> usize {
        match self {
            TrainSet::Files(d) => d.x_len(),
            TrainSet::Staged(d) => d.x_len(),
        }
    }
    fn y_len(&self) -> usize {
        match self {
            TrainSet::Files(d) => d.y_len(),
            TrainSet::Staged(d) => d.y_len(),
        }
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        match self {
            TrainSet::Files(d) => d.read_into(index, x, y),
            TrainSet::Staged(d) => d.read_into(index, x, y),
        }
    }
}

impl TrainSet {
    /// The first `n` samples this rank holds, and whether every rank holds
    /// the same ones (a shared directory) or only its node's (staged copies).
    pub fn first_samples(&self, n: usize) -> (Vec<usize>, bool) {
        match self {
            TrainSet::Files(d) => ((0..n.min(d.len())).collect(), true),
            TrainSet::Staged(d) => (d.global.iter().take(n).copied().collect(), false),
        }
    }
}

/// The training set of this rank and its per-epoch order.
pub struct TrainData {
    /// The dataset.
    pub dataset: Arc<TrainSet>,
    /// This rank's sample order for an epoch.
    pub order: Box<dyn Fn(u64) -> Vec<usize> + Send>,
    /// Cube edge and channels of the samples.
    pub shape: formats::cosmoflow::CosmoShape,
    /// Samples in the training set (all ranks).
    pub samples: usize,
}

/// Validation samples (read by every rank, each rank a strided share).
pub struct ValData {
    /// The dataset.
    pub dataset: Arc<CosmoflowDataset>,
}

fn load_manifest(path: &Path) -> Result<Manifest, TrainError> {
    Manifest::load(path).map_err(|e| TrainError::Data(format!("loading {}: {e}", path.display())))
}

fn data_error(e: DatasetError) -> TrainError {
    TrainError::Data(e.to_string())
}

/// Build the training and validation sets. With `val` absent and a
/// directory source, the last `val_fraction` of the sample files (whole
/// files, so sub-volumes of one simulation never straddle the split) are
/// held out.
pub fn open(
    world: &World,
    source: &DataSource,
    val: Option<&Path>,
    val_fraction: f64,
    seed: u64,
) -> Result<(TrainData, Option<ValData>), TrainError> {
    let transform = CosmoTransform::Log1p;
    match source {
        DataSource::Dir(dir) => {
            let manifest = load_manifest(&dir.join(MANIFEST_FILE))?;
            let shape = manifest
                .schema
                .cosmo_shape()
                .ok_or_else(|| TrainError::Data(format!("{} does not describe a CosmoFlow dataset", dir.display())))?;
            let sample_files: Vec<usize> =
                (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect();
            let held = if val.is_some() { 0 } else { (sample_files.len() as f64 * val_fraction).round() as usize };
            if held >= sample_files.len() && !sample_files.is_empty() {
                return Err(TrainError::Data(format!(
                    "--val-fraction {val_fraction} leaves no training files out of {}",
                    sample_files.len()
                )));
            }
            let (train_files, val_files) = sample_files.split_at(sample_files.len() - held);
            let dataset =
                CosmoflowDataset::from_manifest(dir, &manifest, Some(train_files), transform).map_err(data_error)?;
            let val = match val {
                Some(v) => Some(open_val(v)?),
                None if !val_files.is_empty() => Some(ValData {
                    dataset: Arc::new(
                        CosmoflowDataset::from_manifest(dir, &manifest, Some(val_files), transform)
                            .map_err(data_error)?,
                    ),
                }),
                None => None,
            };
            let samples = dataset.len();
            let sampler = DistributedSampler {
                len: samples,
                world: world.size(),
                rank: world.rank(),
                seed,
                shuffle: true,
                remainder: Remainder::Drop,
            };
            let train = TrainData {
                dataset: Arc::new(TrainSet::Files(dataset)),
                order: Box::new(move |e| sampler.indices(e)),
                shape,
                samples,
            };
            Ok((train, val))
        }
        DataSource::Staged { dest, manifest, policy, seed: placement_seed } => {
            let manifest = load_manifest(manifest)?;
            let shape = manifest
                .schema
                .cosmo_shape()
                .ok_or_else(|| TrainError::Data("the manifest does not describe a CosmoFlow dataset".into()))?;
            let topology = world.topology();
            let dir = cluster::paths::expand(dest, &topology.path_vars())
                .map_err(|e| TrainError::Data(format!("expanding --staged {dest}: {e}")))?;
            let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
            let counts: Vec<u64> = manifest.files.iter().map(|f| f.samples).collect();
            let ranks_per_node: Vec<usize> = (0..topology.nodes).map(|n| world.ranks_of_node(n).len()).collect();
            let sampler = NodeLocalSampler::new(
                &counts,
                &sizes,
                &manifest.followers(),
                &ranks_per_node,
                (topology.node, topology.local_rank),
                (*policy, *placement_seed),
                Remainder::Drop,
            )
            .map_err(|e| TrainError::Data(e.to_string()))?;
            let mine: Vec<usize> = sampler.node_files().iter().copied().filter(|&f| counts[f] > 0).collect();
            let inner = CosmoflowDataset::from_manifest(&dir, &manifest, Some(&mine), transform).map_err(data_error)?;
            if inner.len() != sampler.node_samples().len() {
                return Err(TrainError::Data(format!(
                    "node {} holds {} samples, the placement says {}",
                    topology.node,
                    inner.len(),
                    sampler.node_samples().len()
                )));
            }
            let samples = sampler.per_rank() * world.size();
            let dataset = Arc::new(TrainSet::Staged(Remapped { inner, global: sampler.node_samples().to_vec() }));
            let train = TrainData { dataset, order: Box::new(move |e| sampler.indices(e)), shape, samples };
            let val = val.map(open_val).transpose()?;
            Ok((train, val))
        }
    }
}

fn open_val(dir: &Path) -> Result<ValData, TrainError> {
    let manifest = load_manifest(&dir.join(MANIFEST_FILE))?;
    let dataset = CosmoflowDataset::from_manifest(dir, &manifest, None, CosmoTransform::Log1p).map_err(data_error)?;
    Ok(ValData { dataset: Arc::new(dataset) })
}
