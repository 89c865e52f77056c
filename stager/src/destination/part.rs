//! The one way a file reaches a destination: written under its temporary
//! name ([`part_path`]) by exactly one rank of the node, checked, and
//! renamed into place. The fan-out's readers, the node writer receiving
//! over MPI and the naive copy all write through a [`PartFile`].

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::directory::prepare_destination;
use super::journal::{FileIdentity, part_path};

/// Why a temporary file could not be placed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceError {
    /// The temporary file is not what this rank wrote (replaced or cut).
    #[error("before placing {rel}")]
    Check {
        /// The file's path under the destination.
        rel: String,
        /// What was found.
        source: io::Error,
    },
    /// Its directory under the destination could not be made.
    #[error("placing {rel}")]
    Directory {
        /// The file's path under the destination.
        rel: String,
        /// Why.
        source: io::Error,
    },
    /// The rename into place failed.
    #[error("renaming into {}", target.display())]
    Rename {
        /// The final path.
        target: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The placed file could not be described for the journal.
    #[error("after placing {}", target.display())]
    Identity {
        /// The final path.
        target: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// A file being written under its temporary name.
#[derive(Debug)]
pub struct PartFile {
    file: File,
    path: PathBuf,
}

impl PartFile {
    /// Create (or truncate) the temporary file of manifest file `f` in the
    /// destination's temporary directory `temp_dir`.
    pub fn create(temp_dir: &Path, f: usize) -> io::Result<PartFile> {
        let path = part_path(temp_dir, f);
        let file =
            File::create(&path).map_err(|e| io::Error::new(e.kind(), format!("creating {}: {e}", path.display())))?;
        Ok(PartFile { file, path })
    }

    /// Write `piece` at `offset`.
    pub fn write_at(&self, piece: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(piece, offset)
    }

    /// Its temporary path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove it without placing it.
    pub fn discard(self) {
        let _ = fs::remove_file(&self.path);
    }

    /// Rename it to `rel` under `dest` once it is checked to be still the
    /// file under the temporary name and `bytes` long, so nothing but the
    /// bytes this rank wrote and hashed can reach the final name. Returns
    /// the placed file's identity for the journal: taken after the rename
    /// (which may move the change time), from the open file, not the path.
    pub fn place(self, dest: &Path, rel: &str, bytes: u64) -> Result<FileIdentity, PlaceError> {
        check(&self.file, &self.path, bytes).map_err(|source| PlaceError::Check { rel: rel.to_owned(), source })?;
        let target =
            prepare_destination(dest, rel).map_err(|source| PlaceError::Directory { rel: rel.to_owned(), source })?;
        fs::rename(&self.path, &target).map_err(|source| PlaceError::Rename { target: target.clone(), source })?;
        FileIdentity::of_open(&self.file).map_err(|source| PlaceError::Identity { target, source })
    }
}

/// An error unless the open `file` is the file named `path` and holds
/// `bytes` bytes: a temporary file replaced or truncated behind the
/// writer's back (by anything but this job, which holds the destination's
/// lock) must not be renamed into place.
fn check(file: &File, path: &Path, bytes: u64) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let open = file.metadata()?;
    let named = fs::symlink_metadata(path)?;
    if (open.dev(), open.ino()) != (named.dev(), named.ino()) {
        return Err(io::Error::other(format!("{} was replaced while it was written", path.display())));
    }
    if open.len() != bytes {
        return Err(io::Error::other(format!(
            "{} holds {} bytes where {bytes} were written",
            path.display(),
            open.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_temporary_file_replaced_or_cut_behind_the_writer_is_not_placed() {
        let dir = tempfile::tempdir().unwrap();
        let part = PartFile::create(dir.path(), 0).unwrap();
        part.write_at(&[7u8; 100], 0).unwrap();
        check(&part.file, part.path(), 100).unwrap();
        assert!(check(&part.file, part.path(), 101).unwrap_err().to_string().contains("holds 100 bytes"));
        fs::remove_file(part.path()).unwrap();
        fs::write(part.path(), [7u8; 100]).unwrap();
        assert!(check(&part.file, part.path(), 100).unwrap_err().to_string().contains("replaced"));
        let e = part.place(dir.path(), "x", 100).unwrap_err();
        assert!(matches!(e, PlaceError::Check { .. }), "{e}");
        assert!(!dir.path().join("x").exists());
    }

    #[test]
    fn a_checked_file_is_placed_and_described_as_placed() {
        let dest = tempfile::tempdir().unwrap();
        let temp = dest.path().join("tmp");
        fs::create_dir(&temp).unwrap();
        let part = PartFile::create(&temp, 3).unwrap();
        part.write_at(b"abc", 0).unwrap();
        let placed = part.place(dest.path(), "a/b/c.bin", 3).unwrap();
        assert_eq!(fs::read(dest.path().join("a/b/c.bin")).unwrap(), b"abc");
        assert_eq!(placed, FileIdentity::of(&dest.path().join("a/b/c.bin")).unwrap());
        assert_eq!(fs::read_dir(&temp).unwrap().count(), 0);
    }
}
