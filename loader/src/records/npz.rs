//! One array of NumPy `.npz` files as samples.
//!
//! An `.npz` is a ZIP archive of `.npy` arrays (`numpy.savez`, stored, or
//! `numpy.savez_compressed`, deflated). A stored array is read straight
//! from a map of the archive; a deflated one is inflated whole for each
//! sample (there is no seeking into a deflate stream), which is slow for
//! files of many samples.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use formats::npy::{self, NpyHeader};
use memmap2::Mmap;
use zip::{CompressionMethod, ZipArchive};

use super::RecordSource;
use super::{append_sample, in_range, records_error};
use crate::buffer::append_read_at;
use crate::dataset::DatasetError;

/// Which axis of the array counts the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SampleAxis {
    /// `x[..., k]` is sample `k`: DLIO's `.npz` files, `(dim, dim, samples)`.
    #[default]
    Last,
    /// `x[k]` is sample `k`.
    First,
}

/// Where one file's array lies.
enum Stored {
    /// Uncompressed: the data start `at` bytes into the map of `file`.
    Mapped { map: Mmap, file: File, at: usize },
    /// Deflated: inflated on each read.
    Deflated,
}

struct Member {
    path: PathBuf,
    header: NpyHeader,
    stored: Stored,
    samples: usize,
    /// Bytes of the member in the archive (compressed size).
    archived: u64,
}

/// Array `key` of each of a list of `.npz` files; the samples of a file are
/// its array's entries along `axis`, in order, and files follow each other.
/// Sample `k`'s bytes are that slice of the array in C order.
pub struct NpzArrays {
    members: Vec<Member>,
    key: String,
    axis: SampleAxis,
    /// (member, sample within it), one per sample.
    samples: Vec<(usize, usize)>,
}

impl NpzArrays {
    /// Open array `key` (as given to `numpy.savez`, without `.npy`) of each
    /// of `paths`.
    pub fn open(paths: &[impl AsRef<Path>], key: &str, axis: SampleAxis) -> Result<NpzArrays, DatasetError> {
        let mut members = Vec::with_capacity(paths.len());
        let mut samples = Vec::new();
        for path in paths {
            let member = open_member(path.as_ref(), key, axis)?;
            samples.extend((0..member.samples).map(|k| (members.len(), k)));
            members.push(member);
        }
        Ok(NpzArrays { members, key: key.to_owned(), axis, samples })
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Io { path: path.to_owned(), source }
}

fn open_member(path: &Path, key: &str, axis: SampleAxis) -> Result<Member, DatasetError> {
    let file = formats::regular::open_regular(path).map_err(io_error(path))?;
    let name = format!("{key}.npy");
    let mut archive =
        ZipArchive::new(&file).map_err(|e| records_error(path, format!("not a .npz (ZIP) archive: {e}")))?;
    let mut entry = archive.by_name(&name).map_err(|e| records_error(path, format!("no array {key:?}: {e}")))?;
    let (method, data_start, size, archived) =
        (entry.compression(), entry.data_start(), entry.size(), entry.compressed_size());
    let header = match method {
        CompressionMethod::Stored => None,
        CompressionMethod::Deflated => {
            let mut start = Vec::with_capacity(npy::MAX_HEADER.min(size as usize));
            (&mut entry).take(npy::MAX_HEADER as u64 + 12).read_to_end(&mut start).map_err(io_error(path))?;
            Some(NpyHeader::decode(&start).map_err(|e| records_error(path, format!("array {key:?}: {e}")))?)
        }
        other => {
            return Err(records_error(
                path,
                format!("array {key:?} is compressed with {other:?}; stored and deflated are read"),
            ));
        }
    };
    drop(entry);
    drop(archive);
    let (header, stored) = match header {
        Some(header) => (header, Stored::Deflated),
        None => {
            let map = formats::mapped::map_dataset_file(&file).map_err(io_error(path))?;
            let end = data_start.checked_add(size).filter(|&end| end <= map.len() as u64).ok_or_else(|| {
                records_error(path, format!("array {key:?} runs past the end of the file ({} bytes)", map.len()))
            })?;
            let bytes = &map[data_start as usize..end as usize];
            let header = NpyHeader::decode(bytes).map_err(|e| records_error(path, format!("array {key:?}: {e}")))?;
            let at = data_start as usize + header.data_offset;
            (header, Stored::Mapped { map, file, at })
        }
    };
    if header.fortran_order {
        return Err(records_error(path, format!("array {key:?} is stored in Fortran order; C order is read")));
    }
    let expected = header.data_len().map(|n| n as u64 + header.data_offset as u64);
    if expected != Some(size) {
        return Err(records_error(
            path,
            format!(
                "array {key:?}: its header announces {:?} bytes of shape {:?}, the archive holds {size}",
                expected, header.shape
            ),
        ));
    }
    let samples = match axis {
        SampleAxis::Last => header.shape.last(),
        SampleAxis::First => header.shape.first(),
    }
    .copied()
    .ok_or_else(|| records_error(path, format!("array {key:?} is a scalar: it has no axis of samples")))?;
    Ok(Member { path: path.to_owned(), header, stored, samples, archived })
}

impl NpzArrays {
    fn read_deflated(&self, member: &Member, k: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        let path = &member.path;
        let file = File::open(path).map_err(io_error(path))?;
        let mut archive =
            ZipArchive::new(file).map_err(|e| records_error(path, format!("not a .npz (ZIP) archive: {e}")))?;
        let name = format!("{}.npy", self.key);
        let mut entry =
            archive.by_name(&name).map_err(|e| records_error(path, format!("no array {:?}: {e}", self.key)))?;
        let mut whole = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut whole)
            .map_err(|e| records_error(path, format!("inflating array {:?}: {e}", self.key)))?;
        let data = whole
            .get(member.header.data_offset..)
            .filter(|d| d.len() as u64 + member.header.data_offset as u64 == entry.size());
        let data = data.ok_or_else(|| records_error(path, format!("array {:?} inflates short", self.key)))?;
        append_sample(data, member.header.element, member.samples, k, self.axis, out);
        Ok(member.archived)
    }
}

impl RecordSource for NpzArrays {
    fn samples(&self) -> usize {
        self.samples.len()
    }
    fn place(&self, index: usize) -> String {
        match self.samples.get(index) {
            Some(&(member, k)) => {
                format!("sample {index} ({}, {:?}[{k}])", self.members[member].path.display(), self.key)
            }
            None => format!("sample {index}"),
        }
    }
    fn append(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        let &(member, k) = in_range(&self.samples, index)?;
        let member = &self.members[member];
        match &member.stored {
            Stored::Mapped { map, file, at } => {
                // Checked at open: the header's length fits the archive member.
                let len = member.header.data_len().unwrap_or(0);
                let per_sample = len / member.samples.max(1);
                if self.axis == SampleAxis::First || member.samples == 1 {
                    // The sample is one run of bytes: read it, no map.
                    let offset = (*at + k * per_sample) as u64;
                    append_read_at(file, offset, per_sample, out).map_err(io_error(&member.path))?;
                    return Ok(per_sample as u64);
                }
                formats::mapped::check_still_covers(file, map.len() as u64).map_err(io_error(&member.path))?;
                let data = &map[*at..*at + len];
                append_sample(data, member.header.element, member.samples, k, self.axis, out);
                Ok(per_sample as u64)
            }
            Stored::Deflated => self.read_deflated(member, k, out),
        }
    }
    fn len_of(&self, index: usize) -> Option<usize> {
        let &(member, _) = self.samples.get(index)?;
        let member = &self.members[member];
        Some(member.header.data_len()? / member.samples.max(1))
    }
}
