//! A TFRecord file opened for reading: memory-mapped when plain, inflated
//! into memory when GZIP-compressed (detected by its magic bytes).

#![allow(unsafe_code)]

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use memmap2::Mmap;

use super::{
    PendingRecord, Record, RecordIndex, Records, TfRecordError, read_pending_record_at, read_record_at, records_of,
};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

enum Bytes {
    /// The map and the file it maps, kept open to check its length.
    Mapped(Mmap, File),
    Owned(Vec<u8>),
}

/// How to bring a plain file's bytes into memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// `mmap` the file: zero-copy, good on node-local NVMe and tmpfs.
    #[default]
    Map,
    /// Read it into a buffer: better on Lustre/GPFS, where page faults on a
    /// mapping turn into many small remote reads.
    Read,
}

/// An open TFRecord file whose records can be iterated or fetched by offset.
pub struct TfRecordFile {
    path: PathBuf,
    bytes: Bytes,
    gzip: bool,
}

impl TfRecordFile {
    /// Open `path`, memory-mapping it unless it is GZIP-compressed.
    pub fn open(path: &Path) -> Result<Self, TfRecordError> {
        Self::open_with(path, Access::Map)
    }

    /// Open `path` with the given access for plain files.
    pub fn open_with(path: &Path, access: Access) -> Result<Self, TfRecordError> {
        let io = |source| TfRecordError::Io { path: path.to_owned(), source };
        let mut file = File::open(path).map_err(io)?;
        let mut magic = [0u8; 2];
        let got = read_up_to(&mut file, &mut magic).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let gzip = got == 2 && magic == GZIP_MAGIC;
        let bytes = if gzip {
            let mut out = Vec::new();
            MultiGzDecoder::new(file).read_to_end(&mut out).map_err(io)?;
            Bytes::Owned(out)
        } else {
            let len = file.metadata().map_err(io)?.len();
            if len == 0 || access == Access::Read {
                let mut out = Vec::with_capacity(len as usize);
                file.read_to_end(&mut out).map_err(io)?;
                Bytes::Owned(out)
            } else {
                // SAFETY: the map is read-only. Stagehand writes dataset files
                // by temp file + rename and never modifies them in place; a
                // file truncated by someone else is caught before each record
                // is read (`check_mapped`), and in the window after that the
                // SIGBUS handler names it.
                crate::mapped::report_sigbus();
                let map = unsafe { Mmap::map(&file) }.map_err(io)?;
                Bytes::Mapped(map, file)
            }
        };
        Ok(TfRecordFile { path: path.to_owned(), bytes, gzip })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True if the file was GZIP-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// The (decompressed) record stream.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m, _) => m,
            Bytes::Owned(v) => v,
        }
    }

    /// All records, verified, in order.
    pub fn records(&self) -> Records<'_> {
        records_of(self.as_bytes(), &self.path)
    }

    /// The verified record starting at `offset` (from a [`RecordIndex`]).
    pub fn record_at(&self, offset: u64) -> Result<Record<'_>, TfRecordError> {
        self.check_mapped()?;
        read_record_at(self.as_bytes(), offset, &self.path)
    }

    /// The record at `offset` with its data CRC left to the caller
    /// ([`PendingRecord::verify`]).
    pub fn pending_record_at(&self, offset: u64) -> Result<PendingRecord<'_>, TfRecordError> {
        self.check_mapped()?;
        read_pending_record_at(self.as_bytes(), offset, &self.path)
    }

    /// An error naming the file if it is mapped and has shrunk since: a
    /// read of the lost pages would raise SIGBUS.
    fn check_mapped(&self) -> Result<(), TfRecordError> {
        match &self.bytes {
            Bytes::Mapped(map, file) => crate::mapped::check_still_covers(file, map.len() as u64)
                .map_err(|source| TfRecordError::Io { path: self.path.clone(), source }),
            Bytes::Owned(_) => Ok(()),
        }
    }

    /// Build this file's index by walking its headers.
    pub fn build_index(&self) -> Result<RecordIndex, TfRecordError> {
        RecordIndex::build(self.as_bytes(), &self.path)
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}
