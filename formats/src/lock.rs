//! One job at a time in a directory a job owns while it runs (a stager's
//! destination, a trainer's checkpoint directory): an exclusive `flock(2)`
//! on a lock file inside it, through [`File::try_lock`].
//!
//! The kernel releases the lock when its holder dies, even by `kill -9`, so
//! a crashed job never leaves a stale lock behind. The file's text names the
//! holder (host and pid) for the message the next job prints. The lock file
//! is opened with `O_NOFOLLOW`: a link planted in its place is refused, never
//! written through.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a directory could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process holds it.
    #[error("{path} is held by another job ({holder})")]
    Held {
        /// The lock file.
        path: PathBuf,
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

/// A held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Take the lock file `path` (its directory must exist) without waiting.
    pub fn acquire(path: &Path) -> Result<DirLock, LockError> {
        let io_error = |source: io::Error| LockError::Io { path: path.to_owned(), source };
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
                    io_error(io::Error::other("it is a symbolic link; a lock is never taken through one (remove it)"))
                }
                _ => io_error(e),
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut text = String::new();
                let holder = match file.read_to_string(&mut text) {
                    Ok(_) if !text.trim().is_empty() => text.trim().to_owned(),
                    _ => "holder not known yet".to_owned(),
                };
                return Err(LockError::Held { path: path.to_owned(), holder });
            }
            Err(TryLockError::Error(e)) => return Err(io_error(e)),
        }
        let host = rustix::system::uname().nodename().to_string_lossy().into_owned();
        let holder = format!("host {host} pid {}\n", std::process::id());
        file.set_len(0).map_err(io_error)?;
        file.rewind().map_err(io_error)?;
        file.write_all(holder.as_bytes()).map_err(io_error)?;
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_a_released_one_can_be_taken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = DirLock::acquire(&path).unwrap();
        let message = DirLock::acquire(&path).unwrap_err().to_string();
        let pid = format!("pid {}", std::process::id());
        assert!(message.contains("held by another job") && message.contains(&pid), "{message}");
        drop(held);
        DirLock::acquire(&path).unwrap();
    }

    #[test]
    fn a_lock_file_that_is_a_link_is_refused() {
        let (dir, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let target = elsewhere.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("lock")).unwrap();
        let message = DirLock::acquire(&dir.path().join("lock")).unwrap_err().to_string();
        assert!(message.contains("symbolic link"), "{message}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
