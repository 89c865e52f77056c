//! TFRecord framing: `u64 len LE | masked crc32c(len) | data | masked crc32c(data)`.
//!
//! The reader here does no I/O: it walks a byte slice (a memory map, a
//! decompressed buffer) and yields borrowed records, checking both CRCs. The
//! length's CRC is checked before the length is trusted, so a flipped bit
//! anywhere in a file is reported as an error at the offset of the record it
//! hit, never as a wrong record or a panic. [`TfRecordFile`] adds the file
//! (mmap or GZIP), [`RecordWriter`] writes, [`RecordIndex`] is the sidecar
//! index of record offsets.

mod file;
mod index;
mod writer;

use std::path::{Path, PathBuf};

pub use file::{Access, TfRecordFile};
pub use index::{RecordIndex, index_path_for};
pub use writer::{RecordWriter, TfRecordFileWriter};

/// Bytes before a record's data: length and its masked CRC.
pub const HEADER_LEN: usize = 12;
/// Bytes after a record's data: its masked CRC.
pub const FOOTER_LEN: usize = 4;

const MASK_DELTA: u32 = 0xa282_ead8;

/// TensorFlow's masked CRC32C (Castagnoli), as in `tensorflow/core/lib/hash/crc32c.h`.
pub fn masked_crc32c(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// The framed size of a record holding `data_len` bytes.
pub fn framed_len(data_len: usize) -> usize {
    HEADER_LEN + data_len + FOOTER_LEN
}

/// What went wrong with a TFRecord file. Every variant names the file and
/// the byte offset of the record (in the decompressed stream for GZIP files).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TfRecordError {
    /// The file ends inside a record.
    #[error("{}: record at byte offset {offset}: truncated, {needed} bytes needed but {available} remain", path.display())]
    Truncated {
        /// File.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
        /// Bytes the record needs from its offset.
        needed: u64,
        /// Bytes left in the file from its offset.
        available: u64,
    },
    /// The length field does not match its CRC.
    #[error("{}: record at byte offset {offset}: length CRC mismatch (corrupt header)", path.display())]
    LengthCrc {
        /// File.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
    },
    /// The data does not match its CRC.
    #[error("{}: record at byte offset {offset}: data CRC mismatch (corrupt payload of {len} bytes)", path.display())]
    DataCrc {
        /// File.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
        /// Length of the payload.
        len: u64,
    },
    /// An offset that is not where a record starts (from an index, say).
    #[error("{}: byte offset {offset} is past the end of the file ({len} bytes)", path.display())]
    OffsetOutOfRange {
        /// File.
        path: PathBuf,
        /// Offset asked for.
        offset: u64,
        /// File length.
        len: u64,
    },
    /// Reading, mapping or decompressing the file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A sidecar index is malformed or does not match its file.
    #[error("{}: line {line}: {reason}", path.display())]
    Index {
        /// Index file.
        path: PathBuf,
        /// 1-based line (0 when the index as a whole is wrong).
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// One record borrowed from the underlying bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Byte offset of the record's header.
    pub offset: u64,
    /// The payload.
    pub data: &'a [u8],
}

impl Record<'_> {
    /// Framed length of this record (header + data + footer).
    pub fn framed_len(&self) -> u64 {
        framed_len(self.data.len()) as u64
    }
}

/// Read and verify the record whose header starts at `offset`.
pub fn read_record_at<'a>(bytes: &'a [u8], offset: u64, path: &Path) -> Result<Record<'a>, TfRecordError> {
    let pending = read_pending_record_at(bytes, offset, path)?;
    let crc = crc32c::crc32c(pending.data);
    pending.verify(crc, path)
}

/// A record whose framing and length CRC are checked, but not yet its data
/// CRC: for readers that compute the CRC in the same pass as they decode the
/// data (while it is in cache) and call [`verify`](Self::verify) before
/// handing anything out.
#[derive(Debug, Clone, Copy)]
pub struct PendingRecord<'a> {
    /// Byte offset of the record's header.
    pub offset: u64,
    /// The payload, not yet verified.
    pub data: &'a [u8],
    stored_crc: u32,
}

impl<'a> PendingRecord<'a> {
    /// Check `crc`, the plain CRC32C of all of `data` (for instance chained
    /// with `crc32c::crc32c_append`), against the stored one.
    pub fn verify(&self, crc: u32, path: &Path) -> Result<Record<'a>, TfRecordError> {
        if crc.rotate_right(15).wrapping_add(MASK_DELTA) != self.stored_crc {
            return Err(TfRecordError::DataCrc {
                path: path.to_owned(),
                offset: self.offset,
                len: self.data.len() as u64,
            });
        }
        Ok(Record { offset: self.offset, data: self.data })
    }
}

/// Like [`read_record_at`] without the data CRC, which the caller checks
/// with [`PendingRecord::verify`].
pub fn read_pending_record_at<'a>(
    bytes: &'a [u8],
    offset: u64,
    path: &Path,
) -> Result<PendingRecord<'a>, TfRecordError> {
    let total = bytes.len() as u64;
    if offset >= total {
        return Err(TfRecordError::OffsetOutOfRange { path: path.to_owned(), offset, len: total });
    }
    let start = offset as usize;
    let rest = &bytes[start..];
    let truncated =
        |needed: u64| TfRecordError::Truncated { path: path.to_owned(), offset, needed, available: rest.len() as u64 };
    let Some((header, after_header)) = rest.split_first_chunk::<HEADER_LEN>() else {
        return Err(truncated(HEADER_LEN as u64));
    };
    let (len_bytes, len_crc) = header.split_at(8);
    let stored_len_crc = u32::from_le_bytes([len_crc[0], len_crc[1], len_crc[2], len_crc[3]]);
    if masked_crc32c(len_bytes) != stored_len_crc {
        return Err(TfRecordError::LengthCrc { path: path.to_owned(), offset });
    }
    let len = u64::from_le_bytes([
        len_bytes[0],
        len_bytes[1],
        len_bytes[2],
        len_bytes[3],
        len_bytes[4],
        len_bytes[5],
        len_bytes[6],
        len_bytes[7],
    ]);
    let needed = len.saturating_add((HEADER_LEN + FOOTER_LEN) as u64);
    if needed > rest.len() as u64 {
        return Err(truncated(needed));
    }
    let len = len as usize;
    let (data, footer) = after_header.split_at(len);
    let stored_crc = u32::from_le_bytes([footer[0], footer[1], footer[2], footer[3]]);
    Ok(PendingRecord { offset, data, stored_crc })
}

/// Walk the record headers without checking data CRCs: the cheap pass that
/// counts records or builds an index of a trusted file. The length CRC is
/// still checked, so a corrupt header is an error rather than a wild jump.
pub fn scan_headers(bytes: &[u8], path: &Path) -> Result<Vec<(u64, u64)>, TfRecordError> {
    let mut spans = Vec::new();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let offset = pos as u64;
        let rest = &bytes[pos..];
        let Some(header) = rest.first_chunk::<HEADER_LEN>() else {
            return Err(TfRecordError::Truncated {
                path: path.to_owned(),
                offset,
                needed: HEADER_LEN as u64,
                available: rest.len() as u64,
            });
        };
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&header[..8]);
        let stored = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if masked_crc32c(&len_bytes) != stored {
            return Err(TfRecordError::LengthCrc { path: path.to_owned(), offset });
        }
        let framed = u64::from_le_bytes(len_bytes).saturating_add((HEADER_LEN + FOOTER_LEN) as u64);
        if framed > rest.len() as u64 {
            return Err(TfRecordError::Truncated {
                path: path.to_owned(),
                offset,
                needed: framed,
                available: rest.len() as u64,
            });
        }
        spans.push((offset, framed));
        pos += framed as usize;
    }
    Ok(spans)
}

/// Iterator over the verified records of a byte slice. After the first
/// error it yields nothing more: past a corrupt header, framing is lost.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    bytes: &'a [u8],
    pos: u64,
    path: &'a Path,
    failed: bool,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, TfRecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() as u64 {
            return None;
        }
        match read_record_at(self.bytes, self.pos, self.path) {
            Ok(record) => {
                self.pos += record.framed_len();
                Some(Ok(record))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// The records of an in-memory buffer; errors name the buffer `<memory>`.
pub fn records(bytes: &[u8]) -> Records<'_> {
    records_of(bytes, Path::new("<memory>"))
}

/// The records of `bytes`, which came from `path` (used in errors).
pub fn records_of<'a>(bytes: &'a [u8], path: &'a Path) -> Records<'a> {
    Records { bytes, pos: 0, path, failed: false }
}

#[cfg(test)]
mod tests;
