//! The sidecar index of record offsets, in the text layout NVIDIA DALI's
//! `tfrecord2idx` writes (`offset framed_len` per line), so either tool can
//! use the other's indexes. For GZIP files the offsets are positions in the
//! decompressed stream.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{TfRecordError, scan_headers};

/// Where each record of a file starts and how long it is, framing included.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordIndex {
    entries: Vec<(u64, u64)>,
}

/// The sidecar index path of a TFRecord file: `<file>.idx`.
pub fn index_path_for(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".idx");
    PathBuf::from(name)
}

impl RecordIndex {
    /// Build the index of a buffer by walking its headers (length CRCs are
    /// checked, data CRCs are left to the reader).
    pub fn build(bytes: &[u8], path: &Path) -> Result<Self, TfRecordError> {
        Ok(RecordIndex { entries: scan_headers(bytes, path)? })
    }

    pub(crate) fn push(&mut self, offset: u64, framed_len: u64) {
        self.entries.push((offset, framed_len));
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there are no records.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Offset of record `i`.
    pub fn offset(&self, i: usize) -> Option<u64> {
        self.entries.get(i).map(|e| e.0)
    }

    /// (offset, framed length) of every record.
    pub fn entries(&self) -> &[(u64, u64)] {
        &self.entries
    }

    /// Check that the index tiles a stream of `stream_len` bytes exactly.
    pub fn check_covers(&self, stream_len: u64, path: &Path) -> Result<(), TfRecordError> {
        let mut expected = 0u64;
        for (i, &(offset, len)) in self.entries.iter().enumerate() {
            if offset != expected {
                return Err(index_error(path, i + 1, format!("record starts at {offset}, expected {expected}")));
            }
            expected = offset.saturating_add(len);
        }
        if expected != stream_len {
            return Err(index_error(path, 0, format!("index covers {expected} bytes but the stream has {stream_len}")));
        }
        Ok(())
    }

    /// Write the index atomically (temp file + rename).
    pub fn save(&self, path: &Path) -> Result<(), TfRecordError> {
        let mut text = Vec::with_capacity(self.entries.len() * 24);
        for (offset, len) in &self.entries {
            // Writing to a Vec cannot fail.
            let _ = writeln!(text, "{offset} {len}");
        }
        let temp = crate::atomic::temp_path_for(path);
        let io = |source| TfRecordError::Io { path: path.to_owned(), source };
        fs::write(&temp, &text).map_err(io)?;
        fs::rename(&temp, path).map_err(io)
    }

    /// Read an index written by [`save`](Self::save) or by DALI.
    pub fn load(path: &Path) -> Result<Self, TfRecordError> {
        let text = fs::read_to_string(path).map_err(|source| TfRecordError::Io { path: path.to_owned(), source })?;
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let mut fields = line.split_whitespace().map(str::parse::<u64>);
            match (fields.next(), fields.next(), fields.next()) {
                (Some(Ok(offset)), Some(Ok(len)), None) => entries.push((offset, len)),
                _ => return Err(index_error(path, i + 1, format!("expected `offset length`, found {line:?}"))),
            }
        }
        Ok(RecordIndex { entries })
    }
}

fn index_error(path: &Path, line: usize, reason: String) -> TfRecordError {
    TfRecordError::Index { path: path.to_owned(), line, reason }
}
