//! Samples keyed by u64 id (big-endian keys, so LMDB's order is numeric order).

use std::path::{Path, PathBuf};

use heed::byteorder::BigEndian;
use heed::types::{Bytes, U64};
use heed::{Database, Env, RoTxn, WithTls};

use super::{LmdbError, create_env, finish_env, grow_map, is_map_full, lmdb_error, open_read_only};

type SampleDb = Database<U64<BigEndian>, Bytes>;
const SAMPLES: &str = "samples";

/// Builds a sample store; visible under its final name only after
/// [`finish`](Self::finish). Dropped unfinished (a write failed, the disk
/// filled), it removes its temporary directory: nothing half-written stays.
pub struct SampleStoreWriter {
    /// `None` once finished.
    env: Option<Env>,
    db: SampleDb,
    path: PathBuf,
    temp: PathBuf,
    growths: u32,
}

impl SampleStoreWriter {
    /// Start a store at `path` (a directory).
    pub fn create(path: &Path) -> Result<Self, LmdbError> {
        let (env, temp) = create_env(path, 4)?;
        let mut txn = env.write_txn().map_err(lmdb_error(path, "starting a write"))?;
        let db =
            env.create_database(&mut txn, Some(SAMPLES)).map_err(lmdb_error(path, "creating the samples database"))?;
        txn.commit().map_err(lmdb_error(path, "committing"))?;
        Ok(SampleStoreWriter { env: Some(env), db, path: path.to_owned(), temp, growths: 0 })
    }

    /// Write a batch in one transaction; if the map is full, grow it and retry.
    pub fn put_batch(&mut self, items: &[(u64, &[u8])]) -> Result<(), LmdbError> {
        loop {
            match self.try_put(items) {
                Ok(()) => return Ok(()),
                Err(e) if is_map_full(&e) => {
                    grow_map(self.env(), &self.path)?;
                    self.growths += 1;
                }
                Err(e) => return Err(lmdb_error(&self.path, "writing samples")(e)),
            }
        }
    }

    fn env(&self) -> &Env {
        // Only `finish` and `drop` take the environment, and both end the writer.
        self.env.as_ref().unwrap_or_else(|| unreachable!("a finished writer is consumed"))
    }

    fn try_put(&self, items: &[(u64, &[u8])]) -> Result<(), heed::Error> {
        let mut txn = self.env().write_txn()?;
        for (id, value) in items {
            self.db.put(&mut txn, id, value)?;
        }
        txn.commit()
    }

    /// How many times the map was doubled.
    pub fn map_growths(&self) -> u32 {
        self.growths
    }

    /// Current map size in bytes.
    pub fn map_size(&self) -> usize {
        self.env().info().map_size
    }

    /// Sync, close and move the store into place.
    pub fn finish(mut self) -> Result<(), LmdbError> {
        let env = self.env.take().unwrap_or_else(|| unreachable!("a finished writer is consumed"));
        finish_env(env, &self.temp, &self.path)
    }
}

impl Drop for SampleStoreWriter {
    fn drop(&mut self) {
        if let Some(env) = self.env.take() {
            env.prepare_for_closing().wait();
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// A finished sample store, opened read-only; share it between threads.
pub struct SampleStore {
    env: std::sync::Arc<Env>,
    db: SampleDb,
    path: PathBuf,
}

impl SampleStore {
    /// Open the store at `path`.
    pub fn open(path: &Path) -> Result<Self, LmdbError> {
        let env = open_read_only(path, 4)?;
        let txn = env.read_txn().map_err(lmdb_error(path, "starting a read"))?;
        let db = env
            .open_database(&txn, Some(SAMPLES))
            .map_err(lmdb_error(path, "opening the samples database"))?
            .ok_or_else(|| LmdbError::Missing { path: path.to_owned(), kind: "sample", database: SAMPLES })?;
        // Committing (not dropping) keeps the database handle open.
        txn.commit().map_err(lmdb_error(path, "finishing the open"))?;
        Ok(SampleStore { env, db, path: path.to_owned() })
    }

    /// A reader with its own read transaction (one per worker thread).
    pub fn reader(&self) -> Result<SampleReader<'_>, LmdbError> {
        let txn = self.env.read_txn().map_err(lmdb_error(&self.path, "starting a read"))?;
        Ok(SampleReader { txn, db: self.db, path: &self.path })
    }

    /// Number of samples.
    pub fn len(&self) -> Result<u64, LmdbError> {
        self.reader()?.len()
    }

    /// True if the store holds no sample.
    pub fn is_empty(&self) -> Result<bool, LmdbError> {
        Ok(self.len()? == 0)
    }
}

/// Zero-copy access to samples inside one read transaction.
pub struct SampleReader<'a> {
    txn: RoTxn<'a, WithTls>,
    db: SampleDb,
    path: &'a Path,
}

impl SampleReader<'_> {
    /// The bytes of sample `id`, borrowed from the map.
    pub fn get(&self, id: u64) -> Result<Option<&[u8]>, LmdbError> {
        self.db.get(&self.txn, &id).map_err(lmdb_error(self.path, "reading a sample"))
    }

    /// Every sample id, in increasing order.
    pub fn ids(&self) -> Result<Vec<u64>, LmdbError> {
        let iter = self.db.iter(&self.txn).map_err(lmdb_error(self.path, "listing samples"))?;
        iter.map(|item| item.map(|(id, _)| id).map_err(lmdb_error(self.path, "listing samples"))).collect()
    }

    /// Number of samples.
    pub fn len(&self) -> Result<u64, LmdbError> {
        self.db.len(&self.txn).map_err(lmdb_error(self.path, "counting samples"))
    }

    /// True if there is no sample.
    pub fn is_empty(&self) -> Result<bool, LmdbError> {
        Ok(self.len()? == 0)
    }
}
