//! One job per destination: the writer of each node holds an exclusive lock
//! on `DEST/.stagehand/lock` from before it clears temporary files until it
//! ends.
//!
//! Two jobs staging into one destination at once would remove each other's
//! temporary files and write the same temporary names, so a file could reach
//! its final name with another job's bytes in it. The lock is `flock(2)`
//! (through [`File::try_lock`]): the kernel releases it when the holder dies,
//! even by `kill -9`, so a crashed job never leaves a stale lock behind. The
//! file's text names the holder (host and pid) for the message the next job
//! prints.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::journal;

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
    _file: File,
}

impl DestLock {
    /// Take the lock of `dest` without waiting, creating the state directory
    /// if needed (never through a symbolic link).
    pub fn acquire(dest: &Path) -> Result<DestLock, LockError> {
        let dir = journal::create_state_dir(dest).map_err(|source| LockError::Io { path: dest.into(), source })?;
        let path = dir.join(LOCK_FILE);
        let io_error = |source: io::Error| LockError::Io { path: path.clone(), source };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| io_error(journal::explain_link(&path, e)))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let holder = match file.read_to_string(&mut text) {
                    Ok(_) if !text.trim().is_empty() => text.trim().to_owned(),
                    _ => "holder not known yet".to_owned(),
                };
                return Err(LockError::Held { dest: dest.into(), holder });
            }
            Err(TryLockError::Error(e)) => return Err(io_error(e)),
        }
        let host = rustix::system::uname().nodename().to_string_lossy().into_owned();
        let holder = format!("host {host} pid {}\n", std::process::id());
        file.set_len(0).map_err(io_error)?;
        file.rewind().map_err(io_error)?;
        file.write_all(holder.as_bytes()).map_err(io_error)?;
        Ok(DestLock { _file: file })
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
