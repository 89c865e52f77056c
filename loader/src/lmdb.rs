//! Datasets in LMDB stores: multislice scattering samples and simulator
//! traces. Stores are opened read-only without locking (staged data does not
//! change), and every read runs in its own read-only transaction on the
//! worker thread that asks, so workers never share a transaction.

use std::path::{Path, PathBuf};

use formats::lmdb::{SampleStore, TraceStore};
use formats::scattering::{self, ScatteringShape};

use crate::dataset::{Dataset, DatasetError};

thread_local! {
    /// Per-worker buffer for decompressed payloads: reused, not reallocated.
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Multislice scattering samples from a [`SampleStore`]: `x` is the CBED
/// stack `(positions, H, W)`, `y` the projected potential `(H, W)`, both as
/// stored (f16 widened to f32). Samples are taken in key order; every sample
/// must have the first one's shape.
pub struct ScatteringDataset {
    store: SampleStore,
    path: PathBuf,
    keys: Vec<u64>,
    shape: ScatteringShape,
}

impl ScatteringDataset {
    /// Open the store at `path` and read the sample shape from its first sample.
    pub fn open(path: &Path) -> Result<Self, DatasetError> {
        let store = SampleStore::open(path)?;
        let (keys, shape) = {
            let reader = store.reader()?;
            let keys = reader.ids()?;
            let Some(&first) = keys.first() else {
                return Err(DatasetError::Shape { path: path.to_owned(), key: 0, reason: "the store is empty".into() });
            };
            let bytes = reader.get(first)?.ok_or_else(|| DatasetError::Shape {
                path: path.to_owned(),
                key: first,
                reason: "listed in the store's ids but absent".into(),
            })?;
            let header = scattering::decode_header(bytes).map_err(|source| DatasetError::Scattering {
                path: path.to_owned(),
                key: first,
                source,
            })?;
            (keys, header.shape)
        };
        Ok(ScatteringDataset { store, path: path.to_owned(), keys, shape })
    }

    /// The shape every sample has.
    pub fn shape(&self) -> ScatteringShape {
        self.shape
    }

    /// The store key of sample `index`.
    pub fn key(&self, index: usize) -> Option<u64> {
        self.keys.get(index).copied()
    }
}

impl Dataset for ScatteringDataset {
    fn len(&self) -> usize {
        self.keys.len()
    }

    fn x_len(&self) -> usize {
        self.shape.cbed_len()
    }

    fn y_len(&self) -> usize {
        self.shape.potential_len()
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let key = self.key(index).ok_or(DatasetError::OutOfRange { index, len: self.keys.len() })?;
        let reader = self.store.reader()?;
        let bytes = reader.get(key)?.ok_or_else(|| DatasetError::Shape {
            path: self.path.clone(),
            key,
            reason: "listed at open but absent now".into(),
        })?;
        SCRATCH
            .with_borrow_mut(|scratch| scattering::decode_into(bytes, x, y, scratch))
            .map_err(|source| DatasetError::Scattering { path: self.path.clone(), key, source })?;
        Ok(bytes.len() as u64)
    }
}

/// Simulator traces from a [`TraceStore`], in its trace-type order (pair it
/// with [`BucketedSampler`](crate::sampler::BucketedSampler)). `x` is the
/// observation tensor (every trace must have the first one's shape); the
/// target is variable-length: `(address id, value)` for each controlled
/// choice in execution order, so a batch's targets are read through
/// [`Batch::target`](crate::pipeline::Batch::target).
pub struct TraceDataset {
    store: TraceStore,
    path: PathBuf,
    shape: Vec<u32>,
}

impl TraceDataset {
    /// Open the store at `path` and read the observation shape from trace 0.
    pub fn open(path: &Path) -> Result<Self, DatasetError> {
        let store = TraceStore::open(path)?;
        let first = store.get(0)?.ok_or_else(|| DatasetError::Shape {
            path: path.to_owned(),
            key: 0,
            reason: "the store holds no trace".into(),
        })?;
        Ok(TraceDataset { store, path: path.to_owned(), shape: first.shape })
    }

    /// The store: address dictionary and trace types.
    pub fn store(&self) -> &TraceStore {
        &self.store
    }

    /// Observation shape.
    pub fn observation_shape(&self) -> &[u32] {
        &self.shape
    }
}

impl Dataset for TraceDataset {
    fn len(&self) -> usize {
        self.store.len() as usize
    }

    fn x_len(&self) -> usize {
        self.shape.iter().map(|&d| d as usize).product()
    }

    fn y_len(&self) -> usize {
        0
    }

    /// Only the observation; the target needs [`read_ragged`](Dataset::read_ragged).
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let mut target = Vec::new();
        let read = self.read_ragged(index, x, &mut target)?;
        let n = y.len().min(target.len());
        y[..n].copy_from_slice(&target[..n]);
        Ok(read)
    }

    fn read_ragged(&self, index: usize, x: &mut [f32], y: &mut Vec<f32>) -> Result<u64, DatasetError> {
        let len = self.len();
        if index >= len {
            return Err(DatasetError::OutOfRange { index, len });
        }
        let key = index as u64;
        let trace = self.store.get(key)?.ok_or_else(|| DatasetError::Shape {
            path: self.path.clone(),
            key,
            reason: "absent from the trace store".into(),
        })?;
        if trace.shape != self.shape || trace.observation.len() != x.len() {
            return Err(DatasetError::Shape {
                path: self.path.clone(),
                key,
                reason: format!("observation shape {:?}, the dataset's is {:?}", trace.shape, self.shape),
            });
        }
        x.copy_from_slice(&trace.observation);
        let mut bytes = 4 * trace.observation.len() as u64;
        for choice in trace.choices.iter().filter(|c| c.controlled) {
            // Address ids are dictionary indices, far below f32's 2^24 exact range.
            y.extend_from_slice(&[choice.address as f32, choice.value as f32]);
            bytes += 12;
        }
        Ok(bytes)
    }
}
