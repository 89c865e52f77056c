//! Where the training and validation samples come from: a dataset directory
//! every rank can read (split into training and validation files), or what
//! the stager placed in this node's local storage. Which dataset type reads
//! the files is the model's business ([`TrainModel::open_dataset`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::placement::Policy;
use loader::dataset::{Dataset, DatasetError};
use loader::sampler::{DistributedSampler, NodeLocalSampler, Remainder};

use super::TrainError;
use super::model::TrainModel;

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

/// A dataset behind a trait object, usable where the loader wants a sized type.
pub struct Shared(pub Arc<dyn Dataset>);

impl Dataset for Shared {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn x_len(&self) -> usize {
        self.0.x_len()
    }
    fn y_len(&self) -> usize {
        self.0.y_len()
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        self.0.read_into(index, x, y)
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        self.0.read_ragged(index, x, y)
    }
}

/// A dataset whose indices are remapped: the node-local sampler speaks in
/// global sample ids, the dataset of this node's files in local ones.
pub struct Remapped {
    inner: Arc<dyn Dataset>,
    /// The global id of each local sample, ascending
    /// ([`NodeLocalSampler::node_samples`]).
    global: Vec<usize>,
}

impl Remapped {
    fn local(&self, index: usize) -> Result<usize, DatasetError> {
        self.global.binary_search(&index).map_err(|_| DatasetError::OutOfRange { index, len: self.inner.len() })
    }
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
        self.inner.read_into(self.local(index)?, x, y)
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        self.inner.read_ragged(self.local(index)?, x, y)
    }
}

/// The training samples: all files of a directory, or this node's staged files.
pub enum TrainSet {
    /// Files every rank can read.
    Files(Arc<dyn Dataset>),
    /// This node's staged files, addressed by global sample id.
    Staged(Remapped),
}

impl TrainSet {
    fn inner(&self) -> &dyn Dataset {
        match self {
            TrainSet::Files(d) => &**d,
            TrainSet::Staged(d) => d,
        }
    }

    /// The first `n` samples this rank holds, and whether every rank holds
    /// the same ones (a shared directory) or only its node's (staged copies).
    pub fn first_samples(&self, n: usize) -> (Vec<usize>, bool) {
        match self {
            TrainSet::Files(d) => ((0..n.min(d.len())).collect(), true),
            TrainSet::Staged(d) => (d.global.iter().take(n).copied().collect(), false),
        }
    }
}

impl Dataset for TrainSet {
    fn len(&self) -> usize {
        self.inner().len()
    }
    fn x_len(&self) -> usize {
        self.inner().x_len()
    }
    fn y_len(&self) -> usize {
        self.inner().y_len()
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        self.inner().read_into(index, x, y)
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        self.inner().read_ragged(index, x, y)
    }
}

/// The training set of this rank and its per-epoch order.
pub struct TrainData {
    /// The dataset.
    pub dataset: Arc<TrainSet>,
    /// This rank's sample order for an epoch.
    pub order: Box<dyn Fn(u64) -> Vec<usize> + Send>,
    /// Samples in the training set (all ranks).
    pub samples: usize,
}

/// Validation samples (read by every rank, each rank a strided share).
pub struct ValData {
    /// The dataset.
    pub dataset: Arc<Shared>,
}

fn load_manifest(path: &Path) -> Result<Manifest, TrainError> {
    Manifest::load(path).map_err(|e| TrainError::Data(format!("loading {}: {e}", path.display())))
}

fn data_error(e: DatasetError) -> TrainError {
    TrainError::Data(e.to_string())
}

/// The manifest of the dataset in `dir`, checked against the model.
fn checked_manifest<M: TrainModel>(model: &M, dir: &Path) -> Result<Manifest, TrainError> {
    let manifest = load_manifest(&dir.join(MANIFEST_FILE))?;
    model.check_data(dir, &manifest)?;
    Ok(manifest)
}

/// Check every dataset a run would read against the model (manifests and
/// schemas only, no sample read): what `trainer train` does before MPI
/// starts, so a dataset of the wrong kind fails with one line.
pub fn check<M: TrainModel>(model: &M, source: &DataSource, val: Option<&Path>) -> Result<(), TrainError> {
    match source {
        DataSource::Dir(dir) => {
            checked_manifest(model, dir)?;
        }
        DataSource::Staged { manifest, .. } => {
            let dir = manifest.parent().unwrap_or(Path::new("."));
            model.check_data(dir, &load_manifest(manifest)?)?;
        }
    }
    if let Some(val) = val {
        checked_manifest(model, val)?;
    }
    Ok(())
}

/// Build the training and validation sets. With `val` absent and a
/// directory source, the last `val_fraction` of the sample files (whole
/// files, so sub-volumes of one simulation never straddle the split) are
/// held out.
pub fn open<M: TrainModel>(
    world: &World,
    model: &M,
    source: &DataSource,
    val: Option<&Path>,
    val_fraction: f64,
    seed: u64,
) -> Result<(TrainData, Option<ValData>), TrainError> {
    match source {
        DataSource::Dir(dir) => {
            let manifest = checked_manifest(model, dir)?;
            let has_samples = |i: &usize| manifest.files[*i].samples > 0;
            let (train_files, val_files) = match model.split(&manifest) {
                Some(split) => {
                    let held = if val.is_some() { Vec::new() } else { split.validation };
                    (
                        split.train.into_iter().filter(has_samples).collect(),
                        held.into_iter().filter(has_samples).collect(),
                    )
                }
                None => held_out(&manifest, val.is_some(), val_fraction)?,
            };
            let (train_files, val_files) = (&train_files[..], &val_files[..]);
            let dataset = model.open_dataset(dir, &manifest, Some(train_files)).map_err(data_error)?;
            let val = match val {
                Some(v) => Some(open_val(model, v)?),
                None if !val_files.is_empty() => Some(ValData {
                    dataset: Arc::new(Shared(model.open_dataset(dir, &manifest, Some(val_files)).map_err(data_error)?)),
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
                samples,
            };
            Ok((train, val))
        }
        DataSource::Staged { dest, manifest: manifest_path, policy, seed: placement_seed } => {
            let manifest = load_manifest(manifest_path)?;
            model.check_data(manifest_path.parent().unwrap_or(Path::new(".")), &manifest)?;
            let topology = world.topology();
            let dir = cluster::paths::expand(dest, &topology.path_vars())
                .map_err(|e| TrainError::Data(format!("expanding --staged {dest}: {e}")))?;
            let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
            // Files the dataset's own split keeps for validation hold no
            // training samples: they are placed as staged, never sampled.
            let mut counts: Vec<u64> = manifest.files.iter().map(|f| f.samples).collect();
            if let Some(split) = model.split(&manifest) {
                for &f in &split.validation {
                    counts[f] = 0;
                }
            }
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
            let inner = model.open_dataset(&dir, &manifest, Some(&mine)).map_err(data_error)?;
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
            let train = TrainData { dataset, order: Box::new(move |e| sampler.indices(e)), samples };
            let val = val.map(|v| open_val(model, v)).transpose()?;
            Ok((train, val))
        }
    }
}

/// The last `val_fraction` of the sample files held out for validation
/// (none when a separate validation set is given): (training, validation).
fn held_out(manifest: &Manifest, separate: bool, val_fraction: f64) -> Result<(Vec<usize>, Vec<usize>), TrainError> {
    let sample_files: Vec<usize> = (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect();
    let held = if separate { 0 } else { (sample_files.len() as f64 * val_fraction).round() as usize };
    if held >= sample_files.len() && !sample_files.is_empty() {
        return Err(TrainError::Data(format!(
            "--val-fraction {val_fraction} leaves no training files out of {}",
            sample_files.len()
        )));
    }
    let (train, val) = sample_files.split_at(sample_files.len() - held);
    Ok((train.to_vec(), val.to_vec()))
}

/// The validation set in `dir`: the files its own split keeps for
/// validation, or all of them.
fn open_val<M: TrainModel>(model: &M, dir: &Path) -> Result<ValData, TrainError> {
    let manifest = checked_manifest(model, dir)?;
    let files = model.split(&manifest).map(|s| s.validation);
    let dataset = model.open_dataset(dir, &manifest, files.as_deref()).map_err(data_error)?;
    Ok(ValData { dataset: Arc::new(Shared(dataset)) })
}
