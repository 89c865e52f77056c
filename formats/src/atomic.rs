//! Names for writing files atomically: build under a hidden temporary name
//! beside the target (same directory, so the final `rename` is atomic), then
//! rename. Scans skip hidden names, so a half-written file is never listed.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `dir/.name.tmp.<pid>` for the target `dir/name`.
pub fn temp_path_for(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

/// Write `bytes` to `path` atomically and durably: a temporary name beside
/// it, fsync, rename. A reader sees the old file or the whole new one; on
/// failure the temporary file is removed.
pub fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = temp_path_for(path);
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_durable_write_replaces_the_file_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("record.json");
        write_durably(&path, b"old").unwrap();
        write_durably(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(write_durably(&dir.path().join("missing/record.json"), b"x").is_err());
    }

    #[test]
    fn temp_name_is_hidden_and_beside_the_target() {
        let temp = temp_path_for(Path::new("/data/set/file.tfrecord"));
        assert_eq!(temp.parent(), Some(Path::new("/data/set")));
        assert!(temp.file_name().unwrap().to_str().unwrap().starts_with(".file.tfrecord.tmp."));
    }
}
