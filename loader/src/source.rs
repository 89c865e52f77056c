//! Where a rank's samples come from, opened for that rank: a dataset
//! directory every rank reads (with the files held out for validation), a
//! destination `stager stage` filled (its placement record says what this
//! node holds), or data each node generated into its own storage. The
//! trainer and the Python package describe a [`Source`]; only this module
//! assembles the dataset, the sampler and the validation share from it.
//!
//! Which dataset type reads the files is the caller's business, asked
//! through [`Reader`] (the trainer's model, the Python package's catalog).
//! A rank is plain data ([`RankPlace`]), so the loader stays free of MPI:
//! the one thing ranks must agree on (how many samples every rank takes
//! when nodes hold different amounts) is left to the caller,
//! [`RankData::keep_per_rank`].
//!
//! ```no_run
//! use std::path::{Path, PathBuf};
//! use std::sync::Arc;
//!
//! use cluster::Topology;
//! use formats::manifest::Manifest;
//! use loader::catalog;
//! use loader::dataset::{CosmoTransform, Dataset, DatasetError};
//! use loader::source::{Origin, RankPlace, Reader, Source, SourceError, Validation};
//!
//! struct Catalog;
//! impl Reader for Catalog {
//!     type Error = SourceError;
//!     fn check(&self, _dir: &Path, _manifest: &Manifest) -> Result<(), SourceError> {
//!         Ok(())
//!     }
//!     fn open(&self, dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Result<Arc<dyn Dataset>, DatasetError> {
//!         Ok(catalog::from_manifest(dir, manifest, files, CosmoTransform::Log1p, None)?.dataset)
//!     }
//! }
//!
//! // Rank 3 of 4, two ranks on each of two nodes.
//! let place = RankPlace::grouped(3, 4, 2);
//! let source = Source { origin: Origin::Staged { dest: "/tmp/bb/node{node}".into() }, validation: Validation::None };
//! let data = source.open(&place, &Catalog, 7)?;
//! let batches = loader::pipeline::LoaderConfig { batch: 32, workers: 2, prefetch: 4, skip_corrupt: false, check_finite: false, drop_last: true };
//! println!("{} steps per epoch on this rank", batches.steps(&*data.sampler));
//! # Ok::<(), SourceError>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cluster::Topology;
use cluster::paths::{PathVars, TemplateError};
use formats::manifest::{MANIFEST_FILE, Manifest, ManifestError};
use formats::placement_record::PlacementRecord;

use formats::global_order::ShuffleRecord;

use crate::dataset::{Dataset, DatasetError, Slice};
use crate::global::{GlobalRank, GlobalShare};
use crate::sampler::{BucketedSampler, DistributedSampler, FirstOf, Remainder, Sampler};
use crate::served::FileOpener;
use crate::staged::{NodePlace, NodeSamples, StagedError, StagedShare};

/// Where the training samples are.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
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
    /// Samples of the reader's shapes made in memory
    /// ([`crate::synthetic`]): no file is read. `samples` over all ranks.
    Synthetic {
        /// Samples per epoch, over all ranks.
        samples: usize,
    },
    /// Samples a simulator makes as they are read, from their index (the
    /// reader's [`synthetic`](Reader::synthetic) dataset): every epoch new
    /// ones ([`FreshSampler`](crate::sampler::FreshSampler)), no file read
    /// for training; validated on a directory's samples if one is given.
    Simulated {
        /// Samples per epoch, over all ranks.
        samples: usize,
    },
}

/// Where the validation samples are.
#[derive(Debug, Clone, PartialEq)]
pub enum Validation {
    /// A dataset directory of its own (the files its layout keeps for
    /// validation, or all of them), every rank a strided share.
    Dir(PathBuf),
    /// Held out of the training data: the files the dataset's layout keeps
    /// for validation or else this fraction of its sample files (whole
    /// files, so sub-volumes of one simulation never straddle the split)
    /// for a directory; this fraction of each node's samples for node-local
    /// data. A staged destination holds no validation files.
    HeldOut(f64),
    /// No validation.
    None,
}

/// Where the training and validation samples come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// The training samples.
    pub origin: Origin,
    /// The validation samples.
    pub validation: Validation,
}

/// Which files of a dataset are for training and which for validation,
/// when the dataset's layout says so (DeepCAM's `train/` and
/// `validation/`): indices into its manifest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// Training files.
    pub train: Vec<usize>,
    /// Validation files.
    pub validation: Vec<usize>,
}

impl Split {
    /// The split of a dataset laid out in folders, as DeepCAM's and HEP-CNN's
    /// are: files under `train/` train, files under `validation/` validate;
    /// `None` for a dataset with neither folder.
    pub fn by_folders(manifest: &Manifest) -> Option<Split> {
        let under = |folder: &str| -> Vec<usize> {
            (0..manifest.files.len())
                .filter(|&i| manifest.files[i].samples > 0 && manifest.files[i].path.starts_with(folder))
                .collect()
        };
        let (train, validation) = (under("train/"), under("validation/"));
        (!train.is_empty() || !validation.is_empty()).then_some(Split { train, validation })
    }
}

/// How the training samples are ordered and dealt to the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampling {
    /// Samples shuffled over the ranks, every rank an equal share
    /// ([`DistributedSampler`]).
    #[default]
    Shuffled,
    /// Batches cut from consecutive samples in the dataset's own order
    /// (traces sorted by type), grouped into `buckets` buckets dealt out to
    /// the ranks in a shuffled order each epoch (Etalumis;
    /// [`BucketedSampler`]). Needs a directory every rank reads.
    Bucketed {
        /// Number of buckets.
        buckets: usize,
    },
}

/// What opening a source asks of whoever knows the dataset's type.
pub trait Reader {
    /// The reader's error; every failure of opening a source becomes one.
    type Error: From<SourceError>;

    /// Check that the dataset described by `manifest` (in `dir`) is one
    /// this reader reads, with the shapes it takes; the error names `dir`.
    fn check(&self, dir: &Path, manifest: &Manifest) -> Result<(), Self::Error>;

    /// Open the sample files `files` (indices into the manifest; all when
    /// `None`) of the dataset in `dir`.
    fn open(&self, dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Result<Arc<dyn Dataset>, DatasetError>;

    /// The dataset's own split into training and validation files, if its
    /// layout has one; `None` (the default) holds out a fraction instead.
    fn split(&self, manifest: &Manifest) -> Option<Split> {
        let _ = manifest;
        None
    }

    /// How batches are cut; shuffled samples by default.
    fn sampling(&self) -> Sampling {
        Sampling::Shuffled
    }

    /// [`open`](Self::open) as a value that outlives the reader, so a
    /// destination a staging service still fills can be opened file by
    /// file as each is first read. `None` (the default) opens such a
    /// destination once every file is in place.
    fn opener(&self) -> Option<FileOpener> {
        None
    }

    /// `samples` samples of the shapes this reader's samples have, made in
    /// memory ([`crate::synthetic`]); `None` (the default) if the reader's
    /// samples cannot be made without their files; an error if making
    /// them failed (a simulator's pilot run).
    fn synthetic(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, Self::Error> {
        let _ = samples;
        Ok(None)
    }
}

/// A source that cannot be opened. Every variant names what it read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A node-local template does not expand.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A manifest is missing or invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A staged destination cannot be trained from.
    #[error(transparent)]
    Staged(#[from] StagedError),
    /// A dataset's files cannot be opened.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// A served global shuffle cannot be read.
    #[error(transparent)]
    Global(#[from] crate::global::GlobalError),
    /// Synthetic samples were asked of a reader that cannot make them.
    #[error("this model's samples cannot be made without their files (no synthetic data)")]
    NoSyntheticData,
    /// A served global shuffle needs its files opened one by one.
    #[error("{}: a global shuffle opens each file as it is read, which this dataset's reader cannot", dest.display())]
    NoFileOpener {
        /// The destination.
        dest: PathBuf,
    },
    /// The held-out fraction leaves nothing to train on.
    #[error("{}: validation fraction {fraction} leaves no training files out of {files}", dir.display())]
    NothingToTrain {
        /// The dataset.
        dir: PathBuf,
        /// The fraction held out.
        fraction: f64,
        /// Its sample files.
        files: usize,
    },
    /// Batches cut from the whole dataset's order need every rank to read
    /// the whole dataset.
    #[error(
        "batches are cut from the sorted order of the whole dataset, which every rank must read: \
         give a dataset directory, not {origin}"
    )]
    BucketedNeedsDir {
        /// What was given instead.
        origin: &'static str,
    },
}

/// A rank, as plain data: where it is and how many ranks each node has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankPlace {
    /// Its rank, node and rank on the node.
    pub topology: Topology,
    /// Ranks on each node of the job.
    pub ranks_per_node: Vec<usize>,
}

impl RankPlace {
    /// Rank `rank` of `world`, consecutive ranks grouped `ranks_per_node`
    /// at a time into nodes (the last may have fewer), as the stager
    /// numbers them.
    pub fn grouped(rank: usize, world: usize, ranks_per_node: usize) -> RankPlace {
        let topology = Topology::grouped(rank, world, ranks_per_node);
        let k = ranks_per_node.max(1);
        let ranks_per_node = (0..topology.nodes).map(|n| k.min(world - n * k)).collect();
        RankPlace { topology, ranks_per_node }
    }

    fn node_place(&self) -> NodePlace {
        NodePlace {
            node: self.topology.node,
            local_rank: self.topology.local_rank,
            ranks_per_node: self.ranks_per_node.clone(),
        }
    }

    fn expand(&self, template: &str) -> Result<PathBuf, TemplateError> {
        cluster::paths::expand(template, &self.topology.path_vars())
    }
}

/// The training samples a rank reads.
pub enum TrainSet {
    /// Files every rank can read.
    Files(Arc<dyn Dataset>),
    /// This node's staged files, addressed by global sample id.
    Staged(NodeSamples),
    /// Data only this node has.
    NodeLocal(Slice),
    /// A global shuffle served from this node's shard and other nodes'.
    Global(Box<GlobalShare>),
}

impl TrainSet {
    fn inner(&self) -> &dyn Dataset {
        match self {
            TrainSet::Files(d) => &**d,
            TrainSet::Staged(d) => d,
            TrainSet::NodeLocal(d) => d,
            TrainSet::Global(d) => &**d,
        }
    }

    /// The first `n` samples this rank holds, and whether every rank holds
    /// the same ones (a shared directory) or only its node's (staged copies,
    /// node-local data).
    pub fn first_samples(&self, n: usize) -> (Vec<usize>, bool) {
        match self {
            TrainSet::Files(d) => ((0..n.min(d.len())).collect(), true),
            TrainSet::Staged(d) => (d.global_ids().iter().take(n).copied().collect(), false),
            TrainSet::NodeLocal(d) => ((0..n.min(d.len())).collect(), false),
            TrainSet::Global(d) => (d.own_samples(n), false),
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
    fn staging_wait_secs(&self) -> f64 {
        self.inner().staging_wait_secs()
    }
}

/// Validation samples and this rank's strided share of them.
pub struct ValSet {
    /// The dataset.
    pub dataset: Arc<dyn Dataset>,
    /// Which reader this rank is: (rank, ranks) for a dataset every rank
    /// reads, (local rank, ranks on the node) for one only this node has.
    pub reader: usize,
    /// How many read it.
    pub readers: usize,
}

impl ValSet {
    /// This rank's validation samples, in order.
    pub fn mine(&self) -> Vec<usize> {
        (self.reader..self.dataset.len()).step_by(self.readers.max(1)).collect()
    }
}

/// A source opened for one rank.
pub struct RankData {
    /// The training samples this rank reads.
    pub train: Arc<TrainSet>,
    /// This rank's order of them each epoch (the pipeline cuts it into batches).
    pub sampler: Box<dyn Sampler>,
    /// The validation samples, if any.
    pub validation: Option<ValSet>,
}

impl RankData {
    /// Take only the first `per_rank` samples of each epoch: every rank
    /// must take as many steps as the rank with the fewest samples (the
    /// minimum of [`LoaderConfig::per_rank`](crate::pipeline::LoaderConfig::per_rank)
    /// over the ranks, which the caller agrees on), or data-parallel
    /// training hangs at the next allreduce. Nodes of node-local data may hold a sample more or less.
    pub fn keep_per_rank(self, per_rank: usize) -> RankData {
        RankData { sampler: Box::new(FirstOf { inner: self.sampler, len: per_rank }), ..self }
    }
}

impl Source {
    /// Check every dataset this source would read against `reader`
    /// (manifests and schemas only, no sample read), before the job knows
    /// where its ranks are: every node's directory that this machine holds.
    pub fn check<R: Reader>(&self, reader: &R) -> Result<(), R::Error> {
        match &self.origin {
            Origin::Dir(dir) => {
                checked_manifest(reader, dir)?;
            }
            Origin::Staged { dest } => {
                // Only the destinations this machine holds: another node's
                // is checked by that node's ranks when they open it.
                for dir in node_local_dirs(dest).map_err(wrap)?.into_iter().filter(|d| d.is_dir()) {
                    let (record, manifest) = crate::staged::open_record(&dir).map_err(wrap)?;
                    reader.check(checked_dir(&record, &dir), &manifest)?;
                }
            }
            Origin::NodeLocal { template } => {
                for dir in node_local_dirs(template).map_err(wrap)? {
                    checked_manifest(reader, &dir)?;
                }
            }
            Origin::Synthetic { samples } | Origin::Simulated { samples } => {
                reader.synthetic(*samples)?.ok_or_else(|| wrap(SourceError::NoSyntheticData))?;
            }
        }
        if let Validation::Dir(dir) = &self.validation {
            checked_manifest(reader, dir)?;
        }
        Ok(())
    }

    /// Open this source for the rank at `place`, with sample orders seeded
    /// by `seed`.
    pub fn open<R: Reader>(&self, place: &RankPlace, reader: &R, seed: u64) -> Result<RankData, R::Error> {
        let (rank, world) = (place.topology.rank, place.topology.size);
        let bucketed = match reader.sampling() {
            Sampling::Bucketed { buckets } => Some(buckets),
            Sampling::Shuffled => None,
        };
        if let (Origin::Staged { dest }, None) = (&self.origin, bucketed)
            && let Some((dir, shuffle)) = served_globally(dest, place).map_err(wrap)?
        {
            return self.open_global(place, reader, seed, (dir, shuffle));
        }
        match (&self.origin, bucketed) {
            (Origin::Synthetic { samples }, _) => {
                let dataset = reader.synthetic(*samples)?.ok_or_else(|| wrap(SourceError::NoSyntheticData))?;
                let sampler =
                    DistributedSampler { len: *samples, world, rank, seed, shuffle: true, remainder: Remainder::Drop };
                Ok(RankData { train: Arc::new(TrainSet::Files(dataset)), sampler: Box::new(sampler), validation: None })
            }
            (Origin::Simulated { samples }, _) => {
                let dataset = reader.synthetic(*samples)?.ok_or_else(|| wrap(SourceError::NoSyntheticData))?;
                let sampler = crate::sampler::FreshSampler { per_epoch: *samples, world, rank };
                let validation = match &self.validation {
                    Validation::Dir(v) => Some(open_val(reader, v, rank, world)?),
                    _ => None,
                };
                Ok(RankData { train: Arc::new(TrainSet::Files(dataset)), sampler: Box::new(sampler), validation })
            }
            (Origin::Staged { .. }, Some(_)) => {
                Err(wrap(SourceError::BucketedNeedsDir { origin: "a staged destination" }))
            }
            (Origin::NodeLocal { .. }, Some(_)) => {
                Err(wrap(SourceError::BucketedNeedsDir { origin: "node-local data" }))
            }
            (Origin::Dir(dir), _) => {
                let manifest = checked_manifest(reader, dir)?;
                let (train_files, val_files) = self.held_out_files(reader, dir, &manifest)?;
                let dataset = reader.open(dir, &manifest, Some(&train_files)).map_err(wrap)?;
                let validation = match &self.validation {
                    Validation::Dir(v) => Some(open_val(reader, v, rank, world)?),
                    _ if !val_files.is_empty() => Some(ValSet {
                        dataset: reader.open(dir, &manifest, Some(&val_files)).map_err(wrap)?,
                        reader: rank,
                        readers: world,
                    }),
                    _ => None,
                };
                let len = dataset.len();
                let sampler: Box<dyn Sampler> = match bucketed {
                    None => Box::new(DistributedSampler {
                        len,
                        world,
                        rank,
                        seed,
                        shuffle: true,
                        remainder: Remainder::Drop,
                    }),
                    Some(buckets) => Box::new(BucketedSampler { len, buckets, world, rank, seed }),
                };
                Ok(RankData { train: Arc::new(TrainSet::Files(dataset)), sampler, validation })
            }
            (Origin::Staged { dest }, None) => {
                // Files the dataset's own split keeps for validation hold
                // no training samples.
                let share = open_staged(dest, place, |manifest| {
                    reader.split(manifest).map(|split| split.validation).unwrap_or_default()
                })
                .map_err(wrap)?;
                reader.check(checked_dir(share.record(), share.dir()), share.manifest())?;
                let dataset = share
                    .open_dataset(|dir, manifest, files| reader.open(dir, manifest, Some(files)), reader.opener())
                    .map_err(wrap)?;
                let sampler = share.sampler(Remainder::Drop).map_err(wrap)?;
                let validation = match &self.validation {
                    Validation::Dir(v) => Some(open_val(reader, v, rank, world)?),
                    _ => None,
                };
                Ok(RankData { train: Arc::new(TrainSet::Staged(dataset)), sampler: Box::new(sampler), validation })
            }
            (Origin::NodeLocal { template }, None) => {
                let topology = &place.topology;
                let dir = place.expand(template).map_err(wrap)?;
                let manifest = checked_manifest(reader, &dir)?;
                let all = reader.open(&dir, &manifest, None).map_err(wrap)?;
                let held = match self.validation {
                    Validation::HeldOut(fraction) => (all.len() as f64 * fraction).round() as usize,
                    _ => 0,
                };
                let trained = all.len().saturating_sub(held);
                let sampler = DistributedSampler {
                    len: trained,
                    world: topology.local_size,
                    rank: topology.local_rank,
                    seed,
                    shuffle: true,
                    remainder: Remainder::Drop,
                };
                let validation = match &self.validation {
                    Validation::Dir(v) => Some(open_val(reader, v, rank, world)?),
                    _ if held > 0 => Some(ValSet {
                        dataset: Arc::new(Slice::new(all.clone(), trained, held)),
                        reader: topology.local_rank,
                        readers: topology.local_size,
                    }),
                    _ => None,
                };
                let train = Arc::new(TrainSet::NodeLocal(Slice::new(all, 0, trained)));
                Ok(RankData { train, sampler: Box::new(sampler), validation })
            }
        }
    }

    /// A destination served with a global shuffle (`dir`, with its record),
    /// opened for the rank at `place`.
    fn open_global<R: Reader>(
        &self,
        place: &RankPlace,
        reader: &R,
        seed: u64,
        (dir, shuffle): (PathBuf, ShuffleRecord),
    ) -> Result<RankData, R::Error> {
        let (rank, world) = (place.topology.rank, place.topology.size);
        let (record, manifest) = PlacementRecord::open_while_served(&dir).map_err(|e| wrap(StagedError::from(e)))?;
        reader.check(checked_dir(&record, &dir), &manifest)?;
        let opener = reader.opener().ok_or_else(|| wrap(SourceError::NoFileOpener { dest: dir.clone() }))?;
        let me = GlobalRank {
            rank,
            nodes: place.ranks_per_node.len(),
            ranks_per_node: place.ranks_per_node[place.topology.node],
            batch: shuffle.order.batch,
            seed,
        };
        let share = GlobalShare::open(&dir, manifest, shuffle, me, opener).map_err(wrap)?;
        let sampler = share.sampler();
        let validation = match &self.validation {
            Validation::Dir(v) => Some(open_val(reader, v, rank, world)?),
            _ => None,
        };
        Ok(RankData { train: Arc::new(TrainSet::Global(Box::new(share))), sampler: Box::new(sampler), validation })
    }

    /// A directory's (training, validation) files: its layout's split, or
    /// the last fraction of its sample files held out; files without
    /// samples in neither.
    fn held_out_files<R: Reader>(
        &self,
        reader: &R,
        dir: &Path,
        manifest: &Manifest,
    ) -> Result<(Vec<usize>, Vec<usize>), R::Error> {
        let has_samples = |i: &usize| manifest.files[*i].samples > 0;
        let holds_out = !matches!(self.validation, Validation::Dir(_) | Validation::None);
        if let Some(split) = reader.split(manifest) {
            let held = if holds_out { split.validation } else { Vec::new() };
            return Ok((
                split.train.into_iter().filter(has_samples).collect(),
                held.into_iter().filter(has_samples).collect(),
            ));
        }
        let sample_files: Vec<usize> = (0..manifest.files.len()).filter(has_samples).collect();
        let fraction = match self.validation {
            Validation::HeldOut(fraction) => fraction,
            _ => 0.0,
        };
        let held = (sample_files.len() as f64 * fraction).round() as usize;
        if held >= sample_files.len() && !sample_files.is_empty() {
            return Err(wrap(SourceError::NothingToTrain { dir: dir.to_owned(), fraction, files: sample_files.len() }));
        }
        let (train, val) = sample_files.split_at(sample_files.len() - held);
        Ok((train.to_vec(), val.to_vec()))
    }
}

/// The destination the `dest` template names for the rank at `place`,
/// opened from its placement record ([`StagedShare::open`]; `left_out`
/// says which of the manifest's files hold no training samples): for
/// callers that open the node's files with a reader of their own, as the
/// Python package does.
pub fn open_staged(
    dest: &str,
    place: &RankPlace,
    left_out: impl FnOnce(&Manifest) -> Vec<usize>,
) -> Result<StagedShare, SourceError> {
    let dir = place.expand(dest)?;
    Ok(StagedShare::open(&dir, &place.node_place(), left_out)?)
}

/// The destination `dest` names for the rank at `place` and its
/// global-shuffle record, when a service serves one there (waiting for a
/// service that has not started as `STAGEHAND_SERVICE_WAIT` says).
fn served_globally(dest: &str, place: &RankPlace) -> Result<Option<(PathBuf, ShuffleRecord)>, SourceError> {
    let dir = place.expand(dest)?;
    if !crate::served::served(&dir).map_err(StagedError::from)? {
        return Ok(None);
    }
    Ok(ShuffleRecord::read(&dir).map_err(StagedError::from)?.map(|record| (dir, record)))
}

fn wrap<E: Into<SourceError>, F: From<SourceError>>(e: E) -> F {
    F::from(e.into())
}

/// The manifest of the dataset in `dir`, checked by the reader.
fn checked_manifest<R: Reader>(reader: &R, dir: &Path) -> Result<Manifest, R::Error> {
    let manifest = Manifest::load(&dir.join(MANIFEST_FILE)).map_err(wrap)?;
    reader.check(dir, &manifest)?;
    Ok(manifest)
}

/// The validation set in `dir`: the files its own split keeps for
/// validation, or all of them; every rank a strided share.
fn open_val<R: Reader>(reader: &R, dir: &Path, rank: usize, world: usize) -> Result<ValSet, R::Error> {
    let manifest = checked_manifest(reader, dir)?;
    let files = reader.split(&manifest).map(|s| s.validation);
    let dataset = reader.open(dir, &manifest, files.as_deref()).map_err(wrap)?;
    Ok(ValSet { dataset, reader: rank, readers: world })
}

/// Where a staged dataset is checked against its reader: the source
/// directory, whose files every node can read, where it is still there (a
/// node may hold only some of the files, and not DeepCAM's `stats.h5`),
/// else the destination.
fn checked_dir<'a>(record: &'a PlacementRecord, dest: &'a Path) -> &'a Path {
    if record.source.is_dir() { &record.source } else { dest }
}

/// The directories `template` names on nodes 0, 1, ... that exist (just
/// the one when it has no `{node}`): what can be checked before a rank
/// knows its node.
pub fn node_local_dirs(template: &str) -> Result<Vec<PathBuf>, SourceError> {
    let expand = |node| cluster::paths::expand(template, &PathVars { node, rank: 0, local_rank: 0 });
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
