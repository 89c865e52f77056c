//! A rank's scattering samples written into one LMDB sample store: the
//! writer loop `simgen multislice` runs on every rank, a library function
//! so that tests and other drivers write stores exactly as the command does.

use std::ops::Range;
use std::path::Path;

use formats::lmdb::{LmdbError, SampleStoreWriter};
use formats::scattering::{self, Compression, Precision, ScatteringError, ScatteringShape};

use super::generate::{ConfigError, Plan};

/// Samples put into the store per LMDB transaction: a few, so a sample's
/// encoded bytes do not wait long in memory, but not one per commit.
const BATCH: usize = 4;

/// Where a store's time and bytes went.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StoreStats {
    /// Samples written.
    pub samples: u64,
    /// Encoded bytes stored.
    pub stored_bytes: u64,
    /// Seconds in FFTs (summed over threads).
    pub fft_seconds: f64,
    /// Seconds setting samples up (potentials, transmission functions).
    pub setup_seconds: f64,
    /// Seconds scanning the probe positions.
    pub scan_seconds: f64,
    /// Slices propagated through.
    pub slices: u64,
}

/// A store that could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A sample could not be simulated.
    #[error("sample {index}: {source}")]
    Sample {
        /// The sample.
        index: u64,
        /// Why.
        source: ConfigError,
    },
    /// A sample could not be encoded.
    #[error("encoding sample {index}: {source}")]
    Encode {
        /// The sample.
        index: u64,
        /// Why.
        source: ScatteringError,
    },
    /// A plan whose samples have another shape than the store's.
    #[error("a sample block of shape {found:?} cannot join a store of {expected:?}")]
    Shape {
        /// The store's.
        expected: ScatteringShape,
        /// The plan's.
        found: ScatteringShape,
    },
    /// The store could not be written.
    #[error(transparent)]
    Lmdb(#[from] LmdbError),
}

/// The shape of `plan`'s samples.
pub fn shape(plan: &Plan) -> ScatteringShape {
    let n = plan.grid.n as u32;
    ScatteringShape { positions: plan.positions() as u32, height: n, width: n }
}

/// Simulate samples `samples` of `plan` on `pool` and write them into a
/// new store at `path`, calling `on_sample` after each: a [`StoreWriter`]
/// holding one plan's samples.
pub fn write_store(
    plan: &Plan,
    samples: Range<u64>,
    path: &Path,
    format: (Precision, Compression),
    pool: &rayon::ThreadPool,
    on_sample: impl FnMut(),
) -> Result<StoreStats, StoreError> {
    let mut writer = StoreWriter::create(path, shape(plan), format)?;
    writer.write(plan, samples, pool, on_sample)?;
    writer.finish()
}

/// A store being written, sample block by sample block, each block from its
/// own plan (the pairs of a structure list). The writer builds under a
/// hidden name and renames on finishing: a failed run (a full disk) leaves
/// no half-written store visible.
pub struct StoreWriter {
    writer: SampleStoreWriter,
    shape: ScatteringShape,
    format: (Precision, Compression),
    batch: Vec<(u64, Vec<u8>)>,
    stats: StoreStats,
}

impl StoreWriter {
    /// Start a store at `path` for samples of `shape`.
    pub fn create(path: &Path, shape: ScatteringShape, format: (Precision, Compression)) -> Result<Self, StoreError> {
        Ok(StoreWriter {
            writer: SampleStoreWriter::create(path)?,
            shape,
            format,
            batch: Vec::with_capacity(BATCH),
            stats: StoreStats::default(),
        })
    }

    /// Simulate samples `samples` of `plan` on `pool` and add them, calling
    /// `on_sample` after each. `plan` must make samples of the store's shape.
    pub fn write(
        &mut self,
        plan: &Plan,
        samples: Range<u64>,
        pool: &rayon::ThreadPool,
        mut on_sample: impl FnMut(),
    ) -> Result<(), StoreError> {
        if shape(plan) != self.shape {
            return Err(StoreError::Shape { expected: self.shape, found: shape(plan) });
        }
        let (precision, compression) = self.format;
        for index in samples {
            let sample = pool.install(|| plan.sample(index)).map_err(|source| StoreError::Sample { index, source })?;
            let bytes = scattering::encode(self.shape, &sample.cbed, &sample.target, precision, compression)
                .map_err(|source| StoreError::Encode { index, source })?;
            let stats = &mut self.stats;
            stats.samples += 1;
            stats.stored_bytes += bytes.len() as u64;
            stats.fft_seconds += sample.fft_time.as_secs_f64();
            stats.setup_seconds += sample.setup_time.as_secs_f64();
            stats.scan_seconds += sample.scan_time.as_secs_f64();
            stats.slices += sample.slices as u64;
            self.batch.push((index, bytes));
            if self.batch.len() == BATCH {
                put(&mut self.writer, &mut self.batch)?;
            }
            on_sample();
        }
        Ok(())
    }

    /// Commit what is left and make the store visible under its name.
    pub fn finish(mut self) -> Result<StoreStats, StoreError> {
        put(&mut self.writer, &mut self.batch)?;
        self.writer.finish()?;
        Ok(self.stats)
    }
}

fn put(writer: &mut SampleStoreWriter, batch: &mut Vec<(u64, Vec<u8>)>) -> Result<(), LmdbError> {
    let items: Vec<(u64, &[u8])> = batch.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    writer.put_batch(&items)?;
    batch.clear();
    Ok(())
}
