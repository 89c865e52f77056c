//! Names for writing files atomically: build under a hidden temporary name
//! beside the target (same directory, so the final `rename` is atomic), then
//! rename. Scans skip hidden names, so a half-written file is never listed.

use std::path::{Path, PathBuf};

/// `dir/.name.tmp.<pid>` for the target `dir/name`.
pub fn temp_path_for(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_name_is_hidden_and_beside_the_target() {
        let temp = temp_path_for(Path::new("/data/set/file.tfrecord"));
        assert_eq!(temp.parent(), Some(Path::new("/data/set")));
        assert!(temp.file_name().unwrap().to_str().unwrap().starts_with(".file.tfrecord.tmp."));
    }
}
