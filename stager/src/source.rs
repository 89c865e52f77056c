//! The manifest of the source every command works from: read from the
//! source (or scanned from it when it has none), and for the MPI commands
//! loaded and checked by rank 0 alone and broadcast, so that no other rank
//! touches the source's metadata.

use std::path::{Path, PathBuf};

use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest, ManifestError, ScanOptions, Schema};
use mpi::traits::*;

/// Why there is no manifest to work from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The manifest file could not be read or is not valid.
    #[error("loading manifest {}", path.display())]
    Load {
        /// The manifest file.
        path: PathBuf,
        /// Why.
        source: ManifestError,
    },
    /// Scanning the source, or checking the manifest against it, failed.
    #[error(transparent)]
    Dataset(#[from] ManifestError),
    /// The source is not a directory and no manifest was given.
    #[error("--source {} is not a directory: stage a dataset directory", .0.display())]
    NotADirectory(PathBuf),
    /// Nothing to stage: almost always a wrong `--source`.
    #[error("{} holds no files (and its manifest lists none): nothing to stage; check --source", .0.display())]
    Empty(PathBuf),
    /// Rank 0 failed and said why in its own message.
    #[error("rank 0 could not load the manifest (see its message)")]
    Remote,
}

/// `manifest`, or `SOURCE/manifest.json`, or (when neither exists) a scan
/// of `source`, said on stderr.
pub fn load(source: &Path, manifest: Option<&Path>) -> Result<Manifest, SourceError> {
    let path = manifest.map_or_else(|| source.join(MANIFEST_FILE), Path::to_path_buf);
    if manifest.is_some() || path.exists() {
        return Manifest::load(&path).map_err(|e| SourceError::Load { path, source: e });
    }
    if !source.is_dir() {
        return Err(SourceError::NotADirectory(source.to_owned()));
    }
    eprintln!("no {} in {}: scanning it", MANIFEST_FILE, source.display());
    Ok(formats::manifest::scan(source, &ScanOptions::new(Schema::opaque()))?)
}

/// Rank 0 [`load`]s the manifest, checks every entry against `source` and
/// that there is something to stage, and broadcasts it. Collective: every
/// rank gets the manifest, or an error (rank 0's own, [`SourceError::Remote`]
/// elsewhere).
pub fn shared(world: &World, source: &Path, manifest: Option<&Path>) -> Result<Manifest, SourceError> {
    let loaded = if world.is_root() {
        load(source, manifest).and_then(|m| {
            m.validate_against_root(source)?;
            if m.files.is_empty() {
                return Err(SourceError::Empty(source.to_owned()));
            }
            Ok(m)
        })
    } else {
        Ok(Manifest::new(Schema::opaque(), Vec::new()))
    };
    // Compact, not the pretty form files get: the bytes are held twice
    // (sent and parsed) on every rank, a third of them indentation.
    let mut json = match &loaded {
        Ok(m) if world.is_root() => m.to_compact_json(),
        _ => Vec::new(),
    };
    let mut flag = u8::from(world.is_root() && loaded.is_err());
    let root = world.comm().process_at_rank(0);
    root.broadcast_into(&mut flag);
    if flag == 1 {
        return match loaded {
            Err(e) => Err(e),
            Ok(_) => Err(SourceError::Remote),
        };
    }
    let mut len = json.len() as u64;
    root.broadcast_into(&mut len);
    json.resize(len as usize, 0);
    root.broadcast_into(&mut json[..]);
    match loaded {
        // Rank 0 keeps the manifest it loaded rather than parse a copy.
        Ok(m) if world.is_root() => Ok(m),
        _ => Ok(Manifest::from_json(&json, Path::new("<manifest from rank 0>"))?),
    }
}
