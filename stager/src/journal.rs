//! The journal in a destination: which files are completely staged, so a
//! re-run after a crash or `kill -9` skips them. It lives in
//! `DEST/.stagehand/` with the temporary files of writes in progress, which
//! a new run removes before it starts.
//!
//! Each line is `{"path": ..., "xxh3": ...}`, appended and fsynced only after
//! the file was checked and renamed into place. Several writers (the naive
//! copy has one per rank) each append to their own `journal*.jsonl`.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use formats::checksum::Checksum;

/// Directory of Stagehand's bookkeeping inside a destination.
pub const STATE_DIR: &str = ".stagehand";

/// One completed file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Path relative to the destination.
    pub path: String,
    /// Its xxh3-64, as in the manifest.
    pub xxh3: Checksum,
}

/// The state directory of `dest`.
pub fn state_dir(dest: &Path) -> PathBuf {
    dest.join(STATE_DIR)
}

/// The directory for temporary files of writes in progress.
pub fn temp_dir(dest: &Path) -> PathBuf {
    state_dir(dest).join("tmp")
}

/// The temporary file of manifest file `f` in `temp_dir` while a writer
/// rank fills it (from its readers or from MPI: never both for one file).
pub fn part_path(temp_dir: &Path, f: usize) -> PathBuf {
    temp_dir.join(format!("{f}.part"))
}

/// Every journaled file of `dest` (all journals merged): path -> checksum.
/// A torn last line (a crash mid-append) is ignored.
pub fn load(dest: &Path) -> io::Result<HashMap<String, Checksum>> {
    let mut done = HashMap::new();
    let dir = state_dir(dest);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(done),
        Err(e) => return Err(e),
    };
    for item in entries {
        let path = item?.path();
        let is_journal = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("journal") && n.ends_with(".jsonl"));
        if !is_journal {
            continue;
        }
        for line in BufReader::new(File::open(&path)?).lines() {
            if let Ok(entry) = serde_json::from_str::<Entry>(&line?) {
                done.insert(entry.path, entry.xxh3);
            }
        }
    }
    Ok(done)
}

/// Remove temporary files left by an interrupted run.
pub fn clear_temp(dest: &Path) -> io::Result<()> {
    match fs::remove_dir_all(temp_dir(dest)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// An open journal that appends completed files.
pub struct Journal {
    file: File,
    path: PathBuf,
}

impl Journal {
    /// Open (creating) `DEST/.stagehand/<name>` for appending.
    pub fn open(dest: &Path, name: &str) -> io::Result<Journal> {
        fs::create_dir_all(state_dir(dest))?;
        let path = state_dir(dest).join(name);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Journal { file, path })
    }

    /// Record a completed file durably.
    pub fn append(&mut self, entry: &Entry) -> io::Result<()> {
        let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.file.sync_data()
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trips_and_ignores_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::open(dir.path(), "journal.jsonl").unwrap();
        j.append(&Entry { path: "a/b".into(), xxh3: Checksum(7) }).unwrap();
        let mut other = Journal::open(dir.path(), "journal.r1.jsonl").unwrap();
        other.append(&Entry { path: "c".into(), xxh3: Checksum(9) }).unwrap();
        std::fs::OpenOptions::new().append(true).open(j.path()).unwrap().write_all(b"{\"path\": \"torn").unwrap();
        let done = load(dir.path()).unwrap();
        assert_eq!(done.len(), 2);
        assert_eq!(done["a/b"], Checksum(7));
        assert_eq!(done["c"], Checksum(9));
    }

    #[test]
    fn missing_state_dir_means_nothing_done() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path()).unwrap().is_empty());
        clear_temp(dir.path()).unwrap();
    }
}
