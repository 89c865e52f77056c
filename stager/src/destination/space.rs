//! Room in a destination, counted as the file system allocates it: whole
//! blocks per file, and one inode each.

use std::io;
use std::path::Path;

/// What the file system of a destination has room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSpace {
    /// Bytes available to unprivileged users.
    pub bytes: u64,
    /// The unit space is allocated in (`f_frsize`): a one-byte file takes a
    /// whole block.
    pub block: u64,
    /// Inodes (files) available to unprivileged users; `None` where the file
    /// system does not count them (it reports 0 in all fields).
    pub inodes: Option<u64>,
}

impl FreeSpace {
    /// Bytes the blocks of files of `sizes` bytes take (each rounded up to
    /// whole blocks; an empty file takes none).
    pub fn allocated(&self, sizes: impl IntoIterator<Item = u64>) -> u64 {
        let block = self.block.max(1);
        sizes.into_iter().fold(0u64, |sum, size| sum.saturating_add(size.div_ceil(block).saturating_mul(block)))
    }

    /// An error unless `files` files of `sizes` fit, in blocks and inodes,
    /// leaving 1 % of the free bytes for the journal and the file system's
    /// own needs (temporary and final files never coexist for one file).
    pub fn check_fits(&self, sizes: &[u64]) -> Result<(), String> {
        let needed = self.allocated(sizes.iter().copied());
        if needed > self.bytes.saturating_sub(self.bytes / 100) {
            return Err(format!(
                "has {} free but needs {} more for {} files ({} of data in blocks of {} bytes)",
                crate::units::human_bytes(self.bytes as f64),
                crate::units::human_bytes(needed as f64),
                sizes.len(),
                crate::units::human_bytes(sizes.iter().sum::<u64>() as f64),
                self.block
            ));
        }
        // One inode per file, plus room for directories and the journal.
        if let Some(inodes) = self.inodes
            && sizes.len() as u64 > inodes.saturating_sub(inodes / 100 + 16)
        {
            return Err(format!("has room for {inodes} more files (inodes) but needs {} more files", sizes.len()));
        }
        Ok(())
    }
}

/// What the file system of `path` has room for.
pub fn free_space(path: &Path) -> io::Result<FreeSpace> {
    let stat = rustix::fs::statvfs(path).map_err(io::Error::from)?;
    let counts_inodes = stat.f_files > 0;
    Ok(FreeSpace {
        bytes: stat.f_bavail.saturating_mul(stat.f_frsize),
        block: stat.f_frsize.max(1),
        inodes: counts_inodes.then_some(stat.f_favail),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn free_space_counts_whole_blocks_and_inodes() {
        let space = FreeSpace { bytes: 5 << 20, block: 4096, inodes: Some(1_000_000) };
        assert_eq!(space.allocated([1, 0, 4096, 4097]), 4096 + 4096 + 8192);
        let e = space.check_fits(&vec![1; 2000]).unwrap_err();
        assert!(e.contains("needs 7.81 MiB more for 2000 files"), "{e}");
        space.check_fits(&vec![1; 1000]).unwrap();
        let few_inodes = FreeSpace { inodes: Some(500), ..space };
        let e = few_inodes.check_fits(&vec![0; 1000]).unwrap_err();
        assert!(e.contains("room for 500 more files"), "{e}");
        FreeSpace { inodes: None, ..few_inodes }.check_fits(&vec![0; 1000]).unwrap();
        assert_eq!(space.allocated([u64::MAX, u64::MAX]), u64::MAX, "saturates instead of wrapping");
    }
}
