//! The placement record: what `stager stage` placed in one node's
//! destination, so a reader of that destination (the trainer, the Python
//! package) needs nothing from the stager's command line.
//!
//! Two files in the destination's state directory, both written by the
//! node's writer after every file is in place, each atomically:
//!
//! ```text
//! DEST/.stagehand/source-manifest.json   the source dataset's manifest, compact JSON
//! DEST/.stagehand/placement.json         this record
//! ```
//!
//! The record names the manifest copy by its xxh3-64, the placement
//! (policy, seed, node count, this node) and this node's files with their
//! sizes, hashes and the global id of their first sample (samples are
//! numbered file by file in manifest order). A stage removes the record
//! before it changes anything, so a destination whose stage did not finish
//! has none. [`PlacementRecord::open`] refuses a record that does not match
//! its manifest copy or the files present, naming the destination.
//!
//! ```no_run
//! use formats::placement_record::PlacementRecord;
//!
//! let (record, manifest) = PlacementRecord::open(std::path::Path::new("/tmp/bb/node0"))?;
//! println!("node {} of {} holds {} of {} files", record.node, record.nodes, record.files.len(), manifest.files.len());
//! # Ok::<(), formats::placement_record::RecordError>(())
//! ```

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checksum::Checksum;
use crate::manifest::{Manifest, ManifestError, STATE_DIR};
use crate::placement::Policy;

/// The record's file name inside the destination's state directory.
pub const RECORD_FILE: &str = "placement.json";
/// The source manifest's copy inside the destination's state directory.
pub const SOURCE_MANIFEST_FILE: &str = "source-manifest.json";
/// Value of the `format` field.
pub const FORMAT: &str = "stagehand-placement";
/// Highest record version this build reads and the one it writes.
pub const VERSION: u32 = 1;

/// One file placed on the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedFile {
    /// Its index in the source manifest.
    pub index: usize,
    /// Path relative to the destination (as in the manifest).
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// xxh3-64 of its bytes.
    pub xxh3: Checksum,
    /// Samples it holds.
    pub samples: u64,
    /// Global id of its first sample.
    pub first_sample: u64,
}

/// What one node's destination holds and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementRecord {
    /// Always [`FORMAT`].
    pub format: String,
    /// Record version.
    pub version: u32,
    /// The source directory as the stager was given it (for files a node
    /// may lack, like DeepCAM's `stats.h5` under `per-node=N`).
    pub source: PathBuf,
    /// xxh3-64 of the bytes of [`SOURCE_MANIFEST_FILE`].
    pub manifest_xxh3: Checksum,
    /// The placement policy.
    #[serde(with = "policy_text")]
    pub policy: Policy,
    /// The placement seed.
    pub seed: u64,
    /// Nodes the dataset was placed on.
    pub nodes: usize,
    /// The node this destination belongs to.
    pub node: usize,
    /// This node's files, ascending by manifest index.
    pub files: Vec<PlacedFile>,
}

/// Why a destination's placement record cannot be used. Every variant
/// names the destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// No record: nothing was staged there, or the last stage did not finish.
    #[error(
        "{}: no placement record ({STATE_DIR}/{RECORD_FILE}): `stager stage` has not finished staging into it \
         (rerun it; files already in place are not copied again; if a `stager serve` is starting, set \
         STAGEHAND_SERVICE_WAIT=<seconds> to wait for it)",
        dest.display()
    )]
    Missing {
        /// The destination.
        dest: PathBuf,
    },
    /// Reading or writing a file of the record failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Not valid record JSON.
    #[error("{}: not a valid placement record: {source}", path.display())]
    Json {
        /// The record file.
        path: PathBuf,
        /// Cause.
        source: serde_json::Error,
    },
    /// Another format or a version from the future.
    #[error("{}: format {format:?} version {version} is not a {FORMAT} of version <= {VERSION}", path.display())]
    Version {
        /// The record file.
        path: PathBuf,
        /// Format found.
        format: String,
        /// Version found.
        version: u32,
    },
    /// The manifest copy is unreadable or invalid.
    #[error("{}: the staged manifest copy: {source}", dest.display())]
    Manifest {
        /// The destination.
        dest: PathBuf,
        /// Cause.
        source: ManifestError,
    },
    /// The record and the manifest copy, or the record and the files
    /// present, disagree: a record left from another dataset or a
    /// destination changed after staging.
    #[error("{}: the placement record does not match {what}: {detail}; restage it with `stager stage`", dest.display())]
    Mismatch {
        /// The destination.
        dest: PathBuf,
        /// What it was compared with.
        what: &'static str,
        /// The first difference.
        detail: String,
    },
}

impl PlacementRecord {
    /// The record of node `node`'s `files` (manifest indices, ascending)
    /// under `policy` and `seed` over `nodes` nodes, for `manifest` whose
    /// copy is `manifest_bytes`.
    pub fn new(
        manifest: &Manifest,
        manifest_bytes: &[u8],
        source: &Path,
        (policy, seed): (Policy, u64),
        (nodes, node): (usize, usize),
        files: &[usize],
    ) -> Self {
        let first = first_samples(manifest);
        let files = files
            .iter()
            .filter_map(|&index| {
                let entry = manifest.files.get(index)?;
                Some(PlacedFile {
                    index,
                    path: entry.path.clone(),
                    bytes: entry.bytes,
                    xxh3: entry.xxh3,
                    samples: entry.samples,
                    first_sample: first[index],
                })
            })
            .collect();
        PlacementRecord {
            format: FORMAT.to_owned(),
            version: VERSION,
            source: source.to_owned(),
            manifest_xxh3: Checksum::of(manifest_bytes),
            policy,
            seed,
            nodes,
            node,
            files,
        }
    }

    /// Path of the record in destination `dest`.
    pub fn path(dest: &Path) -> PathBuf {
        dest.join(STATE_DIR).join(RECORD_FILE)
    }

    /// Path of the manifest copy in destination `dest`.
    pub fn manifest_path(dest: &Path) -> PathBuf {
        dest.join(STATE_DIR).join(SOURCE_MANIFEST_FILE)
    }

    /// Remove `dest`'s record (none is fine): what a stage does before it
    /// changes the destination, so an unfinished stage leaves no record.
    pub fn remove(dest: &Path) -> Result<(), RecordError> {
        let path = Self::path(dest);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(RecordError::Io { path, source }),
        }
    }

    /// Write the manifest copy and then this record into `dest`, each
    /// atomically and durably.
    pub fn write(&self, dest: &Path, manifest_bytes: &[u8]) -> Result<(), RecordError> {
        // Serialising plain structs with string keys cannot fail.
        let mut record = serde_json::to_vec_pretty(self).unwrap_or_default();
        record.push(b'\n');
        write_atomically(&Self::manifest_path(dest), manifest_bytes)?;
        write_atomically(&Self::path(dest), &record)
    }

    /// Read `dest`'s record and manifest copy and check them against each
    /// other and against the files present (each at its recorded size; the
    /// contents are `stager verify`'s business).
    pub fn open(dest: &Path) -> Result<(PlacementRecord, Manifest), RecordError> {
        let (record, manifest) = Self::open_while_served(dest)?;
        record.check_present(dest).map_err(|detail| RecordError::Mismatch {
            dest: dest.to_owned(),
            what: "the files present",
            detail,
        })?;
        Ok((record, manifest))
    }

    /// [`open`](Self::open) without looking at the files: for a
    /// destination a staging service is still filling (it writes the
    /// record before the files, and answers for each file).
    pub fn open_while_served(dest: &Path) -> Result<(PlacementRecord, Manifest), RecordError> {
        let path = Self::path(dest);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RecordError::Missing { dest: dest.to_owned() });
            }
            Err(source) => return Err(RecordError::Io { path, source }),
        };
        let record: PlacementRecord =
            serde_json::from_slice(&bytes).map_err(|source| RecordError::Json { path: path.clone(), source })?;
        if record.format != FORMAT || record.version > VERSION {
            return Err(RecordError::Version { path, format: record.format, version: record.version });
        }
        let manifest_path = Self::manifest_path(dest);
        let manifest_bytes =
            fs::read(&manifest_path).map_err(|source| RecordError::Io { path: manifest_path.clone(), source })?;
        let mismatch = |what, detail| RecordError::Mismatch { dest: dest.to_owned(), what, detail };
        let digest = Checksum::of(&manifest_bytes);
        if digest != record.manifest_xxh3 {
            return Err(mismatch(
                "its manifest copy",
                format!("the record names manifest {}, the copy hashes to {digest}", record.manifest_xxh3),
            ));
        }
        let manifest = Manifest::from_json(&manifest_bytes, &manifest_path)
            .map_err(|source| RecordError::Manifest { dest: dest.to_owned(), source })?;
        record.check_against(&manifest).map_err(|detail| mismatch("its manifest copy", detail))?;
        Ok((record, manifest))
    }

    /// The first disagreement between the record's files and `manifest`'s.
    fn check_against(&self, manifest: &Manifest) -> Result<(), String> {
        if self.node >= self.nodes {
            return Err(format!("node {} of {} nodes", self.node, self.nodes));
        }
        let first = first_samples(manifest);
        let mut previous = None;
        for file in &self.files {
            if previous.is_some_and(|p| p >= file.index) {
                return Err(format!("file index {} is out of order", file.index));
            }
            previous = Some(file.index);
            let Some(entry) = manifest.files.get(file.index) else {
                return Err(format!("file index {} is past the manifest's {} files", file.index, manifest.files.len()));
            };
            if entry.path != file.path
                || entry.bytes != file.bytes
                || entry.xxh3 != file.xxh3
                || entry.samples != file.samples
                || first[file.index] != file.first_sample
            {
                return Err(format!("file {} ({}) is described differently", file.index, file.path));
            }
        }
        Ok(())
    }

    /// The first recorded file that is not in `dest` at its size.
    fn check_present(&self, dest: &Path) -> Result<(), String> {
        for file in &self.files {
            let path = dest.join(&file.path);
            match fs::metadata(&path) {
                Ok(meta) if meta.is_file() && meta.len() == file.bytes => {}
                Ok(meta) => {
                    return Err(format!("{} holds {} bytes, the record {}", file.path, meta.len(), file.bytes));
                }
                Err(e) => return Err(format!("{}: {e}", file.path)),
            }
        }
        Ok(())
    }

    /// The manifest indices of this node's files.
    pub fn file_indices(&self) -> Vec<usize> {
        self.files.iter().map(|f| f.index).collect()
    }
}

/// The global id of each file's first sample: samples are numbered file by
/// file in manifest order.
fn first_samples(manifest: &Manifest) -> Vec<u64> {
    let mut next = 0u64;
    manifest
        .files
        .iter()
        .map(|f| {
            let first = next;
            next = next.saturating_add(f.samples);
            first
        })
        .collect()
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RecordError> {
    crate::atomic::write_durably(path, bytes).map_err(|source| RecordError::Io { path: path.to_owned(), source })
}

/// The policy as the command line spells it (`per-node=6`).
mod policy_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::placement::Policy;

    pub fn serialize<S: Serializer>(policy: &Policy, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(policy)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Policy, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::manifest::{FileEntry, Schema};

    fn manifest() -> Manifest {
        let entry = |path: &str, bytes, samples| FileEntry {
            path: path.to_owned(),
            bytes,
            samples,
            xxh3: Checksum::of(path.as_bytes()),
        };
        Manifest::new(Schema::opaque(), vec![entry("a", 3, 2), entry("b", 4, 5), entry("c", 1, 7)])
    }

    /// A destination holding `files` of [`manifest`] and their record.
    pub(crate) fn staged(files: &[usize]) -> (tempfile::TempDir, Manifest) {
        let dir = tempfile::tempdir().unwrap();
        let manifest = manifest();
        fs::create_dir_all(dir.path().join(STATE_DIR)).unwrap();
        for &f in files {
            let entry = &manifest.files[f];
            fs::write(dir.path().join(&entry.path), vec![0u8; entry.bytes as usize]).unwrap();
        }
        let bytes = manifest.to_compact_json();
        let record = PlacementRecord::new(&manifest, &bytes, Path::new("/src"), (Policy::Shard, 3), (2, 1), files);
        record.write(dir.path(), &bytes).unwrap();
        (dir, manifest)
    }

    #[test]
    fn a_written_record_opens_with_its_manifest_and_first_sample_ids() {
        let (dir, manifest) = staged(&[0, 2]);
        let (record, copy) = PlacementRecord::open(dir.path()).unwrap();
        assert_eq!(copy, manifest);
        assert_eq!((record.policy, record.seed, record.nodes, record.node), (Policy::Shard, 3, 2, 1));
        assert_eq!(record.file_indices(), vec![0, 2]);
        assert_eq!(record.files[1].first_sample, 7);
        let text = fs::read_to_string(PlacementRecord::path(dir.path())).unwrap();
        assert!(text.contains("\"policy\": \"shard\""), "{text}");
    }

    #[test]
    fn no_record_says_the_stage_did_not_finish() {
        let dir = tempfile::tempdir().unwrap();
        let error = PlacementRecord::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains(&dir.path().display().to_string()) && error.contains("not finished"), "{error}");
    }

    #[test]
    fn a_missing_or_resized_file_is_refused_naming_the_destination() {
        let (dir, _) = staged(&[0, 2]);
        fs::write(dir.path().join("c"), b"longer").unwrap();
        let error = PlacementRecord::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains(&dir.path().display().to_string()) && error.contains("c holds 6 bytes"), "{error}");
        fs::remove_file(dir.path().join("a")).unwrap();
        let error = PlacementRecord::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("files present") && error.contains("a: "), "{error}");
    }

    #[test]
    fn a_record_from_another_dataset_is_refused() {
        let (dir, _) = staged(&[0]);
        let (other, _) = staged(&[1]);
        // Another destination's record beside this one's manifest copy.
        fs::copy(PlacementRecord::path(other.path()), PlacementRecord::path(dir.path())).unwrap();
        let mut changed = manifest();
        changed.files[0].bytes = 9;
        fs::write(PlacementRecord::manifest_path(dir.path()), changed.to_compact_json()).unwrap();
        let error = PlacementRecord::open(dir.path()).unwrap_err().to_string();
        assert!(error.contains("manifest copy") && error.contains(&dir.path().display().to_string()), "{error}");
    }

    #[test]
    fn removing_a_record_that_is_not_there_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        PlacementRecord::remove(dir.path()).unwrap();
        let (staged, _) = staged(&[0]);
        PlacementRecord::remove(staged.path()).unwrap();
        assert!(matches!(PlacementRecord::open(staged.path()), Err(RecordError::Missing { .. })));
    }
}
