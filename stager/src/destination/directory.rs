//! The destination's directory: where a file goes under it (never
//! through a link planted there), whether one is in place, that it lies
//! outside the source, and what tells it from every other node's.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The destination path of `rel` under `dest`, creating parent directories.
/// Refuses to go through a symlink or a non-directory: a link planted in the
/// destination is never followed out of it. (The final name itself may be a
/// symlink: the rename that completes a file replaces it.)
pub fn prepare_destination(dest: &Path, rel: &str) -> io::Result<PathBuf> {
    let mut dir = dest.to_path_buf();
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    for part in parts {
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(io::Error::other(format!(
                    "{} is a symlink; refusing to follow it out of the destination",
                    dir.display()
                )));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(io::Error::other(format!("{} exists and is not a directory", dir.display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::create_dir(&dir) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
                _ => {}
            },
            Err(e) => return Err(e),
        }
    }
    Ok(dest.join(rel))
}

/// `path` made absolute with every link in its longest existing ancestor
/// resolved (what remains does not exist yet, so holds no link).
fn resolved(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(real) => return Ok(rest.iter().rev().fold(real, |p, part| p.join(part))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(last)) = (existing.parent(), existing.components().next_back()) else {
                    return Err(e);
                };
                rest.push(last.as_os_str().to_owned());
                existing = parent;
            }
            Err(e) => return Err(e),
        }
    }
}

/// An error unless the destination `dest` lies outside `source`: staged
/// files and the journal inside the source would become part of the data
/// a later scan finds, and the journal of one node would be read as the
/// source of another.
pub fn check_dest_outside_source(source: &Path, dest: &Path) -> Result<(), String> {
    let what = |p: &Path, e: io::Error| format!("resolving {}: {e}", p.display());
    let (real_source, real_dest) =
        (resolved(source).map_err(|e| what(source, e))?, resolved(dest).map_err(|e| what(dest, e))?);
    if real_dest.starts_with(&real_source) {
        return Err(format!(
            "the destination {} is inside the source {}; stage to a directory outside the dataset",
            dest.display(),
            source.display()
        ));
    }
    Ok(())
}

/// What tells a directory from any other on any host: a hash of the host's
/// name, the device and the inode. Never all zero (the hash's low bit is
/// set), so zero can mean "no directory".
pub fn directory_identity(dir: &Path) -> io::Result<[u64; 3]> {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(dir)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    rustix::system::uname().nodename().to_bytes().hash(&mut hasher);
    Ok([hasher.finish() | 1, meta.dev(), meta.ino()])
}

/// Two nodes whose writers (ranks with a non-zero identity) hold the same
/// directory: pretend nodes on one machine given a `--dest` without
/// `{node}`, or real nodes given one on a shared file system.
pub fn nodes_sharing_a_directory(identities: &[[u64; 3]], node_of_rank: &[usize]) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::new();
    for (rank, identity) in identities.iter().enumerate().filter(|(_, id)| **id != [0; 3]) {
        let node = node_of_rank.get(rank).copied()?;
        if let Some(&first) = seen.get(identity)
            && first != node
        {
            return Some((first, node));
        }
        seen.entry(*identity).or_insert(node);
    }
    None
}

/// True if `path` is a regular file (not a symlink) of `bytes` bytes.
pub fn is_complete(path: &Path, bytes: u64) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn two_nodes_writing_into_one_directory_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let (ida, idb) = (directory_identity(&a).unwrap(), directory_identity(&b).unwrap());
        assert_ne!(ida, idb);
        assert_eq!(directory_identity(&dir.path().join("a/../a")).unwrap(), ida);
        let none = [0; 3];
        // ranks 0,1 on node 0 and 2,3 on node 1; writers are 0 and 2.
        let nodes = [0, 0, 1, 1];
        assert_eq!(nodes_sharing_a_directory(&[ida, none, idb, none], &nodes), None);
        assert_eq!(nodes_sharing_a_directory(&[ida, none, ida, none], &nodes), Some((0, 1)));
    }

    #[test]
    fn a_destination_inside_the_source_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("data");
        fs::create_dir(&source).unwrap();
        symlink(&source, dir.path().join("link")).unwrap();
        for inside in [source.clone(), source.join("node0"), dir.path().join("link/cache/node1"), source.join("a/../b")]
        {
            let e = check_dest_outside_source(&source, &inside).unwrap_err();
            assert!(e.contains("is inside the source"), "{e}");
        }
        check_dest_outside_source(&source, &dir.path().join("bb/node0")).unwrap();
        check_dest_outside_source(&source.join("sub"), &source).unwrap();
    }

    #[test]
    fn planted_symlink_in_destination_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dest = tempfile::tempdir().unwrap();
        symlink(outside.path(), dest.path().join("sub")).unwrap();
        let err = prepare_destination(dest.path(), "sub/file").unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        let ok = prepare_destination(dest.path(), "a/b/c").unwrap();
        assert!(dest.path().join("a/b").is_dir());
        assert_eq!(ok, dest.path().join("a/b/c"));
    }
}
