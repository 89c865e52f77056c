//! Datasets: random access to decoded samples, one implementation per format.

use std::path::{Path, PathBuf};

use formats::cosmoflow::{CosmoError, CosmoSampleView, CosmoShape, TARGETS};
use formats::manifest::Manifest;
use formats::tfrecord::{RecordIndex, TfRecordError, TfRecordFile, index_path_for};

/// A sample that cannot be produced. Names the file and byte offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The TFRecord framing is broken (bad CRC, truncated file).
    #[error(transparent)]
    Record(#[from] TfRecordError),
    /// The record is not a valid sample of the expected shape.
    #[error("{}: record at byte offset {offset}: {source}", path.display())]
    Sample {
        /// File.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
        /// What is wrong.
        source: CosmoError,
    },
    /// An HDF5 sample or stats file is missing a dataset or has the wrong shape.
    #[error(transparent)]
    Climate(#[from] formats::climate::ClimateError),
    /// Opening or mapping a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The manifest's schema is not a CosmoFlow one.
    #[error("the manifest does not describe CosmoFlow samples (schema kind or x shape)")]
    NotCosmoflow,
    /// An LMDB store cannot be read, or a stored value does not decode.
    #[error(transparent)]
    Lmdb(#[from] formats::lmdb::LmdbError),
    /// A scattering sample is malformed or has another shape than the store's.
    #[error("{}: key {key}: {source}", path.display())]
    Scattering {
        /// Store directory.
        path: PathBuf,
        /// Sample key.
        key: u64,
        /// What is wrong, with the byte.
        source: formats::scattering::ScatteringError,
    },
    /// A sample is absent or has another shape than the rest of the dataset.
    #[error("{}: sample {key}: {reason}", path.display())]
    Shape {
        /// Store directory or file.
        path: PathBuf,
        /// Sample key or index.
        key: u64,
        /// What differs.
        reason: String,
    },
    /// An index past the end.
    #[error("sample {index} out of range (dataset has {len})")]
    OutOfRange {
        /// Asked for.
        index: usize,
        /// Length.
        len: usize,
    },
}

/// Random access to samples decoded into `f32` buffers.
pub trait Dataset: Send + Sync {
    /// Number of samples.
    fn len(&self) -> usize;

    /// True if there is no sample.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values in one sample's input `x`.
    fn x_len(&self) -> usize;

    /// Values in one sample's target `y` (0 for datasets whose targets vary
    /// in length, which implement [`read_ragged`](Self::read_ragged)).
    fn y_len(&self) -> usize;

    /// Decode sample `index` into `x` and `y`; returns the bytes read.
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError>;

    /// Decode sample `index` into `x` and append its target to `y`, which
    /// may then have grown by any length (simulator traces). The loader
    /// calls this; the default appends `y_len` values via `read_into`.
    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        let start = y.len();
        y.resize(start + self.y_len(), 0.0);
        let read = self.read_into(index, x, &mut y[start..]);
        if read.is_err() {
            y.truncate(start);
        }
        read
    }
}

/// How CosmoFlow counts become network inputs (MLPerf HPC `cosmoflow/data/cosmo.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CosmoTransform {
    /// `log(x + 1)` (`apply_log: True` in both reference configs).
    Log1p,
    /// `x / mean(x)` over the sample.
    DivideByMean,
}

/// CosmoFlow TFRecords (one or many samples per file, plain or GZIP),
/// memory-mapped, reached through the offset index (the sidecar if present,
/// else built by walking the headers once at open).
pub struct CosmoflowDataset {
    files: Vec<TfRecordFile>,
    records: Vec<(usize, u64)>,
    shape: CosmoShape,
    transform: CosmoTransform,
}

impl CosmoflowDataset {
    /// Open `paths` as CosmoFlow files of samples of `shape`.
    pub fn open(
        paths: &[impl AsRef<Path>],
        shape: CosmoShape,
        transform: CosmoTransform,
    ) -> Result<Self, DatasetError> {
        let mut files = Vec::with_capacity(paths.len());
        let mut records = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            let path = path.as_ref();
            let file = TfRecordFile::open(path)?;
            let sidecar = index_path_for(path);
            let index = match RecordIndex::load(&sidecar) {
                Ok(index) => {
                    index.check_covers(file.as_bytes().len() as u64, &sidecar)?;
                    index
                }
                Err(_) => file.build_index()?,
            };
            records.extend(index.entries().iter().map(|&(offset, _)| (i, offset)));
            files.push(file);
        }
        Ok(CosmoflowDataset { files, records, shape, transform })
    }
}

impl CosmoflowDataset {
    /// Open the sample files of a CosmoFlow dataset from its manifest, all
    /// of them or only `files` (manifest indices, e.g. the files the stager
    /// placed on this node). A listed file missing on disk is an error naming
    /// it here, before the first batch.
    pub fn from_manifest(
        root: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
        transform: CosmoTransform,
    ) -> Result<Self, DatasetError> {
        let shape = manifest.schema.cosmo_shape().ok_or(DatasetError::NotCosmoflow)?;
        let all: Vec<usize> = (0..manifest.files.len()).collect();
        let paths: Vec<PathBuf> = files
            .unwrap_or(&all)
            .iter()
            .filter_map(|&i| manifest.files.get(i))
            .filter(|entry| entry.samples > 0)
            .map(|entry| root.join(&entry.path))
            .collect();
        if let Some(missing) = paths.iter().find(|p| !p.is_file()) {
            return Err(DatasetError::Io {
                path: missing.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "listed in the manifest but missing on disk"),
            });
        }
        Self::open(&paths, shape, transform)
    }
}

impl Dataset for CosmoflowDataset {
    fn len(&self) -> usize {
        self.records.len()
    }

    fn x_len(&self) -> usize {
        self.shape.voxels()
    }

    fn y_len(&self) -> usize {
        TARGETS
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let &(file, offset) =
            self.records.get(index).ok_or(DatasetError::OutOfRange { index, len: self.records.len() })?;
        let file = &self.files[file];
        let record = file.record_at(offset)?;
        let view = CosmoSampleView::parse(record.data, self.shape).map_err(|source| DatasetError::Sample {
            path: file.path().to_owned(),
            offset,
            source,
        })?;
        decode_counts(view.x, x, self.transform);
        y.copy_from_slice(&view.y);
        Ok(record.framed_len())
    }
}

/// `ln(1 + x)` for every int16 `x`, indexed by the value's bit pattern: a
/// 256 KiB table that stays in L2 and turns the transform into one load per
/// voxel, exactly equal to `f32::ln_1p` (a scalar `ln_1p` per voxel ran at
/// 6 % of the memory-bandwidth bound).
fn log1p_table() -> &'static [f32] {
    static TABLE: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| (0..=u16::MAX).map(|bits| f32::from(bits as i16).ln_1p()).collect())
}

/// int16 little-endian counts to f32 with the transform. One pass reading
/// the bytes and writing the result: the loop the memory-bandwidth bound is about.
pub fn decode_counts(raw: &[u8], out: &mut [f32], transform: CosmoTransform) {
    match transform {
        CosmoTransform::Log1p => {
            let table = log1p_table();
            for (o, b) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = table[usize::from(u16::from_le_bytes([b[0], b[1]]))];
            }
        }
        CosmoTransform::DivideByMean => {
            let values = raw.chunks_exact(2).map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])));
            let mut sum = 0f64;
            for (o, v) in out.iter_mut().zip(values) {
                *o = v;
                sum += f64::from(v);
            }
            let mean = (sum / out.len().max(1) as f64) as f32;
            if mean != 0.0 {
                for o in out.iter_mut() {
                    *o /= mean;
                }
            }
        }
    }
}
