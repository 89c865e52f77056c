//! Datasets: random access to decoded samples, one implementation per format.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use formats::cosmoflow::{CosmoError, CosmoSampleView, CosmoShape};
use formats::manifest::Manifest;
use formats::tfrecord::{RecordIndex, TfRecordError, TfRecordFile, index_path_for};

use crate::cosmo_selection::CosmoSelection;

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
    /// The staging service filling the destination could not provide a
    /// file (it failed, or it ended).
    #[error(transparent)]
    Service(#[from] formats::service::ServiceError),
    /// A simulator making a sample as it is read (online training) failed.
    #[error("simulated sample {index}: {reason}")]
    Simulated {
        /// The sample's index (its seed).
        index: usize,
        /// What the simulator said.
        reason: String,
    },
    /// Opening or mapping a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Channels or targets a CosmoFlow dataset does not have.
    #[error(transparent)]
    Selection(#[from] crate::cosmo_selection::SelectionError),
    /// The manifest's schema is not a CosmoFlow one.
    #[error("the manifest does not describe CosmoFlow samples (schema kind or x shape)")]
    NotCosmoflow,
    /// The manifest describes files whose samples no dataset reads.
    #[error("{}: the manifest describes {kind} files, which the loader does not read as samples", path.display())]
    Unreadable {
        /// The dataset's directory.
        path: PathBuf,
        /// The schema's kind.
        kind: String,
    },
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
    /// Reading the sample panicked in a loader worker (a bug in the
    /// dataset's code); the worker caught it so the consumer does not wait
    /// forever for the batch.
    #[error("a loader worker panicked reading sample {index}: {message}")]
    WorkerPanicked {
        /// The sample being read.
        index: usize,
        /// The panic's message.
        message: String,
    },
    /// A sample holds NaN or infinity (found with
    /// [`LoaderConfig::check_finite`](crate::pipeline::LoaderConfig::check_finite)).
    #[error("{sample}: {part} value {position} is {value}, not a finite number")]
    NonFinite {
        /// Where the sample is ([`Dataset::locate`]).
        sample: String,
        /// `input` or `target`.
        part: &'static str,
        /// Index of the value within that part.
        position: usize,
        /// The value (NaN, inf or -inf).
        value: f32,
    },
    /// A file of a records dataset ([`crate::records`]) is not what its
    /// kind needs (no such array or dataset, an unreadable layout).
    #[error("{}: {reason}", path.display())]
    Records {
        /// File.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A dataset of decoded values was asked for a sample's bytes.
    #[error("sample {index}: this dataset decodes values; it holds no byte records")]
    NotRecords {
        /// The sample asked for.
        index: usize,
    },
    /// A dataset of byte records was asked for decoded values.
    #[error("sample {index}: this dataset holds byte records; it decodes no values")]
    NotValues {
        /// The sample asked for.
        index: usize,
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

/// `read_into` for a dataset of variable-length targets: the input, and as
/// much of the target [`read_ragged`](Dataset::read_ragged) gives as `y` holds.
pub fn read_prefix<D: Dataset + ?Sized>(
    dataset: &D,
    index: usize,
    x: &mut [f32],
    y: &mut [f32],
) -> Result<u64, DatasetError> {
    let mut target = Vec::new();
    let read = dataset.read_ragged(index, x, &mut target)?;
    let n = y.len().min(target.len());
    y[..n].copy_from_slice(&target[..n]);
    Ok(read)
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

    /// Where sample `index` is, for messages: its file and position in it
    /// where the dataset knows them (`sample 12 (data/f3.tfrecord, record 4)`).
    fn locate(&self, index: usize) -> String {
        format!("sample {index}")
    }

    /// Seconds reads of this dataset waited for a staging service to place
    /// files (0 for files that were all in place).
    fn staging_wait_secs(&self) -> f64 {
        0.0
    }

    /// True if samples are byte strings ([`crate::records`]), read with
    /// [`read_record`](Self::read_record); `x_len` and `y_len` are then 0.
    fn holds_records(&self) -> bool {
        false
    }

    /// Append sample `index`'s bytes to `out`; returns the bytes read from
    /// storage. Only datasets that [`hold records`](Self::holds_records)
    /// have them.
    fn read_record(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        let _ = out;
        Err(DatasetError::NotRecords { index })
    }

    /// The length of sample `index`'s record when it is known without
    /// reading it (`None` otherwise, or out of range): when every record's
    /// is known, the workers make each batch buffer once at the size of
    /// the largest batch the dataset can make.
    fn record_len(&self, index: usize) -> Option<usize> {
        let _ = index;
        None
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
    /// Samples `start..start + len` of `inner` (cut to the samples it has).
    pub fn new(inner: Arc<dyn Dataset>, start: usize, len: usize) -> Slice {
        let start = start.min(inner.len());
        let len = len.min(inner.len() - start);
        Slice { inner, start, len }
    }

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
    fn staging_wait_secs(&self) -> f64 {
        self.inner.staging_wait_secs()
    }
    fn holds_records(&self) -> bool {
        self.inner.holds_records()
    }
    fn read_record(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        self.inner.read_record(self.index(index)?, out)
    }
    fn record_len(&self, index: usize) -> Option<usize> {
        self.inner.record_len(self.index(index).ok()?)
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
    selection: CosmoSelection,
}

impl CosmoflowDataset {
    /// Open `paths` as CosmoFlow files of samples of `shape`.
    pub fn open(
        paths: &[impl AsRef<Path>],
        shape: CosmoShape,
        transform: CosmoTransform,
    ) -> Result<Self, DatasetError> {
        let (files, records) = open_indexed(paths)?;
        Ok(CosmoflowDataset { files, records, shape, transform, selection: CosmoSelection::all(shape) })
    }

    /// Give only `channels` of each volume and `targets` of each sample
    /// (indices into the file's, in the order given): SC18's z = 0 volume
    /// and three parameters out of the MLPerf data's four and four.
    pub fn select(mut self, channels: Vec<usize>, targets: Vec<usize>) -> Result<Self, DatasetError> {
        self.selection = CosmoSelection::new(channels, targets, self.shape)?;
        Ok(self)
    }
}

/// TFRecord files and their records, each as (file, byte offset of its
/// header).
pub(crate) type IndexedFiles = (Vec<TfRecordFile>, Vec<(usize, u64)>);

/// Open TFRecord files (mapped; GZIP ones read into memory) and list
/// their records as (file, offset of the record's header): from the sidecar
/// index where one covers the file, else by walking the headers once.
pub(crate) fn open_indexed(paths: &[impl AsRef<Path>]) -> Result<IndexedFiles, DatasetError> {
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
    Ok((files, records))
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

    fn locate(&self, index: usize) -> String {
        match self.records.get(index) {
            Some(&(file, offset)) => {
                format!("sample {index} ({}, record at byte offset {offset})", self.files[file].path().display())
            }
            None => format!("sample {index}"),
        }
    }

    fn x_len(&self) -> usize {
        self.shape.size.pow(3) * self.selection.channels().len()
    }

    fn y_len(&self) -> usize {
        self.selection.targets().len()
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        if !self.selection.keeps_every_channel() {
            return self.read_selected(index, x, y);
        }
        let &(file, offset) =
            self.records.get(index).ok_or(DatasetError::OutOfRange { index, len: self.records.len() })?;
        let file = &self.files[file];
        let path = file.path();
        let record = file.pending_record_at(offset)?;
        let data = record.data;
        let view = match CosmoSampleView::parse(data, self.shape) {
            Ok(view) => view,
            Err(source) => {
                // Damage shows as a CRC error first; a record with a good CRC
                // that is not a sample of this shape is a sample error.
                record.verify(crc32c::crc32c(data), path)?;
                return Err(DatasetError::Sample { path: path.to_owned(), offset, source });
            }
        };
        match self.transform {
            CosmoTransform::Log1p => {
                // One pass: each block of counts is checked (CRC) and decoded
                // while it is in cache. Nothing reaches the caller unverified:
                // on a CRC mismatch `x` is garbage and the error says so.
                let x_start = view.x.as_ptr() as usize - data.as_ptr() as usize;
                let mut crc = crc32c::crc32c(&data[..x_start]);
                for (raw, out) in view.x.chunks(FUSED_BLOCK).zip(x.chunks_mut(FUSED_BLOCK / 2)) {
                    crc = crc32c::crc32c_append(crc, raw);
                    decode_counts(raw, out, CosmoTransform::Log1p);
                }
                crc = crc32c::crc32c_append(crc, &data[x_start + view.x.len()..]);
                record.verify(crc, path)?;
            }
            CosmoTransform::DivideByMean => {
                // The mean needs every voxel: verify first, then decode.
                record.verify(crc32c::crc32c(data), path)?;
                decode_counts(view.x, x, self.transform);
            }
        }
        self.selection.pick_targets(&view.y, y);
        Ok(formats::tfrecord::framed_len(data.len()) as u64)
    }
}

impl CosmoflowDataset {
    /// `read_into` for a subset of the channels: verify the record, gather
    /// the selected channels' counts, decode those (a divide-by-mean takes
    /// the mean of what the model sees).
    fn read_selected(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let &(file, offset) =
            self.records.get(index).ok_or(DatasetError::OutOfRange { index, len: self.records.len() })?;
        let file = &self.files[file];
        let path = file.path();
        let record = file.pending_record_at(offset)?;
        let data = record.data;
        record.verify(crc32c::crc32c(data), path)?;
        let view = CosmoSampleView::parse(data, self.shape).map_err(|source| DatasetError::Sample {
            path: path.to_owned(),
            offset,
            source,
        })?;
        let mut picked = Vec::new();
        self.selection.gather_counts(view.x, self.shape.channels, &mut picked);
        decode_counts(&picked, x, self.transform);
        self.selection.pick_targets(&view.y, y);
        Ok(formats::tfrecord::framed_len(data.len()) as u64)
    }
}

/// Bytes of int16 counts checked and decoded per step of the fused pass:
/// input and output (3x this) stay in L2.
const FUSED_BLOCK: usize = 32 << 10;

/// `ln(1 + x)` for every int16 `x`, indexed by the value's bit pattern: a
/// 256 KiB table that stays in L2 and turns the transform into one load per
/// voxel, exactly equal to `f32::ln_1p` (a scalar `ln_1p` per voxel ran at
/// 6 % of the memory-bandwidth bound).
fn log1p_table() -> &'static [f32; 1 << 16] {
    static TABLE: std::sync::OnceLock<Box<[f32; 1 << 16]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Box::new([0f32; 1 << 16]);
        for (bits, v) in table.iter_mut().enumerate() {
            *v = f32::from(bits as u16 as i16).ln_1p();
        }
        table
    })
}

/// `ln(1 + x)` of little-endian int16 counts through the table. A
/// fixed-size table indexed by a u16 needs no bounds checks; eight voxels
/// come from one 16-byte load. On x86-64 the results go out with
/// non-temporal stores: a sample's 32 MiB of f32 will not be read again
/// before it leaves the cache anyway, and streaming stores skip reading each
/// output line before overwriting it (a third of the memory traffic).
fn log1p_counts(raw: &[u8], out: &mut [f32]) {
    let table = log1p_table();
    let one = |b: &[u8]| table[usize::from(u16::from_le_bytes([b[0], b[1]]))];
    // Scalar up to a 16-byte-aligned output address, as the streaming store needs.
    let head = out.as_ptr().align_offset(16).min(out.len());
    let (out_head, out_body) = out.split_at_mut(head);
    let (raw_head, raw_body) = raw.split_at((2 * head).min(raw.len()));
    for (o, b) in out_head.iter_mut().zip(raw_head.chunks_exact(2)) {
        *o = one(b);
    }
    let (blocks, tail) = raw_body.as_chunks::<16>();
    // `store_eight`'s contract: every chunk of 8 starts 16-byte aligned
    // (the first does after the head; each is 32 bytes long).
    assert!(out_body.is_empty() || out_body.as_ptr().align_offset(16) == 0);
    let mut outs = out_body.chunks_exact_mut(8);
    for (o, b) in outs.by_ref().zip(blocks) {
        let word = u128::from_le_bytes(*b);
        let mut eight = [0f32; 8];
        for (k, v) in eight.iter_mut().enumerate() {
            *v = table[((word >> (16 * k)) & 0xffff) as usize];
        }
        // SAFETY: `o` holds 8 f32 (`chunks_exact_mut(8)`) and is 16-byte
        // aligned (asserted above for the first chunk; chunks are 32 bytes).
        #[allow(unsafe_code)]
        unsafe {
            store_eight(o, &eight)
        };
    }
    for (o, b) in outs.into_remainder().iter_mut().zip(tail.chunks_exact(2)) {
        *o = one(b);
    }
    streaming_fence();
}

/// Write `eight` into `out` with two non-temporal 16-byte stores.
///
/// # Safety
///
/// `out` must hold at least 8 f32 and start at a 16-byte aligned address.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline(always)]
unsafe fn store_eight(out: &mut [f32], eight: &[f32; 8]) {
    use std::arch::x86_64::{_mm_loadu_ps, _mm_stream_ps};
    debug_assert!(out.len() >= 8 && out.as_ptr().align_offset(16) == 0);
    // SAFETY: SSE is part of the x86-64 baseline; by this function's
    // contract both 16-byte stores are in bounds and aligned; `eight` is
    // read with unaligned loads.
    unsafe {
        _mm_stream_ps(out.as_mut_ptr(), _mm_loadu_ps(eight.as_ptr()));
        _mm_stream_ps(out.as_mut_ptr().add(4), _mm_loadu_ps(eight.as_ptr().add(4)));
    }
}

/// Write `eight` into `out` (portable builds).
///
/// # Safety
///
/// None beyond the x86-64 version's contract, kept so callers are the same.
#[cfg(not(target_arch = "x86_64"))]
#[allow(unsafe_code)]
#[inline(always)]
unsafe fn store_eight(out: &mut [f32], eight: &[f32; 8]) {
    out[..8].copy_from_slice(eight);
}

/// Order the streaming stores before anything that follows (another thread
/// reading the batch).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn streaming_fence() {
    // SAFETY: `sfence` has no preconditions.
    unsafe { std::arch::x86_64::_mm_sfence() }
}

#[cfg(not(target_arch = "x86_64"))]
fn streaming_fence() {}

/// int16 little-endian counts to f32 with the transform. One pass reading
/// the bytes and writing the result: the loop the memory-bandwidth bound is about.
pub fn decode_counts(raw: &[u8], out: &mut [f32], transform: CosmoTransform) {
    match transform {
        CosmoTransform::Log1p => {
            log1p_counts(raw, out);
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

#[cfg(test)]
mod tests {
    use super::{CosmoTransform, decode_counts};
    use proptest::prelude::*;

    proptest! {
        /// Every int16 value, every output alignment and length (the scalar
        /// head and tail around the streaming 8-voxel body): exactly `ln_1p`.
        #[test]
        fn log1p_decode_equals_ln_1p_at_any_alignment(
            values in proptest::collection::vec(any::<i16>(), 0..100),
            skip in 0usize..8,
        ) {
            let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut storage = vec![0f32; values.len() + 8];
            let out = &mut storage[skip..skip + values.len()];
            decode_counts(&raw, out, CosmoTransform::Log1p);
            for (o, v) in out.iter().zip(&values) {
                prop_assert_eq!(o.to_bits(), f32::from(*v).ln_1p().to_bits(), "value {}", v);
            }
        }
    }
}
