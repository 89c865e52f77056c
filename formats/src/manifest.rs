//! The dataset manifest: `manifest.json` at a dataset's root.
//!
//! It names the format and version, the sample schema, and one row per file
//! (relative path, bytes, samples, xxh3-64). Paths are relative to the root
//! and may not leave it: absolute paths, `..`, and symlinks that resolve
//! outside the root are errors naming the entry. [`scan`] builds a manifest
//! from a directory, hashing files on a pool of threads.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::checksum::{Checksum, hash_file, hash_file_mapped};
use crate::climate::{ClimateShape, STATS_FILE};
use crate::cosmoflow::CosmoShape;
use crate::tfrecord::{Access, TfRecordFile, scan_headers};

/// File name of the manifest at a dataset's root.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The directory at a destination's root where the stager keeps its
/// journal, lock and temporary files. No manifest entry may lie inside it,
/// and a scan never descends into it (nor into any hidden directory).
pub const STATE_DIR: &str = ".stagehand";
/// Value of the `format` field.
pub const FORMAT: &str = "stagehand-manifest";
/// Highest manifest version this build reads and the one it writes.
pub const VERSION: u32 = 1;

/// What kind of samples a dataset holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SampleKind {
    /// CosmoFlow TFRecords (MLPerf HPC layout).
    Cosmoflow,
    /// DeepCAM HDF5 files, one sample each, plus `stats.h5`.
    Deepcam,
    /// Multislice scattering samples in LMDB.
    Scattering,
    /// Simulator traces in LMDB.
    Traces,
    /// Collision-event images, many per HDF5 file (the HEP-CNN benchmark's layout).
    Jets,
    /// Square projected-density maps, many per `.npy` file (CosmoGAN's layout).
    #[serde(rename = "massmaps")]
    MassMaps,
    /// Files Stagehand moves but does not interpret.
    Opaque,
}

/// Element type of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Dtype {
    U8,
    I16,
    I32,
    F16,
    F32,
    F64,
}

/// One named array of a sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// Name (`x`, `climate/data`, ...).
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape, C order.
    pub shape: Vec<usize>,
}

/// The sample schema of a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// Kind of sample.
    pub kind: SampleKind,
    /// Its arrays.
    #[serde(default)]
    pub fields: Vec<Field>,
}

impl Schema {
    /// CosmoFlow: `x` int16 (D,D,D,C), `y` float32 (4).
    pub fn cosmoflow(shape: CosmoShape) -> Self {
        Schema {
            kind: SampleKind::Cosmoflow,
            fields: vec![
                Field { name: "x".into(), dtype: Dtype::I16, shape: shape.dims().to_vec() },
                Field { name: "y".into(), dtype: Dtype::F32, shape: vec![crate::cosmoflow::TARGETS] },
            ],
        }
    }

    /// DeepCAM: `climate/data` float32 (H,W,C), `climate/labels_0` int32 (H,W).
    pub fn deepcam(shape: ClimateShape) -> Self {
        Schema {
            kind: SampleKind::Deepcam,
            fields: vec![
                Field {
                    name: crate::climate::DATA.into(),
                    dtype: Dtype::F32,
                    shape: vec![shape.height, shape.width, shape.channels],
                },
                Field {
                    name: crate::climate::LABELS.into(),
                    dtype: Dtype::I32,
                    shape: vec![shape.height, shape.width],
                },
            ],
        }
    }

    /// Multislice scattering in LMDB sample stores: `cbed` (positions, H, W)
    /// and `target` (H, W), stored as `dtype` (f32 or f16).
    pub fn scattering(shape: crate::scattering::ScatteringShape, dtype: Dtype) -> Self {
        let (p, h, w) = (shape.positions as usize, shape.height as usize, shape.width as usize);
        Schema {
            kind: SampleKind::Scattering,
            fields: vec![
                Field { name: "cbed".into(), dtype, shape: vec![p, h, w] },
                Field { name: "target".into(), dtype, shape: vec![h, w] },
            ],
        }
    }

    /// Simulator traces in LMDB trace stores: the observation tensor of
    /// every trace is `observation` float32 of `shape`; the random choices
    /// are of varying number.
    pub fn traces(shape: &[usize]) -> Self {
        Schema {
            kind: SampleKind::Traces,
            fields: vec![Field { name: "observation".into(), dtype: Dtype::F32, shape: shape.to_vec() }],
        }
    }

    /// Collision events, many per HDF5 file: `data` float32 (C, H, W) and
    /// `label` int32 per event ([`crate::jets`]).
    pub fn jets(shape: crate::jets::EventShape) -> Self {
        Schema {
            kind: SampleKind::Jets,
            fields: vec![
                Field {
                    name: crate::jets::DATA.into(),
                    dtype: Dtype::F32,
                    shape: vec![shape.channels, shape.height, shape.width],
                },
                Field { name: crate::jets::LABEL.into(), dtype: Dtype::I32, shape: Vec::new() },
            ],
        }
    }

    /// Mass maps, many per `.npy` file: `maps` float32 (S, S) per map
    /// ([`crate::massmaps`]).
    pub fn massmaps(side: usize) -> Self {
        Schema {
            kind: SampleKind::MassMaps,
            fields: vec![Field { name: "maps".into(), dtype: Dtype::F32, shape: vec![side, side] }],
        }
    }

    /// Files of no interpreted kind.
    pub fn opaque() -> Self {
        Schema { kind: SampleKind::Opaque, fields: Vec::new() }
    }

    /// The CosmoFlow shape, if this is a CosmoFlow schema with a valid `x`.
    pub fn cosmo_shape(&self) -> Option<CosmoShape> {
        let x = self.fields.iter().find(|f| f.name == "x")?;
        match (self.kind, x.shape.as_slice()) {
            (SampleKind::Cosmoflow, &[d, d2, d3, c]) if d == d2 && d == d3 => Some(CosmoShape { size: d, channels: c }),
            _ => None,
        }
    }
}

/// One file of the dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the dataset root, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Samples it holds (0 for files that are not samples, like `stats.h5`).
    pub samples: u64,
    /// xxh3-64 of its bytes.
    pub xxh3: Checksum,
}

/// A dataset manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// Manifest version.
    pub version: u32,
    /// Sample schema.
    pub schema: Schema,
    /// Files, sorted by path.
    pub files: Vec<FileEntry>,
}

/// What is wrong with a manifest or a dataset directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// File or directory.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Not valid manifest JSON.
    #[error("{}: not a valid manifest: {source}", path.display())]
    Json {
        /// Manifest file.
        path: PathBuf,
        /// Cause.
        source: serde_json::Error,
    },
    /// Wrong `format` or a version from the future.
    #[error("{}: format {format:?} version {version} is not a {FORMAT} of version <= {VERSION}", path.display())]
    Version {
        /// Manifest file.
        path: PathBuf,
        /// Format found.
        format: String,
        /// Version found.
        version: u32,
    },
    /// An entry's path is absolute, has `..`, or is otherwise not a plain relative path.
    #[error("manifest entry {entry:?}: {reason}")]
    BadPath {
        /// The entry's path.
        entry: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The same path twice.
    #[error("manifest entry {0:?} appears more than once")]
    Duplicate(String),
    /// The entries' sizes or sample counts add up past what 64 bits hold.
    #[error("the manifest's file {what} add up to more than 2^64 (at entry {entry:?}); no dataset is that large")]
    TooLarge {
        /// `sizes` or `sample counts`.
        what: &'static str,
        /// The entry at which the sum overflowed.
        entry: String,
    },
    /// An entry resolves (through a symlink) outside the dataset root.
    #[error("manifest entry {entry:?} resolves to {} outside the dataset root {}", resolved.display(), root.display())]
    OutsideRoot {
        /// The entry's path.
        entry: String,
        /// Where it resolves.
        resolved: PathBuf,
        /// The root.
        root: PathBuf,
    },
    /// Counting the samples of a file failed.
    #[error("manifest entry {entry:?}: cannot count samples: {reason}")]
    Samples {
        /// The entry's path.
        entry: String,
        /// What failed.
        reason: String,
    },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ManifestError {
    let path = path.to_owned();
    move |source| ManifestError::Io { path, source }
}

/// Check that `entry` is a plain relative path: no root, no `..`, no `.`, not empty.
pub fn check_relative_path(entry: &str) -> Result<(), ManifestError> {
    let bad = |reason| Err(ManifestError::BadPath { entry: entry.to_owned(), reason });
    if entry.is_empty() {
        return bad("empty path");
    }
    if entry.contains('\0') {
        return bad("contains a NUL byte");
    }
    if entry.contains('\\') {
        return bad("contains a backslash; manifest paths use `/`");
    }
    if entry.starts_with('/') {
        return bad("is absolute");
    }
    if entry.split('/').next() == Some(STATE_DIR) {
        return bad("is inside `.stagehand/`, the directory a destination keeps its journal and lock in");
    }
    // Split by hand: `Path::components` silently drops interior `.` and `//`.
    for segment in entry.split('/') {
        match segment {
            "" => return bad("has an empty path component"),
            "." => return bad("contains `.`"),
            ".." => return bad("contains `..`"),
            _ => {}
        }
    }
    Ok(())
}

impl Manifest {
    /// A manifest of `files` (sorted here by path).
    pub fn new(schema: Schema, mut files: Vec<FileEntry>) -> Self {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Manifest { format: FORMAT.into(), version: VERSION, schema, files }
    }

    /// For each file, the file it travels with: `X.idx` (an index sidecar)
    /// follows `X` when both are listed.
    pub fn followers(&self) -> Vec<Option<usize>> {
        let index: std::collections::HashMap<&str, usize> =
            self.files.iter().enumerate().map(|(i, f)| (f.path.as_str(), i)).collect();
        self.files.iter().map(|f| f.path.strip_suffix(".idx").and_then(|data| index.get(data).copied())).collect()
    }

    /// The files each node needs under `policy` (see
    /// [`files_per_node_with`](crate::placement::files_per_node_with)), each
    /// sidecar on the nodes of its data file.
    pub fn files_per_node(
        &self,
        nodes: usize,
        policy: crate::placement::Policy,
        seed: u64,
    ) -> Result<Vec<Vec<usize>>, crate::placement::PlacementError> {
        let sizes: Vec<u64> = self.files.iter().map(|f| f.bytes).collect();
        crate::placement::files_per_node_with(&sizes, &self.followers(), nodes, policy, seed)
    }

    /// Sum of file sizes.
    pub fn total_bytes(&self) -> u64 {
        // Saturating: a manifest that was validated cannot overflow, and
        // one built in memory must not wrap to a small plausible number.
        self.files.iter().fold(0u64, |sum, f| sum.saturating_add(f.bytes))
    }

    /// Sum of samples.
    pub fn total_samples(&self) -> u64 {
        self.files.iter().fold(0u64, |sum, f| sum.saturating_add(f.samples))
    }

    /// The entry for `path`.
    pub fn entry(&self, path: &str) -> Option<&FileEntry> {
        self.files.binary_search_by(|f| f.path.as_str().cmp(path)).ok().map(|i| &self.files[i])
    }

    /// Check every entry's path and that no path repeats. Pure: touches no file.
    pub fn validate(&self) -> Result<(), ManifestError> {
        let mut seen = BTreeSet::new();
        let (mut bytes, mut samples) = (0u64, 0u64);
        for entry in &self.files {
            check_relative_path(&entry.path)?;
            if !seen.insert(entry.path.as_str()) {
                return Err(ManifestError::Duplicate(entry.path.clone()));
            }
            let too_large = |what| ManifestError::TooLarge { what, entry: entry.path.clone() };
            bytes = bytes.checked_add(entry.bytes).ok_or_else(|| too_large("sizes"))?;
            samples = samples.checked_add(entry.samples).ok_or_else(|| too_large("sample counts"))?;
        }
        Ok(())
    }

    /// [`validate`](Self::validate), then check that every entry exists under
    /// `root` and does not resolve (through symlinks) outside it.
    ///
    /// Each directory is resolved once, then each entry costs one `lstat`
    /// unless it is itself a link: resolving every entry's whole path anew
    /// cost a `readlink` per component per file, seconds for the seeds'
    /// hundreds of thousands of files while every other rank waited.
    pub fn validate_against_root(&self, root: &Path) -> Result<(), ManifestError> {
        self.validate()?;
        let root = root.canonicalize().map_err(io_error(root))?;
        let mut dirs: HashMap<&str, PathBuf> = HashMap::new();
        for entry in &self.files {
            check_relative_path(&entry.path)?;
            let (parent, name) = entry.path.rsplit_once('/').unwrap_or(("", &entry.path));
            let dir = match dirs.get(parent) {
                Some(dir) => dir,
                None => {
                    let resolved = if parent.is_empty() { Ok(root.clone()) } else { resolve_inside(&root, parent) };
                    // An entry under a directory that resolves outside is named as the entry.
                    let resolved = resolved.map_err(|e| match e {
                        ManifestError::OutsideRoot { resolved, root, .. } => ManifestError::OutsideRoot {
                            entry: entry.path.clone(),
                            resolved: resolved.join(name),
                            root,
                        },
                        other => other,
                    })?;
                    dirs.entry(parent).or_insert(resolved)
                }
            };
            let path = dir.join(name);
            let meta = fs::symlink_metadata(&path).map_err(io_error(&root.join(&entry.path)))?;
            if meta.file_type().is_symlink() {
                resolve_inside(&root, &entry.path)?;
            }
        }
        Ok(())
    }

    /// Parse from JSON bytes (as broadcast between ranks); `origin` names them in errors.
    pub fn from_json(bytes: &[u8], origin: &Path) -> Result<Self, ManifestError> {
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|source| ManifestError::Json { path: origin.to_owned(), source })?;
        if manifest.format != FORMAT || manifest.version > VERSION {
            return Err(ManifestError::Version {
                path: origin.to_owned(),
                format: manifest.format,
                version: manifest.version,
            });
        }
        manifest.validate()?;
        Ok(manifest)
    }

    /// Serialise to pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        // Serialising plain structs with string keys cannot fail.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Serialise to JSON without indentation (to send between ranks).
    pub fn to_compact_json(&self) -> Vec<u8> {
        // Serialising plain structs with string keys cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Load and validate a manifest file.
    pub fn load(path: &Path) -> Result<Self, ManifestError> {
        let bytes = fs::read(path).map_err(io_error(path))?;
        Self::from_json(&bytes, path)
    }

    /// Write atomically (temp file, fsync, rename).
    pub fn save(&self, path: &Path) -> Result<(), ManifestError> {
        let mut json = self.to_json();
        json.push(b'\n');
        crate::atomic::write_durably(path, &json).map_err(io_error(path))
    }
}

/// The canonical path of `entry` under the canonical `root`, refusing any
/// that resolves outside it.
pub fn resolve_inside(root: &Path, entry: &str) -> Result<PathBuf, ManifestError> {
    check_relative_path(entry)?;
    let joined = root.join(entry);
    let resolved = joined.canonicalize().map_err(io_error(&joined))?;
    if !resolved.starts_with(root) {
        return Err(ManifestError::OutsideRoot { entry: entry.to_owned(), resolved, root: root.to_owned() });
    }
    Ok(resolved)
}

/// How to scan a dataset directory.
#[derive(Debug, Clone)]
pub struct ScanOptions<'a> {
    /// Hashing threads (at least 1).
    pub threads: usize,
    /// Schema to record; also decides how samples are counted.
    pub schema: Schema,
    /// Bytes hashed so far, for a progress display.
    pub progress: Option<&'a AtomicU64>,
    /// How to read files: [`Access::Read`] (safe everywhere, the default) or
    /// [`Access::Map`] (faster on node-local storage; never on a file system
    /// where files may change under the scan).
    pub access: Access,
}

impl ScanOptions<'_> {
    /// One thread per core, the given schema, no progress counter.
    pub fn new(schema: Schema) -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        ScanOptions { threads, schema, progress: None, access: Access::Read }
    }
}

/// Build the manifest of the dataset under `root`: every regular file
/// (hidden files and the manifest itself excepted) hashed on `threads`
/// threads, largest files first. A symlink is followed only if it resolves
/// inside `root`; one that leaves it is an error naming the entry.
pub fn scan(root: &Path, options: &ScanOptions<'_>) -> Result<Manifest, ManifestError> {
    let canonical_root = root.canonicalize().map_err(io_error(root))?;
    let mut files = list_files(&canonical_root)?;
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));

    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(files.len()));
    let first_error = Mutex::new(None);
    let threads = options.threads.clamp(1, files.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut buffer = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((rel, _)) = files.get(i) else { break };
                    match scan_one(&canonical_root, rel, options, &mut buffer) {
                        Ok(entry) => lock(&results).push(entry),
                        Err(e) => {
                            lock(&first_error).get_or_insert(e);
                            next.store(files.len(), Ordering::Relaxed);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = lock(&first_error).take() {
        return Err(e);
    }
    let entries = std::mem::take(&mut *lock(&results));
    Ok(Manifest::new(options.schema.clone(), entries))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// (relative path, size) of every file to include.
fn list_files(root: &Path) -> Result<Vec<(String, u64)>, ManifestError> {
    let mut out = Vec::new();
    // Hidden entries are pruned, not just skipped: a hidden directory (a
    // former destination's `.stagehand/` above all) is never descended into.
    let walk = walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name();
    for item in walk.into_iter().filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')) {
        let item = item.map_err(|e| {
            let path = e.path().map(Path::to_owned).unwrap_or_else(|| root.to_owned());
            ManifestError::Io { path, source: e.into() }
        })?;
        if item.depth() == 0 {
            continue;
        }
        let rel_path = item.path().strip_prefix(root).unwrap_or(item.path());
        let Some(rel) = rel_path.to_str().map(str::to_owned) else {
            return Err(ManifestError::BadPath {
                entry: rel_path.to_string_lossy().into_owned(),
                reason: "is not UTF-8",
            });
        };
        if item.depth() == 1 && rel == MANIFEST_FILE {
            continue;
        }
        let file_type = item.file_type();
        if file_type.is_dir() {
            continue;
        }
        let meta = if file_type.is_symlink() {
            let resolved = resolve_inside(root, &rel)?;
            let meta = fs::metadata(&resolved).map_err(io_error(&resolved))?;
            if !meta.is_file() {
                return Err(ManifestError::BadPath {
                    entry: rel,
                    reason: "is a symlink to a directory, which is not followed",
                });
            }
            meta
        } else if file_type.is_file() {
            item.metadata().map_err(|e| ManifestError::Io { path: item.path().to_owned(), source: e.into() })?
        } else {
            return Err(ManifestError::BadPath { entry: rel, reason: "is not a regular file" });
        };
        out.push((rel, meta.len()));
    }
    Ok(out)
}

/// The entry of one file `rel` under `root`, as [`scan`] would make it
/// (read and hashed, samples counted by `schema`): for a writer that builds
/// its manifest from the files it wrote instead of from what a directory
/// happens to hold.
pub fn describe(root: &Path, rel: &str, schema: &Schema) -> Result<FileEntry, ManifestError> {
    check_relative_path(rel)?;
    scan_one(root, rel, &ScanOptions::new(schema.clone()), &mut Vec::new())
}

fn scan_one(
    root: &Path,
    rel: &str,
    options: &ScanOptions<'_>,
    buffer: &mut Vec<u8>,
) -> Result<FileEntry, ManifestError> {
    let path = root.join(rel);
    let hashed = match options.access {
        Access::Read => hash_file(&path, buffer),
        Access::Map => hash_file_mapped(&path),
    };
    let (bytes, xxh3) = hashed.map_err(io_error(&path))?;
    if let Some(p) = options.progress {
        p.fetch_add(bytes, Ordering::Relaxed);
    }
    let samples = count_samples(&path, rel, &options.schema)?;
    Ok(FileEntry { path: rel.to_owned(), bytes, samples, xxh3 })
}

/// Samples in a file, by the schema's kind: TFRecord records for CosmoFlow,
/// one per `.h5` file but `stats.h5` for DeepCAM, the store's count for the
/// `data.mdb` of a scattering or trace store, the events of a jets `.h5`
/// file, the maps of a mass-map `.npy` file, none otherwise.
fn count_samples(path: &Path, rel: &str, schema: &Schema) -> Result<u64, ManifestError> {
    let name = Path::new(rel).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match schema.kind {
        SampleKind::Cosmoflow if name.contains(".tfrecord") && !name.ends_with(".idx") => {
            let samples = |reason: String| ManifestError::Samples { entry: rel.to_owned(), reason };
            let file = TfRecordFile::open(path).map_err(|e| samples(e.to_string()))?;
            let spans = scan_headers(file.as_bytes(), path).map_err(|e| samples(e.to_string()))?;
            Ok(spans.len() as u64)
        }
        SampleKind::Deepcam if name.ends_with(".h5") && name != STATS_FILE => Ok(1),
        // An LMDB sample store is a directory; its data file carries the count.
        SampleKind::Scattering if name == "data.mdb" => {
            let samples = |reason: String| ManifestError::Samples { entry: rel.to_owned(), reason };
            let store = path.parent().ok_or_else(|| samples("a store file needs its directory".into()))?;
            crate::lmdb::SampleStore::open(store).and_then(|s| s.len()).map_err(|e| samples(e.to_string()))
        }
        SampleKind::Traces if name == "data.mdb" => {
            let samples = |reason: String| ManifestError::Samples { entry: rel.to_owned(), reason };
            let store = path.parent().ok_or_else(|| samples("a store file needs its directory".into()))?;
            crate::lmdb::TraceStore::open(store).map(|s| s.len()).map_err(|e| samples(e.to_string()))
        }
        SampleKind::Jets if name.ends_with(".h5") => crate::jets::count_events(path)
            .map_err(|e| ManifestError::Samples { entry: rel.to_owned(), reason: e.to_string() }),
        SampleKind::MassMaps if name.ends_with(".npy") => crate::massmaps::count_maps(path)
            .map_err(|e| ManifestError::Samples { entry: rel.to_owned(), reason: e.to_string() }),
        _ => Ok(0),
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
