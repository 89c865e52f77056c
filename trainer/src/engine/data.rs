//! Where the training and validation samples come from: a dataset directory
//! every rank can read (split into training and validation files), what
//! the stager placed in this node's local storage, or data each node
//! generated for itself. Which dataset type reads the files is the model's
//! business ([`TrainModel::open_dataset`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::placement_record::PlacementRecord;
use loader::dataset::{Dataset, DatasetError};
use loader::sampler::{BucketedSampler, DistributedSampler, Remainder};
use loader::staged::{NodePlace, NodeSamples, StagedShare};

use super::model::{Sampling, TrainModel};
use super::{TrainConfig, TrainError};

/// The training data.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSource {
    /// A dataset directory (with `manifest.json`) that every rank reads.
    Dir(PathBuf),
    /// Node-local copies made by `stager stage` into the same `--dest`
    /// template (`/tmp/bb/node{node}`): each node's placement record says
    /// what it holds.
    Staged {
        /// Node-local template.
        dest: String,
    },
    /// Data each node generated into its own storage (`simgen --out` with
    /// a node-local path, Laanait et al.'s workflow): every node has its
    /// own dataset and manifest at `template`, its ranks train on it, and
    /// the unique data grows with the number of nodes.
    NodeLocal {
        /// Node-local template (`/tmp/bb/node{node}/cbed`).
        template: String,
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
    fn locate(&self, index: usize) -> String {
        self.0.locate(index)
    }
}

/// Samples `start..start + len` of a dataset, numbered from 0: the part
/// of a node's own data it trains on, or holds out.
pub struct Slice {
    inner: Arc<dyn Dataset>,
    start: usize,
    len: usize,
}

impl Slice {
    fn index(&self, index: usize) -> Result<usize, DatasetError> {
        if index < self.len { Ok(self.start + index) } else { Err(DatasetError::OutOfRange { index, len: self.len }) }
    }
}

impl Dataset for Slice {
    fn len(&self) -> usize {
        self.len
    }
    fn x_len(&self) -> usize {
        self.inner.x_len()
    }
    fn y_len(&self) -> usize {
        self.inner.y_len()
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        self.inner.read_into(self.index(index)?, x, y)
    }
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        self.inner.read_ragged(self.index(index)?, x, y)
    }
    fn locate(&self, index: usize) -> String {
        self.index(index).map_or_else(|_| format!("sample {index}"), |inner| self.inner.locate(inner))
    }
}

/// The training samples: all files of a directory, this node's staged
/// files, or this node's own data.
pub enum TrainSet {
    /// Files every rank can read.
    Files(Arc<dyn Dataset>),
    /// This node's staged files, addressed by global sample id.
    Staged(NodeSamples),
    /// Data only this node has.
    NodeLocal(Slice),
}

impl TrainSet {
    fn inner(&self) -> &dyn Dataset {
        match self {
            TrainSet::Files(d) => &**d,
            TrainSet::Staged(d) => d,
            TrainSet::NodeLocal(d) => d,
        }
    }

    /// The first `n` samples this rank holds, and whether every rank holds
    /// the same ones (a shared directory) or only its node's (staged copies).
    pub fn first_samples(&self, n: usize) -> (Vec<usize>, bool) {
        match self {
            TrainSet::Files(d) => ((0..n.min(d.len())).collect(), true),
            TrainSet::Staged(d) => (d.global_ids().iter().take(n).copied().collect(), false),
            TrainSet::NodeLocal(d) => ((0..n.min(d.len())).collect(), false),
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
    fn locate(&self, index: usize) -> String {
        self.inner().locate(index)
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

/// Validation samples, each reader a strided share.
pub struct ValData {
    /// The dataset.
    pub dataset: Arc<Shared>,
    /// (which reader this rank is, readers): (rank, ranks) for a dataset
    /// every rank reads, (local rank, ranks on the node) for one only this
    /// node has.
    pub share: (usize, usize),
}

fn load_manifest(path: &Path) -> Result<Manifest, TrainError> {
    Ok(Manifest::load(path)?)
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
        DataSource::Staged { dest } => {
            // Only the destinations this machine holds: another node's
            // is checked by that node's ranks when they open it.
            for dir in node_local_dirs(dest)?.into_iter().filter(|d| d.is_dir()) {
                let (record, manifest) = PlacementRecord::open(&dir).map_err(TrainError::from)?;
                model.check_data(checked_dir(&record, &dir), &manifest)?;
            }
        }
        DataSource::NodeLocal { template } => {
            for dir in node_local_dirs(template)? {
                checked_manifest(model, &dir)?;
            }
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
    config: &TrainConfig,
) -> Result<(TrainData, Option<ValData>), TrainError> {
    let (source, val, val_fraction, seed) = (&config.source, config.val.as_deref(), config.val_fraction, config.seed);
    if let (Sampling::Bucketed { .. }, DataSource::Staged { .. } | DataSource::NodeLocal { .. }) =
        (model.sampling(), source)
    {
        return Err(TrainError::Invalid(format!(
            "model '{}' cuts batches from the traces' sorted order over the whole dataset: give it --data DIR, \
             which every rank reads",
            model.summary().name
        )));
    }
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
            let dataset = model.open_dataset(dir, &manifest, Some(train_files)).map_err(TrainError::from)?;
            let val = match val {
                Some(v) => Some(open_val(world, model, v)?),
                None if !val_files.is_empty() => Some(ValData {
                    dataset: Arc::new(Shared(
                        model.open_dataset(dir, &manifest, Some(val_files)).map_err(TrainError::from)?,
                    )),
                    share: (world.rank(), world.size()),
                }),
                None => None,
            };
            let samples = dataset.len();
            let order: Box<dyn Fn(u64) -> Vec<usize> + Send> = match model.sampling() {
                Sampling::Shuffled => {
                    let sampler = DistributedSampler {
                        len: samples,
                        world: world.size(),
                        rank: world.rank(),
                        seed,
                        shuffle: true,
                        remainder: Remainder::Drop,
                    };
                    Box::new(move |e| sampler.indices(e))
                }
                Sampling::Bucketed { buckets } => {
                    let (batch, world, rank) = (config.batch, world.size(), world.rank());
                    let sampler = BucketedSampler { len: samples, batch, buckets, world, rank, seed };
                    // The loader cuts the order into batches of `batch`, so
                    // the sampler's ranges come out as the batches it made.
                    Box::new(move |e| sampler.batches(e).into_iter().flatten().collect())
                }
            };
            let train = TrainData { dataset: Arc::new(TrainSet::Files(dataset)), order, samples };
            Ok((train, val))
        }
        DataSource::Staged { dest } => {
            let topology = world.topology();
            let dir = cluster::paths::expand(dest, &topology.path_vars())
                .map_err(|e| TrainError::Data(format!("expanding --staged {dest}: {e}")))?;
            let place = NodePlace {
                node: topology.node,
                local_rank: topology.local_rank,
                ranks_per_node: (0..topology.nodes).map(|n| world.ranks_of_node(n).len()).collect(),
            };
            // Files the dataset's own split keeps for validation hold no
            // training samples.
            let share = StagedShare::open(&dir, &place, |manifest| {
                model.split(manifest).map(|split| split.validation).unwrap_or_default()
            })
            .map_err(TrainError::from)?;
            model.check_data(checked_dir(share.record(), share.dir()), share.manifest())?;
            let inner = model
                .open_dataset(share.dir(), share.manifest(), Some(&share.sample_files()))
                .map_err(TrainError::from)?;
            let dataset = share.remap(inner).map_err(TrainError::from)?;
            let sampler = share.sampler(Remainder::Drop).map_err(TrainError::from)?;
            let samples = sampler.per_rank() * world.size();
            let dataset = Arc::new(TrainSet::Staged(dataset));
            let train = TrainData { dataset, order: Box::new(move |e| sampler.indices(e)), samples };
            let val = val.map(|v| open_val(world, model, v)).transpose()?;
            Ok((train, val))
        }
        DataSource::NodeLocal { template } => open_node_local(world, model, template, val, val_fraction, seed),
    }
}

/// This node's own dataset: the first `1 - val_fraction` of its samples
/// train (every rank of the node a share), the rest validate unless `val`
/// is given. Every rank takes as many steps as the rank with the fewest
/// samples, so nodes with a sample more or less stay in step.
fn open_node_local<M: TrainModel>(
    world: &World,
    model: &M,
    template: &str,
    val: Option<&Path>,
    val_fraction: f64,
    seed: u64,
) -> Result<(TrainData, Option<ValData>), TrainError> {
    use mpi::collective::SystemOperation;
    use mpi::traits::*;

    let topology = world.topology();
    let dir = cluster::paths::expand(template, &topology.path_vars())
        .map_err(|e| TrainError::Data(format!("expanding --node-local {template}: {e}")))?;
    let manifest = checked_manifest(model, &dir)?;
    let all = model.open_dataset(&dir, &manifest, None).map_err(TrainError::from)?;
    let held = if val.is_some() { 0 } else { (all.len() as f64 * val_fraction).round() as usize };
    let trained = all.len().saturating_sub(held);
    let sampler = DistributedSampler {
        len: trained,
        world: topology.local_size,
        rank: topology.local_rank,
        seed,
        shuffle: true,
        remainder: Remainder::Drop,
    };
    let mine = sampler.indices(0).len() as u64;
    let mut fewest = 0u64;
    world.comm().all_reduce_into(&mine, &mut fewest, SystemOperation::min());
    let per_rank = fewest as usize;
    let order = Box::new(move |epoch| {
        let mut order = sampler.indices(epoch);
        order.truncate(per_rank);
        order
    });
    let val = match val {
        Some(v) => Some(open_val(world, model, v)?),
        None if held > 0 => Some(ValData {
            dataset: Arc::new(Shared(Arc::new(Slice { inner: all.clone(), start: trained, len: held }))),
            share: (topology.local_rank, topology.local_size),
        }),
        None => None,
    };
    let dataset = Arc::new(TrainSet::NodeLocal(Slice { inner: all, start: 0, len: trained }));
    Ok((TrainData { dataset, order, samples: per_rank * world.size() }, val))
}

/// Where a model checks a staged dataset against itself: the source
/// directory, whose files every node can read, where it is still there (a
/// node may hold only some of the files, and not DeepCAM's `stats.h5`),
/// else the destination.
fn checked_dir<'a>(record: &'a PlacementRecord, dest: &'a Path) -> &'a Path {
    if record.source.is_dir() { &record.source } else { dest }
}

/// The directories `template` names on nodes 0, 1, ... that exist (just
/// the one when it has no `{node}`): what can be checked before MPI starts,
/// when a rank does not know its node yet.
pub fn node_local_dirs(template: &str) -> Result<Vec<PathBuf>, TrainError> {
    let expand = |node| {
        cluster::paths::expand(template, &cluster::paths::PathVars { node, rank: 0, local_rank: 0 })
            .map_err(|e| TrainError::Data(format!("expanding --node-local {template}: {e}")))
    };
    let mut dirs = vec![expand(0)?];
    if template.contains("{node}") {
        for node in 1.. {
            let dir = expand(node)?;
            if !dir.is_dir() {
                break;
            }
            dirs.push(dir);
        }
    }
    Ok(dirs)
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
fn open_val<M: TrainModel>(world: &World, model: &M, dir: &Path) -> Result<ValData, TrainError> {
    let manifest = checked_manifest(model, dir)?;
    let files = model.split(&manifest).map(|s| s.validation);
    let dataset = model.open_dataset(dir, &manifest, files.as_deref()).map_err(TrainError::from)?;
    Ok(ValData { dataset: Arc::new(Shared(dataset)), share: (world.rank(), world.size()) })
}
