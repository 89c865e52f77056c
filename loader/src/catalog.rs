//! Any dataset Stagehand writes, opened by its kind, with the shapes of its
//! arrays: what a consumer that does not know the kind in advance (the
//! Python package) opens, from a manifest or from a list of files.
//!
//! | kind | input `x` | target `y` |
//! |---|---|---|
//! | CosmoFlow TFRecord | counts (D, D, D, C), `log(x+1)` or divided by the mean | 4 parameters |
//! | DeepCAM HDF5 | (C, H, W), min-max normalised by `stats.h5` | class ids (H, W) |
//! | scattering LMDB | CBED stack (positions, H, W) | projected potential (H, W) |
//! | trace LMDB | the observation | [`CHOICE_WIDTH`](crate::traces::CHOICE_WIDTH) values per controlled choice (ragged) |
//! | records ([`crate::records`]): TFRecord, `.npz`, HDF5 by name | each sample's bytes (lengths may differ) | none |
//!
//! ```no_run
//! use loader::catalog;
//! use loader::dataset::CosmoTransform;
//! use formats::manifest::Manifest;
//!
//! let dir = std::path::Path::new("/data/cosmo");
//! let manifest = Manifest::load(&dir.join("manifest.json"))?;
//! let opened = catalog::from_manifest(dir, &manifest, None, CosmoTransform::Log1p, None)?;
//! println!("{} samples of {:?}", opened.dataset.len(), opened.x_shape);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use formats::climate::{self, ClimateShape, STATS_FILE};
use formats::cosmoflow::{CosmoShape, TARGETS};
use formats::manifest::{Manifest, SampleKind};

use crate::dataset::{CosmoTransform, CosmoflowDataset, Dataset, DatasetError};
use crate::deepcam::DeepcamDataset;
use crate::lmdb::ScatteringStores;
use crate::records::{Hdf5Rows, NpzArrays, SampleAxis, TfRecords};
use crate::traces::TraceStores;

/// An opened dataset and what its samples look like.
pub struct Opened {
    /// The samples.
    pub dataset: Arc<dyn Dataset>,
    /// Which kind of data.
    pub kind: SampleKind,
    /// Shape of one input, C order.
    pub x_shape: Vec<usize>,
    /// Shape of one target; `None` when targets differ in length (traces).
    pub y_shape: Option<Vec<usize>>,
    /// The files (or LMDB store directories) read, in sample order.
    pub paths: Vec<PathBuf>,
    /// Traces only: the address of each layout position a target names.
    pub addresses: Vec<String>,
}

/// The samples of the files `files` (manifest indices; every file with
/// samples when `None`) of the dataset in `dir`, read as its manifest's
/// schema says. `transform` applies to CosmoFlow counts only; DeepCAM
/// samples are normalised by `dir/stats.h5`, or by `fallback_stats` where
/// `dir` has none (a node that staged no copy of it).
pub fn from_manifest(
    dir: &Path,
    manifest: &Manifest,
    files: Option<&[usize]>,
    transform: CosmoTransform,
    fallback_stats: Option<&Path>,
) -> Result<Opened, DatasetError> {
    let paths = sample_paths(dir, manifest, files);
    let schema_error =
        |reason: &str| DatasetError::Shape { path: dir.join("manifest.json"), key: 0, reason: reason.to_owned() };
    match manifest.schema.kind {
        SampleKind::Cosmoflow => {
            let shape = manifest.schema.cosmo_shape().ok_or(DatasetError::NotCosmoflow)?;
            cosmoflow(&paths, shape, transform)
        }
        SampleKind::Deepcam => {
            let data = manifest.schema.fields.iter().find(|f| f.name == climate::DATA);
            let shape = match data.map(|f| f.shape.as_slice()) {
                Some(&[height, width, channels]) => ClimateShape { height, width, channels },
                _ => return Err(schema_error("the DeepCAM schema has no (height, width, channels) climate/data")),
            };
            let stats = match (dir.join(STATS_FILE), fallback_stats) {
                (local, Some(fallback)) if !local.exists() => fallback.to_owned(),
                (local, _) => local,
            };
            deepcam_with_shape(&paths, &stats, shape)
        }
        SampleKind::Scattering => scattering(&store_dirs(&paths)),
        SampleKind::Traces => traces(&store_dirs(&paths)),
        SampleKind::Jets => jets(&paths),
        SampleKind::MassMaps => massmaps(&paths),
        other => Err(DatasetError::Unreadable { path: dir.to_owned(), kind: format!("{other:?}") }),
    }
}

/// CosmoFlow TFRecord files (plain or GZIP; an index sidecar is used where
/// there is one) of samples of `shape`.
pub fn cosmoflow(paths: &[PathBuf], shape: CosmoShape, transform: CosmoTransform) -> Result<Opened, DatasetError> {
    cosmoflow_selected(paths, shape, transform, ((0..shape.channels).collect(), (0..TARGETS).collect()))
}

/// [`cosmoflow`] giving only `channels` of each volume and `targets` of each
/// sample (indices into the file's, in the order given; see
/// [`CosmoflowDataset::select`]).
pub fn cosmoflow_selected(
    paths: &[PathBuf],
    shape: CosmoShape,
    transform: CosmoTransform,
    (channels, targets): (Vec<usize>, Vec<usize>),
) -> Result<Opened, DatasetError> {
    let (c, t) = (channels.len(), targets.len());
    Ok(Opened {
        dataset: Arc::new(CosmoflowDataset::open(paths, shape, transform)?.select(channels, targets)?),
        kind: SampleKind::Cosmoflow,
        x_shape: vec![shape.size, shape.size, shape.size, c],
        y_shape: Some(vec![t]),
        paths: paths.to_vec(),
        addresses: Vec::new(),
    })
}

/// DeepCAM HDF5 sample files normalised with the `stats.h5` at `stats`;
/// the shape is the first file's.
pub fn deepcam(paths: &[PathBuf], stats: &Path) -> Result<Opened, DatasetError> {
    let Some(first) = paths.first() else {
        return Err(DatasetError::Shape { path: stats.to_owned(), key: 0, reason: "no sample files given".into() });
    };
    deepcam_with_shape(paths, stats, climate::read_shape(first)?)
}

fn deepcam_with_shape(paths: &[PathBuf], stats: &Path, shape: ClimateShape) -> Result<Opened, DatasetError> {
    Ok(Opened {
        dataset: Arc::new(DeepcamDataset::open(paths, stats, shape)?),
        kind: SampleKind::Deepcam,
        x_shape: vec![shape.channels, shape.height, shape.width],
        y_shape: Some(vec![shape.height, shape.width]),
        paths: paths.to_vec(),
        addresses: Vec::new(),
    })
}

/// Multislice scattering LMDB stores (directories), one after the other.
pub fn scattering(stores: &[PathBuf]) -> Result<Opened, DatasetError> {
    let dataset = ScatteringStores::open(stores)?;
    let shape = dataset.shape();
    let (p, h, w) = (shape.positions as usize, shape.height as usize, shape.width as usize);
    Ok(Opened {
        dataset: Arc::new(dataset),
        kind: SampleKind::Scattering,
        x_shape: vec![p, h, w],
        y_shape: Some(vec![h, w]),
        paths: stores.to_vec(),
        addresses: Vec::new(),
    })
}

/// Simulator trace LMDB stores (directories), one after the other. The
/// layout a target's address positions refer to is every store's
/// addresses in the order first met.
pub fn traces(stores: &[PathBuf]) -> Result<Opened, DatasetError> {
    let mut addresses: Vec<String> = Vec::new();
    for path in stores {
        let store = formats::lmdb::TraceStore::open(path)?;
        for address in store.addresses() {
            if !addresses.contains(address) {
                addresses.push(address.clone());
            }
        }
    }
    let dataset = TraceStores::open(stores, &addresses)?;
    let x_shape = dataset.observation_shape().iter().map(|&d| d as usize).collect();
    Ok(Opened {
        dataset: Arc::new(dataset),
        kind: SampleKind::Traces,
        x_shape,
        y_shape: None,
        paths: stores.to_vec(),
        addresses,
    })
}

/// Collision-event images of HEP-CNN files ([`formats::jets`]): inputs
/// (C, H, W), targets `[label, weight, psr]`.
pub fn jets(paths: &[PathBuf]) -> Result<Opened, DatasetError> {
    let dataset = crate::jets::JetEvents::open(paths)?;
    let shape = dataset.shape();
    Ok(Opened {
        dataset: Arc::new(dataset),
        kind: SampleKind::Jets,
        x_shape: vec![shape.channels, shape.height, shape.width],
        y_shape: Some(vec![crate::jets::TARGET_LEN]),
        paths: paths.to_vec(),
        addresses: Vec::new(),
    })
}

/// Mass maps of CosmoGAN `.npy` files ([`formats::massmaps`]): inputs
/// (S, S) of ρ/ρ̄, targets `[mean]`.
pub fn massmaps(paths: &[PathBuf]) -> Result<Opened, DatasetError> {
    let dataset = crate::massmaps::MassMaps::open(paths)?;
    let side = dataset.side();
    Ok(Opened {
        dataset: Arc::new(dataset),
        kind: SampleKind::MassMaps,
        x_shape: vec![side, side],
        y_shape: Some(vec![crate::massmaps::TARGET_LEN]),
        paths: paths.to_vec(),
        addresses: Vec::new(),
    })
}

/// The records of TFRecord files, or with `feature` the bytes of that
/// feature of each record's `tf.train.Example`.
pub fn tfrecords(paths: &[PathBuf], feature: Option<&str>) -> Result<Opened, DatasetError> {
    Ok(records(Arc::new(TfRecords::open(paths, feature)?), paths))
}

/// Array `key` of `.npz` files, samples along `axis`.
pub fn npz(paths: &[PathBuf], key: &str, axis: SampleAxis) -> Result<Opened, DatasetError> {
    Ok(records(Arc::new(NpzArrays::open(paths, key, axis)?), paths))
}

/// Dataset `name` of HDF5 files, one sample per row of its first axis.
pub fn hdf5_rows(paths: &[PathBuf], name: &str) -> Result<Opened, DatasetError> {
    Ok(records(Arc::new(Hdf5Rows::open(paths, name)?), paths))
}

/// A dataset of byte records: no decoded shapes (lengths may differ), and
/// the manifest's kind for files Stagehand does not interpret.
fn records(dataset: Arc<dyn Dataset>, paths: &[PathBuf]) -> Opened {
    Opened {
        dataset,
        kind: SampleKind::Opaque,
        x_shape: Vec::new(),
        y_shape: None,
        paths: paths.to_vec(),
        addresses: Vec::new(),
    }
}

/// The paths under `dir` of the files `files` (manifest indices; every
/// file when `None`) that hold samples, in order.
pub fn sample_paths(dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Vec<PathBuf> {
    let chosen: Vec<usize> = match files {
        Some(files) => {
            files.iter().copied().filter(|&i| manifest.files.get(i).is_some_and(|f| f.samples > 0)).collect()
        }
        None => (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect(),
    };
    chosen.iter().map(|&i| dir.join(&manifest.files[i].path)).collect()
}

/// The LMDB store directories of [`sample_paths`]: a manifest lists each
/// store's `data.mdb`, LMDB opens the directory.
pub fn lmdb_stores(dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Vec<PathBuf> {
    store_dirs(&sample_paths(dir, manifest, files))
}

/// The LMDB store directories holding `files` (their `data.mdb`), each once,
/// in order.
fn store_dirs(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for file in files {
        let dir = file.parent().map_or_else(|| file.clone(), Path::to_path_buf);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}
