//! `Dataset`: samples opened from a manifest, from files, or from what the
//! stager placed on this rank's node.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cluster::Topology;
use formats::cosmoflow::{CosmoShape, TARGET_NAMES};
use formats::manifest::{Manifest, SampleKind};
use loader::catalog::{self, Opened};
use loader::dataset::CosmoTransform;
use loader::records::SampleAxis;
use loader::sampler::{NodeLocalSampler, Remainder};
use loader::source::RankPlace;
use loader::staged::{NodeSamples, StagedShare};
use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::data_error;

/// This node's staged files and where this rank is: enough to rebuild the
/// node-local sampler the trainer uses for any remainder policy.
pub(crate) struct Placement {
    share: StagedShare,
    topology: Topology,
    /// The node's samples addressed by the source dataset's ids, as the
    /// node-local sampler names them.
    pub(crate) by_global_id: Arc<NodeSamples>,
}

impl Placement {
    /// The sampler over this node's samples.
    pub(crate) fn sampler(&self, remainder: Remainder) -> PyResult<NodeLocalSampler> {
        self.share.sampler(remainder).map_err(data_error)
    }

    /// The rank and world size the placement was computed for.
    pub(crate) fn rank_world(&self) -> (usize, usize) {
        (self.topology.rank, self.topology.size)
    }
}

/// One sample's input and target, flat.
type Sample<'py> = (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>);

/// Samples of one dataset, opened for reading.
///
/// Open one with `Dataset.from_manifest` (a dataset directory), `Dataset.staged`
/// (this node's share of what `stager stage` placed), or from files:
/// `Dataset.cosmoflow`, `Dataset.deepcam`, `Dataset.scattering`,
/// `Dataset.traces`. Inputs and targets are float32; `x_shape` and
/// `y_shape` give one sample's shapes (`y_shape` is `None` for traces,
/// whose targets differ in length: `CHOICE_WIDTH` values per choice).
#[pyclass(frozen, module = "stagehand._stagehand")]
pub struct Dataset {
    pub(crate) opened: Opened,
    pub(crate) placement: Option<Placement>,
}

fn transform_of(name: &str) -> PyResult<CosmoTransform> {
    match name {
        "log1p" => Ok(CosmoTransform::Log1p),
        "divide-by-mean" => Ok(CosmoTransform::DivideByMean),
        other => Err(PyValueError::new_err(format!(
            "transform {other:?}: use \"log1p\" (MLPerf HPC's apply_log) or \"divide-by-mean\""
        ))),
    }
}

fn load_manifest(path: &Path) -> PyResult<Manifest> {
    Manifest::load(path).map_err(data_error)
}

/// Manifest files with samples whose path starts with `prefix`.
fn files_under(manifest: &Manifest, prefix: Option<&str>) -> Vec<usize> {
    (0..manifest.files.len())
        .filter(|&i| manifest.files[i].samples > 0 && prefix.is_none_or(|p| manifest.files[i].path.starts_with(p)))
        .collect()
}

fn kind_name(kind: SampleKind) -> &'static str {
    match kind {
        SampleKind::Cosmoflow => "cosmoflow",
        SampleKind::Deepcam => "deepcam",
        SampleKind::Scattering => "scattering",
        SampleKind::Traces => "traces",
        SampleKind::Jets => "jets",
        SampleKind::MassMaps => "massmaps",
        _ => "opaque",
    }
}

impl Dataset {
    fn of(opened: Opened) -> Self {
        Dataset { opened, placement: None }
    }
}

#[pymethods]
impl Dataset {
    /// The dataset in directory `root`, as its manifest (`root/manifest.json`
    /// unless `manifest` names another) describes it: every sample file, or
    /// only those whose manifest path starts with `prefix` (DeepCAM's
    /// `"train/"` or `"validation/"`), or the manifest indices `files`.
    /// `transform` ("log1p" or "divide-by-mean") applies to CosmoFlow counts.
    #[staticmethod]
    #[pyo3(signature = (root, *, manifest = None, prefix = None, files = None, transform = "log1p"))]
    fn from_manifest(
        py: Python<'_>,
        root: PathBuf,
        manifest: Option<PathBuf>,
        prefix: Option<String>,
        files: Option<Vec<usize>>,
        transform: &str,
    ) -> PyResult<Self> {
        let transform = transform_of(transform)?;
        let manifest = load_manifest(&manifest.unwrap_or_else(|| root.join(formats::manifest::MANIFEST_FILE)))?;
        let chosen = match files {
            Some(files) => {
                if let Some(&bad) = files.iter().find(|&&i| i >= manifest.files.len()) {
                    return Err(PyValueError::new_err(format!(
                        "file index {bad}: the manifest lists {} files",
                        manifest.files.len()
                    )));
                }
                files
            }
            None => files_under(&manifest, prefix.as_deref()),
        };
        let opened = py
            .detach(|| catalog::from_manifest(&root, &manifest, Some(&chosen), transform, None))
            .map_err(data_error)?;
        Ok(Dataset::of(opened))
    }

    /// This node's share of a dataset `stager stage` placed: the files in
    /// `dest` (the stager's `--dest` template: `{node}`, `{rank}`,
    /// `{local_rank}`, `$VAR`) as this rank's node expands it, which the
    /// placement record the stager wrote there lists, numbered as in the
    /// source dataset; only the sample files whose manifest path starts
    /// with `prefix` when one is given. Nodes are consecutive groups of
    /// `ranks_per_node` ranks, as the stager numbers them. A `Loader` over
    /// it gives every rank the trainer's node-local order. A destination
    /// without a finished stage, staged for another node, or whose files
    /// differ from its record raises `DataError` naming it.
    ///
    /// `rank`, `world_size` and `ranks_per_node` default to
    /// `stagehand.topology()` (torch.distributed, then torchrun's, Open
    /// MPI's, MPICH's or Slurm's variables; `STAGEHAND_RANKS_PER_NODE`
    /// overrides the ranks per node as it does for the stager).
    #[staticmethod]
    #[pyo3(signature = (dest, *, rank = None, world_size = None, ranks_per_node = None, prefix = None, transform = "log1p"))]
    fn staged(
        py: Python<'_>,
        dest: &str,
        rank: Option<usize>,
        world_size: Option<usize>,
        ranks_per_node: Option<usize>,
        prefix: Option<String>,
        transform: &str,
    ) -> PyResult<Self> {
        let transform = transform_of(transform)?;
        let (rank, world_size, ranks_per_node) = match (rank, world_size, ranks_per_node) {
            (Some(r), Some(w), Some(k)) => (r, w, k),
            _ => {
                let found = py.import("stagehand._env")?.call_method0("topology")?;
                (
                    rank.map_or_else(|| found.getattr("rank")?.extract(), Ok)?,
                    world_size.map_or_else(|| found.getattr("world_size")?.extract(), Ok)?,
                    ranks_per_node.map_or_else(|| found.getattr("ranks_per_node")?.extract(), Ok)?,
                )
            }
        };
        if world_size == 0 || rank >= world_size || ranks_per_node == 0 {
            return Err(PyValueError::new_err(format!(
                "rank {rank} of {world_size} with {ranks_per_node} ranks per node: need rank < world_size and ranks_per_node >= 1"
            )));
        }
        let place = RankPlace::grouped(rank, world_size, ranks_per_node);
        let share = py
            .detach(|| {
                loader::source::open_staged(dest, &place, |manifest| match prefix.as_deref() {
                    Some(prefix) => {
                        (0..manifest.files.len()).filter(|&i| !manifest.files[i].path.starts_with(prefix)).collect()
                    }
                    None => Vec::new(),
                })
            })
            .map_err(data_error)?;
        let stats = share.source_file(formats::climate::STATS_FILE);
        let (opened, by_global_id) = py
            .detach(|| {
                let files = share.sample_files();
                if share.service().is_none() {
                    let opened =
                        catalog::from_manifest(share.dir(), share.manifest(), Some(&files), transform, Some(&stats))
                            .map_err(|e| e.to_string())?;
                    // `remap` refuses files holding other than the recorded samples.
                    let by_global_id = share.remap(opened.dataset.clone()).map_err(|e| e.to_string())?;
                    return Ok::<_, String>((opened, Arc::new(by_global_id)));
                }
                // A staging service still fills the destination: each file
                // is opened as it is first read, once the service has it.
                let fallback = stats.clone();
                let opener: loader::served::FileOpener = Arc::new(move |dir, manifest, files| {
                    Ok(catalog::from_manifest(dir, manifest, Some(files), transform, Some(&fallback))?.dataset)
                });
                let open_all = |dir: &Path, manifest: &Manifest, files: &[usize]| {
                    Ok(catalog::from_manifest(dir, manifest, Some(files), transform, Some(&stats))?.dataset)
                };
                let by_global_id = share.open_dataset(open_all, Some(opener)).map_err(|e| e.to_string())?;
                // The shapes, from a file the service has placed (opening
                // the dataset waited for the one this rank reads first).
                let placed = files
                    .iter()
                    .copied()
                    .find(|&f| share.dir().join(&share.manifest().files[f].path).is_file())
                    .ok_or_else(|| format!("{}: no sample file in place", share.dir().display()))?;
                let probe =
                    catalog::from_manifest(share.dir(), share.manifest(), Some(&[placed]), transform, Some(&stats))
                        .map_err(|e| e.to_string())?;
                let opened = Opened {
                    dataset: by_global_id.local_dataset().clone(),
                    paths: files.iter().map(|&f| share.dir().join(&share.manifest().files[f].path)).collect(),
                    ..probe
                };
                Ok((opened, Arc::new(by_global_id)))
            })
            .map_err(data_error)?;
        Ok(Dataset { opened, placement: Some(Placement { share, topology: place.topology, by_global_id }) })
    }

    /// CosmoFlow TFRecord files (plain or GZIP, with or without an index
    /// sidecar) of `size`^3 x `channels` samples. `select` picks channels of
    /// each volume by index (SC18 trained on `[0]`, the z = 0 snapshot) and
    /// `targets` parameters by name (`omega_m`, `sigma_8`, `n_s`, `h`), in
    /// the order given.
    #[staticmethod]
    #[pyo3(signature = (paths, *, size, channels = 4, transform = "log1p", select = None, targets = None))]
    fn cosmoflow(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        size: usize,
        channels: usize,
        transform: &str,
        select: Option<Vec<usize>>,
        targets: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let transform = transform_of(transform)?;
        let shape = CosmoShape { size, channels };
        let select = select.unwrap_or_else(|| (0..channels).collect());
        let targets = match targets {
            None => (0..TARGET_NAMES.len()).collect(),
            Some(names) => names
                .iter()
                .map(|name| {
                    TARGET_NAMES.iter().position(|known| known == name).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "unknown CosmoFlow target {name:?} (known: {})",
                            TARGET_NAMES.join(", ")
                        ))
                    })
                })
                .collect::<PyResult<Vec<usize>>>()?,
        };
        let opened = py.detach(|| catalog::cosmoflow_selected(&paths, shape, transform, (select, targets)));
        Ok(Dataset::of(opened.map_err(data_error)?))
    }

    /// DeepCAM HDF5 sample files, min-max normalised with the `stats.h5` at
    /// `stats`; inputs come out channels first (C, H, W).
    #[staticmethod]
    fn deepcam(py: Python<'_>, paths: Vec<PathBuf>, stats: PathBuf) -> PyResult<Self> {
        Ok(Dataset::of(py.detach(|| catalog::deepcam(&paths, &stats)).map_err(data_error)?))
    }

    /// Multislice scattering LMDB stores (directories holding `data.mdb`).
    #[staticmethod]
    fn scattering(py: Python<'_>, stores: Vec<PathBuf>) -> PyResult<Self> {
        Ok(Dataset::of(py.detach(|| catalog::scattering(&stores)).map_err(data_error)?))
    }

    /// Simulator trace LMDB stores (directories holding `data.mdb`).
    #[staticmethod]
    fn traces(py: Python<'_>, stores: Vec<PathBuf>) -> PyResult<Self> {
        Ok(Dataset::of(py.detach(|| catalog::traces(&stores)).map_err(data_error)?))
    }

    /// Byte records: the records of TFRecord files, or with `feature`
    /// the bytes of that feature of each record's `tf.train.Example`
    /// (DLIO's synthetic records hold `image` and `size`). Record CRCs are
    /// checked.
    #[staticmethod]
    #[pyo3(signature = (paths, *, feature = None))]
    fn tfrecord(py: Python<'_>, paths: Vec<PathBuf>, feature: Option<String>) -> PyResult<Self> {
        Ok(Dataset::of(py.detach(|| catalog::tfrecords(&paths, feature.as_deref())).map_err(data_error)?))
    }

    /// Byte records: array `key` of NumPy `.npz` files, one sample per
    /// entry of its last axis (`axis="last"`, DLIO's layout) or first
    /// (`axis="first"`), in C order.
    #[staticmethod]
    #[pyo3(signature = (paths, *, key = "x", axis = "last"))]
    fn npz(py: Python<'_>, paths: Vec<PathBuf>, key: &str, axis: &str) -> PyResult<Self> {
        let axis = match axis {
            "last" => SampleAxis::Last,
            "first" => SampleAxis::First,
            other => return Err(PyValueError::new_err(format!("axis {other:?}: use \"last\" or \"first\""))),
        };
        Ok(Dataset::of(py.detach(|| catalog::npz(&paths, key, axis)).map_err(data_error)?))
    }

    /// Byte records: dataset `name` of HDF5 files, one sample per row of
    /// its first axis (DLIO's HDF5 files hold `records`).
    #[staticmethod]
    #[pyo3(signature = (paths, *, name = "records"))]
    fn hdf5(py: Python<'_>, paths: Vec<PathBuf>, name: &str) -> PyResult<Self> {
        Ok(Dataset::of(py.detach(|| catalog::hdf5_rows(&paths, name)).map_err(data_error)?))
    }

    /// "cosmoflow", "deepcam", "scattering", "traces", "jets", "massmaps",
    /// or "records" for datasets whose samples are bytes (`tfrecord`, `npz`,
    /// `hdf5`).
    #[getter]
    fn kind(&self) -> &'static str {
        if self.opened.dataset.holds_records() { "records" } else { kind_name(self.opened.kind) }
    }

    /// Shape of one input.
    #[getter]
    fn x_shape(&self) -> Vec<usize> {
        self.opened.x_shape.clone()
    }

    /// Shape of one target, or `None` where targets differ in length.
    #[getter]
    fn y_shape(&self) -> Option<Vec<usize>> {
        self.opened.y_shape.clone()
    }

    /// The files (LMDB: store directories) read, in sample order.
    #[getter]
    fn paths(&self) -> Vec<PathBuf> {
        self.opened.paths.clone()
    }

    /// Traces: the address at each layout position a target names.
    #[getter]
    fn addresses(&self) -> Vec<String> {
        self.opened.addresses.clone()
    }

    /// Staged datasets: the manifest indices of the files the placement put
    /// on this node (sample files and the files that travel with them).
    #[getter]
    fn node_files(&self) -> Option<Vec<usize>> {
        self.placement.as_ref().map(|p| p.share.record().file_indices())
    }

    /// Staged datasets: the source dataset's ids of this node's samples, in
    /// the order the dataset holds them.
    #[getter]
    fn node_samples(&self) -> Option<Vec<usize>> {
        self.placement.as_ref().map(|p| p.share.node_samples().to_vec())
    }

    /// Staged datasets: the (rank, world size) the placement was computed
    /// for, which a `Loader` over it takes by default.
    #[getter]
    fn staged_for(&self) -> Option<(usize, usize)> {
        self.placement.as_ref().map(|p| p.rank_world())
    }

    /// Values per controlled choice in a trace's target: layout position,
    /// value, the prior's two parameters, log prior density.
    #[classattr]
    const CHOICE_WIDTH: usize = loader::traces::CHOICE_WIDTH;

    fn __len__(&self) -> usize {
        self.opened.dataset.len()
    }

    /// Read sample `index` (of this dataset; for a staged one, of this
    /// node's samples) into new arrays: `(x, y)`, both flat float32.
    fn read<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Sample<'py>> {
        let dataset = &self.opened.dataset;
        if dataset.holds_records() {
            return Err(PyValueError::new_err(
                "a dataset of records holds bytes: read a sample with read_record(index)",
            ));
        }
        let mut x = vec![0f32; dataset.x_len()];
        let mut y = Vec::new();
        py.detach(|| dataset.read_ragged(index, &mut x, &mut y)).map_err(data_error)?;
        Ok((PyArray1::from_vec(py, x), PyArray1::from_vec(py, y)))
    }

    /// Read sample `index` of a dataset of records into a new uint8 array.
    fn read_record<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let mut out = Vec::new();
        py.detach(|| self.opened.dataset.read_record(index, &mut out)).map_err(data_error)?;
        Ok(PyArray1::from_vec(py, out))
    }

    fn __repr__(&self) -> String {
        let staged = match &self.placement {
            Some(p) => format!(", node {} of {}", p.topology.node, p.topology.nodes),
            None => String::new(),
        };
        let tuple = |shape: &[usize]| match shape {
            [single] => format!("({single},)"),
            _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
        };
        let y_shape = self.opened.y_shape.as_deref().map_or_else(|| "None".to_owned(), tuple);
        if self.opened.dataset.holds_records() {
            return format!(
                "Dataset(kind='records', samples={}, files={})",
                self.opened.dataset.len(),
                self.opened.paths.len()
            );
        }
        format!(
            "Dataset(kind='{}', samples={}, x_shape={}, y_shape={y_shape}, files={}{staged})",
            kind_name(self.opened.kind),
            self.opened.dataset.len(),
            tuple(&self.opened.x_shape),
            self.opened.paths.len()
        )
    }
}
