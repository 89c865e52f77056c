//! Where a generator writes: an output directory per rank (a node-local
//! template or one shared path), claimed empty before anything is written,
//! and a manifest built from the files the run wrote, never from what the
//! directory happens to hold.
//!
//! Ranks that write into one directory are found by the file system itself:
//! each drops a marker named by its rank into a directory named for the run,
//! and each lists which markers it sees. So `--out /local/data` on many
//! nodes gives every node its own manifest, and `--out /shared/data` gives
//! the shared directory one, written by the lowest rank that writes there.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use formats::manifest::{FileEntry, Schema};
//! let world = cluster::World::init()?;
//! let out = simgen::output::OutputDir::claim(&world, "/tmp/data".as_ref(), false);
//! let written: Vec<FileEntry> = Vec::new(); // what this rank wrote, via `out.describe`
//! out.write_manifest(&world, Schema::opaque(), written)?;
//! # Ok(()) }
//! ```

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use cluster::World;
use formats::manifest::{self, FileEntry, MANIFEST_FILE, Manifest, ManifestError, Schema};
use mpi::traits::*;

/// Prefix of the directory of rank markers; hidden, so no scan lists it.
const MARKERS_PREFIX: &str = ".simgen-ranks-";

/// The exit code of a usage error, as clap's.
const USAGE_EXIT: i32 = 2;

/// Why an output directory cannot be claimed or given its manifest. Every
/// variant names the path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// A file system operation failed.
    #[error("{doing} {}: {source}", path.display())]
    Io {
        /// What was being done (`creating the output directory`, `listing`, ...).
        doing: &'static str,
        /// The path.
        path: PathBuf,
        /// Cause.
        source: io::Error,
    },
    /// Another rank could not create its output directory.
    #[error("stopping: rank {0} could not create its output directory (see its message)")]
    OtherRank(usize),
    /// The directory holds files this run did not write.
    #[error(
        "{} is not empty ({count} entries, first {first:?}): a manifest must list only this run's files; {remedy}",
        path.display()
    )]
    NotEmpty {
        /// The directory.
        path: PathBuf,
        /// Entries found.
        count: usize,
        /// The first, by name.
        first: String,
        /// What to do.
        remedy: &'static str,
    },
    /// `--overwrite` cannot use the old manifest.
    #[error("--overwrite removes what {} lists, but cannot use it: {source}", path.display())]
    OldManifest {
        /// The old manifest.
        path: PathBuf,
        /// Cause.
        source: ManifestError,
    },
    /// A rank's list of written files did not arrive intact.
    #[error("the list of files rank {rank} wrote: {source}")]
    List {
        /// The rank.
        rank: usize,
        /// Cause.
        source: serde_json::Error,
    },
}

fn io_error(doing: &'static str, path: &Path) -> impl FnOnce(io::Error) -> OutputError {
    let path = path.to_owned();
    move |source| OutputError::Io { doing, path, source }
}

/// An output directory this run may write into.
#[derive(Debug)]
pub struct OutputDir {
    path: PathBuf,
    /// The ranks writing into this directory, lowest first.
    sharing: Vec<usize>,
}

impl OutputDir {
    /// Create `path` on every rank and claim it. The lowest rank writing
    /// into it checks that it is empty; with `overwrite`, it first removes
    /// the files the directory's manifest lists (and the manifest). Ends
    /// the job with one line naming the rank, and exit code 2 (a usage
    /// error: the user named a directory that cannot be used), if any rank
    /// fails.
    pub fn claim(world: &World, path: &Path, overwrite: bool) -> OutputDir {
        let token = run_token(world);
        let sharing = match sharing_ranks(world, path, token) {
            Ok(sharing) => sharing,
            Err(e) => world.fail_with_code(USAGE_EXIT, cluster::logging::chain(&e)),
        };
        let dir = OutputDir { path: path.to_owned(), sharing };
        if dir.is_leader(world) {
            let claimed =
                if overwrite { remove_listed(path).and_then(|()| warn_left(path)) } else { refuse_nonempty(path) };
            if let Err(e) = claimed {
                world.fail_with_code(USAGE_EXIT, cluster::logging::chain(&e));
            }
        }
        world.barrier();
        dir
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this rank writes the directory's shared files (the lowest
    /// rank writing there).
    pub fn is_leader(&self, world: &World) -> bool {
        self.sharing.first() == Some(&world.rank())
    }

    /// The manifest entry of `rel`, a file this rank wrote under the
    /// directory (read back, hashed, samples counted by `schema`).
    pub fn describe(&self, rel: &str, schema: &Schema) -> Result<FileEntry, ManifestError> {
        manifest::describe(&self.path, rel, schema)
    }

    /// Write the directory's manifest from every sharing rank's `written`
    /// entries. Collective: every rank calls it, with what it wrote.
    pub fn write_manifest(&self, world: &World, schema: Schema, written: Vec<FileEntry>) -> Result<(), OutputError> {
        // Serialising plain structs with string keys cannot fail.
        let mine = serde_json::to_vec(&written).unwrap_or_default();
        let all = world.all_gather_bytes(&mine);
        if self.is_leader(world) {
            let mut entries = Vec::new();
            for &rank in &self.sharing {
                let theirs: Vec<FileEntry> =
                    serde_json::from_slice(&all[rank]).map_err(|source| OutputError::List { rank, source })?;
                entries.extend(theirs);
            }
            let manifest = Manifest::new(schema, entries);
            let saved = manifest.validate().and_then(|()| manifest.save(&self.path.join(MANIFEST_FILE)));
            if let Err(e) = saved {
                world.fail(format!("writing the manifest of {}: {e}", self.path.display()));
            }
        }
        world.barrier();
        Ok(())
    }
}

/// A number naming this run, the same on every rank, so markers of an
/// earlier run that crashed are never mistaken for this one's.
fn run_token(world: &World) -> u64 {
    let mut token = 0u64;
    if world.is_root() {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        token = nanos ^ (u64::from(std::process::id()) << 40);
    }
    world.comm().process_at_rank(0).broadcast_into(&mut token);
    token
}

/// Create `path`, mark it with this rank, and return the ranks whose
/// markers this rank sees there: the ranks writing into the same directory.
/// Collective.
fn sharing_ranks(world: &World, path: &Path, token: u64) -> Result<Vec<usize>, OutputError> {
    let markers = path.join(format!("{MARKERS_PREFIX}{token:016x}"));
    let marked = fs::create_dir_all(&markers)
        .and_then(|()| fs::write(markers.join(world.rank().to_string()), b""))
        .map_err(io_error("creating the output directory", path));
    let failed_rank = first_failure(world, marked.is_err());
    marked?;
    if let Some(rank) = failed_rank {
        return Err(OutputError::OtherRank(rank));
    }
    let mut sharing = Vec::new();
    for item in fs::read_dir(&markers).map_err(io_error("listing", &markers))? {
        let name = item.map_err(io_error("listing", &markers))?.file_name();
        if let Some(rank) = name.to_str().and_then(|n| n.parse::<usize>().ok()) {
            sharing.push(rank);
        }
    }
    sharing.sort_unstable();
    // Every rank has listed before the lowest removes the markers.
    world.barrier();
    if sharing.first() == Some(&world.rank()) {
        fs::remove_dir_all(&markers).map_err(io_error("removing", &markers))?;
    }
    Ok(sharing)
}

/// The lowest rank for which `failed` is true, on every rank. Collective.
fn first_failure(world: &World, failed: bool) -> Option<usize> {
    let mine = if failed { world.rank() as u64 } else { u64::MAX };
    let mut first = u64::MAX;
    world.comm().all_reduce_into(&mine, &mut first, mpi::collective::SystemOperation::min());
    (first != u64::MAX).then_some(first as usize)
}

/// Remove the files `dir`'s manifest lists, then the manifest: what an
/// earlier run wrote. Files it does not list are left alone (and will not
/// be in the new manifest).
fn remove_listed(dir: &Path) -> Result<(), OutputError> {
    let path = dir.join(MANIFEST_FILE);
    let old_manifest = |source| OutputError::OldManifest { path: path.clone(), source };
    let old = match Manifest::load(&path) {
        Ok(old) => old,
        Err(ManifestError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(old_manifest(e)),
    };
    // Entries are relative and inside the directory (no `..`, no absolute
    // path, no link out of it), so removal stays inside it.
    old.validate_against_root(dir).map_err(old_manifest)?;
    for entry in &old.files {
        let file = dir.join(&entry.path);
        match fs::remove_file(&file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_error("--overwrite: removing", &file)(e)),
            _ => {}
        }
    }
    fs::remove_file(&path).map_err(io_error("--overwrite: removing", &path))
}

/// What `dir` holds besides this run's markers, sorted.
fn entries(dir: &Path) -> Result<Vec<String>, OutputError> {
    let mut found = Vec::new();
    for item in fs::read_dir(dir).map_err(io_error("listing", dir))? {
        let name = item.map_err(io_error("listing", dir))?.file_name().to_string_lossy().into_owned();
        if !name.starts_with(MARKERS_PREFIX) {
            found.push(name);
        }
    }
    found.sort();
    Ok(found)
}

/// An error unless `dir` holds nothing but this run's markers.
fn refuse_nonempty(dir: &Path) -> Result<(), OutputError> {
    let found = entries(dir)?;
    let Some(first) = found.first() else { return Ok(()) };
    let remedy = if found.iter().any(|n| n == MANIFEST_FILE) {
        "pass --overwrite to replace the files its manifest lists, or choose an empty directory"
    } else {
        "choose an empty directory, or pass --overwrite to write beside them (they stay out of the manifest)"
    };
    Err(OutputError::NotEmpty { path: dir.to_owned(), count: found.len(), first: first.clone(), remedy })
}

/// With `--overwrite`, say what stays in `dir` that the new manifest will
/// not list.
fn warn_left(dir: &Path) -> Result<(), OutputError> {
    let found = entries(dir)?;
    if let Some(first) = found.first() {
        tracing::warn!(
            "{}: {} entries no manifest listed are left in place and stay out of the new manifest (first {first:?})",
            dir.display(),
            found.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_anything_but_markers_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(format!("{MARKERS_PREFIX}00ff"))).unwrap();
        refuse_nonempty(dir.path()).unwrap();
        fs::write(dir.path().join("stray.bin"), b"x").unwrap();
        let message = refuse_nonempty(dir.path()).unwrap_err().to_string();
        assert!(message.contains("not empty") && message.contains("stray.bin"), "{message}");
        assert!(message.contains("write beside them"), "{message}");
    }

    #[test]
    fn overwrite_removes_only_what_the_old_manifest_lists() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("old.bin"), b"old").unwrap();
        let listed = manifest::describe(dir.path(), "old.bin", &Schema::opaque()).unwrap();
        Manifest::new(Schema::opaque(), vec![listed]).save(&dir.path().join(MANIFEST_FILE)).unwrap();
        fs::write(dir.path().join("theirs.txt"), b"keep").unwrap();
        remove_listed(dir.path()).unwrap();
        assert!(!dir.path().join("old.bin").exists() && !dir.path().join(MANIFEST_FILE).exists());
        assert_eq!(fs::read(dir.path().join("theirs.txt")).unwrap(), b"keep");
    }

    #[test]
    fn overwrite_never_removes_outside_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("victim"), b"keep").unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("link")).unwrap();
        let sum = formats::checksum::Checksum::of(b"keep");
        let json = serde_json::json!({
            "format": manifest::FORMAT, "version": 1, "schema": Schema::opaque(),
            "files": [{ "path": "link", "bytes": 4, "samples": 0, "xxh3": sum }],
        });
        fs::write(dir.path().join(MANIFEST_FILE), json.to_string()).unwrap();
        assert!(remove_listed(dir.path()).is_err());
        assert_eq!(fs::read(outside.path().join("victim")).unwrap(), b"keep");
    }
}
