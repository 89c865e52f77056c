//! One job per destination: the writer of each node holds an exclusive lock
//! on `DEST/.stagehand/lock` from before it clears temporary files until it
//! ends.
//!
//! Two jobs staging into one destination at once would remove each other's
//! temporary files and write the same temporary names, so a file could reach
//! its final name with another job's bytes in it. The lock is
//! [`formats::lock::DirLock`] (`flock(2)`, released by the kernel when its
//! holder dies; its text names the holder for the next job's message).

use std::io;
use std::path::{Path, PathBuf};

use formats::lock::DirLock;

use crate::destination::journal;

/// The lock's file name in the state directory.
pub const LOCK_FILE: &str = "lock";

/// Why a destination could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process holds it.
    #[error("{dest} is being staged by another job ({holder}); wait for it to end, or stage into another destination")]
    Held {
        /// The destination.
        dest: PathBuf,
        /// What the holder wrote: `host H pid P`, or that it is not known.
        holder: String,
    },
    /// The lock file could not be created or locked.
    #[error("locking {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// A held destination lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DestLock {
    _lock: DirLock,
}

impl DestLock {
    /// Take the lock of `dest` without waiting, creating the state directory
    /// if needed (never through a symbolic link).
    pub fn acquire(dest: &Path) -> Result<DestLock, LockError> {
        let dir = journal::create_state_dir(dest).map_err(|source| LockError::Io { path: dest.into(), source })?;
        match DirLock::acquire(&dir.join(LOCK_FILE)) {
            Ok(lock) => Ok(DestLock { _lock: lock }),
            Err(formats::lock::LockError::Held { holder, .. }) => Err(LockError::Held { dest: dest.into(), holder }),
            Err(formats::lock::LockError::Io { path, source }) => Err(LockError::Io { path, source }),
            Err(e) => Err(LockError::Io { path: dir.join(LOCK_FILE), source: io::Error::other(e.to_string()) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_one_destination_names_the_holder() {
        let dest = tempfile::tempdir().unwrap();
        let held = DestLock::acquire(dest.path()).unwrap();
        let message = DestLock::acquire(dest.path()).unwrap_err().to_string();
        let pid = format!("pid {}", std::process::id());
        assert!(message.contains("being staged by another job") && message.contains(&pid), "{message}");
        drop(held);
        DestLock::acquire(dest.path()).unwrap();
    }

    #[test]
    fn a_lock_file_that_is_a_link_is_refused() {
        let dest = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(dest.path().join(journal::STATE_DIR)).unwrap();
        let target = elsewhere.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dest.path().join(journal::STATE_DIR).join(LOCK_FILE)).unwrap();
        let message = DestLock::acquire(dest.path()).unwrap_err().to_string();
        assert!(message.contains("symbolic link"), "{message}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
