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

    fn locate(&self, index: usize) -> String {
        match self.key(index) {
            Some(key) => format!("sample {index} ({}, key {key})", self.path.display()),
            None => format!("sample {index}"),
        }
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

fn shape_text(shape: ScatteringShape) -> String {
    format!("{} patterns of {}×{}", shape.positions, shape.height, shape.width)
}

impl ScatteringDataset {
    /// Read every sample's header and check that it has the first
    /// sample's shape: the error names the store and the first key that
    /// differs. Reads headers only (no payload is decoded).
    pub fn check_every_shape(&self) -> Result<(), DatasetError> {
        let reader = self.store.reader()?;
        for &key in &self.keys {
            let bytes = reader.get(key)?.ok_or_else(|| DatasetError::Shape {
                path: self.path.clone(),
                key,
                reason: "listed in the store's ids but absent".into(),
            })?;
            let header = scattering::decode_header(bytes).map_err(|source| DatasetError::Scattering {
                path: self.path.clone(),
                key,
                source,
            })?;
            if header.shape != self.shape {
                return Err(DatasetError::Shape {
                    path: self.path.clone(),
                    key,
                    reason: format!(
                        "{}, where the store's first sample has {}",
                        shape_text(header.shape),
                        shape_text(self.shape)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Several scattering stores read as one dataset, store after store, each
/// in key order: the output of `simgen multislice`, one store per rank
/// that wrote it. Every store must hold samples of one shape.
pub struct ScatteringStores {
    stores: Vec<ScatteringDataset>,
    /// Index of each store's first sample.
    starts: Vec<usize>,
    len: usize,
}

impl ScatteringStores {
    /// Open the stores at `paths` (directories holding `data.mdb`); the
    /// error names the first store whose samples differ in shape from the
    /// first store's.
    pub fn open(paths: &[PathBuf]) -> Result<Self, DatasetError> {
        let Some(first) = paths.first() else {
            return Err(DatasetError::Shape { path: PathBuf::new(), key: 0, reason: "no stores to open".into() });
        };
        let mut stores: Vec<ScatteringDataset> = Vec::with_capacity(paths.len());
        let mut starts = Vec::with_capacity(paths.len());
        let mut len = 0;
        for path in paths {
            let store = ScatteringDataset::open(path)?;
            if let Some(head) = stores.first()
                && store.shape() != head.shape()
            {
                return Err(DatasetError::Shape {
                    path: path.clone(),
                    key: store.key(0).unwrap_or(0),
                    reason: format!(
                        "{}, where {} holds {}",
                        shape_text(store.shape()),
                        first.display(),
                        shape_text(head.shape())
                    ),
                });
            }
            starts.push(len);
            len += store.len();
            stores.push(store);
        }
        Ok(ScatteringStores { stores, starts, len })
    }

    /// The shape every sample has.
    pub fn shape(&self) -> ScatteringShape {
        self.stores[0].shape()
    }

    /// [`ScatteringDataset::check_every_shape`] for every store.
    pub fn check_every_shape(&self) -> Result<(), DatasetError> {
        self.stores.iter().try_for_each(ScatteringDataset::check_every_shape)
    }

    /// The store holding sample `index`, and the index within it.
    fn store_of(&self, index: usize) -> Result<(&ScatteringDataset, usize), DatasetError> {
        if index >= self.len {
            return Err(DatasetError::OutOfRange { index, len: self.len });
        }
        let store = self.starts.partition_point(|&start| start <= index) - 1;
        Ok((&self.stores[store], index - self.starts[store]))
    }
}

impl Dataset for ScatteringStores {
    fn len(&self) -> usize {
        self.len
    }

    fn locate(&self, index: usize) -> String {
        self.store_of(index).map_or_else(|_| format!("sample {index}"), |(store, within)| store.locate(within))
    }

    fn x_len(&self) -> usize {
        self.shape().cbed_len()
    }

    fn y_len(&self) -> usize {
        self.shape().potential_len()
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let (store, within) = self.store_of(index)?;
        store.read_into(within, x, y)
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

    fn locate(&self, index: usize) -> String {
        format!("trace {index} ({})", self.path.display())
    }

    fn x_len(&self) -> usize {
        self.shape.iter().map(|&d| d as usize).product()
    }

    fn y_len(&self) -> usize {
        0
    }

    /// Only the observation; the target needs [`read_ragged`](Dataset::read_ragged).
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        crate::dataset::read_prefix(self, index, x, y)
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
