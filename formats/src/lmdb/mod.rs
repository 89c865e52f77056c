//! LMDB stores over `heed`: a u64-keyed [`SampleStore`] (scattering samples,
//! any blob per sample) and the Etalumis-style [`trace_store`].
//!
//! A store is a directory holding `data.mdb`. Writers build it under a hidden
//! temporary name and rename it into place on `finish`, removing LMDB's lock
//! file, so a dataset directory never shows a half-written store. Readers open
//! it read-only without locking: staged data is immutable, and many worker
//! threads (or processes) read at once. When a write transaction hits the map
//! size, the map is doubled and the batch retried.

#![allow(unsafe_code)]

mod sample_store;
pub mod trace_codec;
pub mod trace_store;

use std::fs;
use std::path::{Path, PathBuf};

use heed::{Env, EnvFlags, EnvOpenOptions};

use crate::atomic::temp_path_for;

pub use sample_store::{SampleReader, SampleStore, SampleStoreWriter};
pub use trace_store::{TraceStore, TraceStoreWriter};

/// Map size a new store starts with; it doubles whenever a write fills it.
pub const INITIAL_MAP_SIZE: usize = 64 << 20;

/// What went wrong with an LMDB store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LmdbError {
    /// LMDB reported an error.
    #[error("{}: {what}: {source}", path.display())]
    Lmdb {
        /// Store directory.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Cause.
        source: heed::Error,
    },
    /// Filesystem error.
    #[error("{}: {source}", path.display())]
    Io {
        /// Path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A stored value does not decode.
    #[error("{}: key {key}: corrupt value at byte {at}: {reason}", path.display())]
    Corrupt {
        /// Store directory.
        path: PathBuf,
        /// Key of the value.
        key: u64,
        /// Byte within the value.
        at: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The file system has no room for what is about to be written.
    #[error("{}: needs about {needed} bytes more and its file system has {free} free", path.display())]
    NoSpace {
        /// Store directory.
        path: PathBuf,
        /// Bytes the write needs.
        needed: u64,
        /// Bytes free.
        free: u64,
    },
    /// A trace store was finished with a dictionary lacking one of its addresses.
    #[error("{}: address {address:?} is not in the dictionary the store was finished with", path.display())]
    Dictionary {
        /// Store directory.
        path: PathBuf,
        /// The address.
        address: String,
    },
    /// A database the store needs is absent.
    #[error("{}: not a Stagehand {kind} store (database {database:?} missing)", path.display())]
    Missing {
        /// Store directory.
        path: PathBuf,
        /// Store kind.
        kind: &'static str,
        /// Database name.
        database: &'static str,
    },
}

fn lmdb_error(path: &Path, what: &'static str) -> impl FnOnce(heed::Error) -> LmdbError {
    let path = path.to_owned();
    move |source| LmdbError::Lmdb { path, what, source }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> LmdbError {
    let path = path.to_owned();
    move |source| LmdbError::Io { path, source }
}

fn is_map_full(e: &heed::Error) -> bool {
    matches!(e, heed::Error::Mdb(heed::MdbError::MapFull))
}

/// Open a fresh environment for writing in the hidden temporary directory of `path`.
fn create_env(path: &Path, max_dbs: u32) -> Result<(Env, PathBuf), LmdbError> {
    let temp = fresh_temp_dir(path)?;
    let env = open_env_in(&temp, path, max_dbs, INITIAL_MAP_SIZE)?;
    Ok((env, temp))
}

/// An empty hidden directory beside `path` to build its store in.
fn fresh_temp_dir(path: &Path) -> Result<PathBuf, LmdbError> {
    let temp = temp_path_for(path);
    if temp.exists() {
        fs::remove_dir_all(&temp).map_err(io_error(&temp))?;
    }
    fs::create_dir_all(&temp).map_err(io_error(&temp))?;
    Ok(temp)
}

/// A writable environment in `dir` (errors name `path`, the store).
fn open_env_in(dir: &Path, path: &Path, max_dbs: u32, map_size: usize) -> Result<Env, LmdbError> {
    let mut options = EnvOpenOptions::new();
    options.map_size(map_size).max_dbs(max_dbs);
    // SAFETY: the directory is this writer's own fresh temporary one; no
    // other environment in this process has it open.
    unsafe { options.open(dir) }.map_err(lmdb_error(path, "creating environment"))
}

/// The finished stores this process has open, by canonical path. heed
/// refuses to open an environment twice in one process
/// (`EnvAlreadyOpened`), yet two readers of one store are common: two
/// datasets over the same files, a trace layout read before the dataset.
/// They share the first one's environment; it closes when the last reader
/// is dropped (the map holds no strong reference).
static OPEN_READERS: std::sync::Mutex<std::collections::BTreeMap<PathBuf, std::sync::Weak<Env>>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn open_read_only(path: &Path, max_dbs: u32) -> Result<std::sync::Arc<Env>, LmdbError> {
    if !path.join("data.mdb").is_file() {
        return Err(LmdbError::Io {
            path: path.join("data.mdb"),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no LMDB data file"),
        });
    }
    let key = path.canonicalize().map_err(|source| LmdbError::Io { path: path.to_owned(), source })?;
    let mut open = OPEN_READERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    open.retain(|_, env| env.strong_count() > 0);
    if let Some(env) = open.get(&key).and_then(std::sync::Weak::upgrade) {
        return Ok(env);
    }
    let env = std::sync::Arc::new(open_env_read_only(path, max_dbs)?);
    open.insert(key, std::sync::Arc::downgrade(&env));
    Ok(env)
}

fn open_env_read_only(path: &Path, max_dbs: u32) -> Result<Env, LmdbError> {
    let mut options = EnvOpenOptions::new();
    options.max_dbs(max_dbs).max_readers(1024);
    // SAFETY: READ_ONLY | NO_LOCK is sound because finished stores are never
    // written again: writers build a store under a temporary name and rename
    // it into place only when complete (see `finish_env`).
    unsafe { options.flags(EnvFlags::READ_ONLY | EnvFlags::NO_LOCK) };
    // A reader dropped on another thread just now may still be between
    // releasing its environment and heed forgetting it (`EnvAlreadyOpened`).
    for _ in 0..100 {
        // SAFETY: as above; `OPEN_READERS` opens each store once per process.
        match unsafe { options.open(path) } {
            Err(heed::Error::EnvAlreadyOpened) => std::thread::sleep(std::time::Duration::from_millis(1)),
            result => return result.map_err(lmdb_error(path, "opening environment")),
        }
    }
    // SAFETY: as above.
    unsafe { options.open(path) }.map_err(lmdb_error(path, "opening environment"))
}

/// Double the map of `env`. Called only from writer methods taking `&mut
/// self`, so no transaction of this process is alive.
fn grow_map(env: &Env, path: &Path) -> Result<(), LmdbError> {
    let current = env.info().map_size;
    // SAFETY: callers hold `&mut` to the store owning `env`, and every
    // transaction borrows that owner, so none is active in this process; the
    // store is private to its writer until `finish`.
    unsafe { env.resize(current.saturating_mul(2)) }.map_err(lmdb_error(path, "growing the map"))
}

/// Close the environment, drop the lock file, rename the directory into place.
fn finish_env(env: Env, temp: &Path, path: &Path) -> Result<(), LmdbError> {
    env.force_sync().map_err(lmdb_error(path, "syncing"))?;
    env.prepare_for_closing().wait();
    let lock = temp.join("lock.mdb");
    if lock.exists() {
        fs::remove_file(&lock).map_err(io_error(&lock))?;
    }
    if path.exists() {
        fs::remove_dir_all(path).map_err(io_error(path))?;
    }
    fs::rename(temp, path).map_err(io_error(path))
}

#[cfg(test)]
mod tests;
