//! Writing TFRecord framing, to any `Write` or atomically to a file.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::{RecordIndex, TfRecordError, index_path_for, masked_crc32c};
use crate::atomic::temp_path_for;

/// Frames records onto any writer and remembers where each one went.
#[derive(Debug)]
pub struct RecordWriter<W: Write> {
    inner: W,
    index: RecordIndex,
    offset: u64,
}

impl<W: Write> RecordWriter<W> {
    /// Frame records onto `inner`.
    pub fn new(inner: W) -> Self {
        RecordWriter { inner, index: RecordIndex::default(), offset: 0 }
    }

    /// Append one record; returns its byte offset (in the uncompressed stream).
    pub fn write_record(&mut self, data: &[u8]) -> io::Result<u64> {
        let len = (data.len() as u64).to_le_bytes();
        let mut header = [0u8; super::HEADER_LEN];
        header[..8].copy_from_slice(&len);
        header[8..].copy_from_slice(&masked_crc32c(&len).to_le_bytes());
        self.inner.write_all(&header)?;
        self.inner.write_all(data)?;
        self.inner.write_all(&masked_crc32c(data).to_le_bytes())?;
        let offset = self.offset;
        let framed = super::framed_len(data.len()) as u64;
        self.index.push(offset, framed);
        self.offset += framed;
        Ok(offset)
    }

    /// Offsets and framed lengths of the records written so far.
    pub fn index(&self) -> &RecordIndex {
        &self.index
    }

    /// Give back the writer.
    pub fn into_inner(self) -> W {
        self.inner
    }

    /// The writer (to flush it); writing to it directly would break the
    /// framing and the index.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}

enum Sink {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Gzip(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
        }
    }
}

/// Writes a TFRecord file atomically: records go to a temporary file beside
/// the target, which is renamed into place by [`finish`](Self::finish). A
/// writer dropped before `finish` removes its temporary file, so a reader
/// never sees a half-written file under the final name.
pub struct TfRecordFileWriter {
    writer: Option<RecordWriter<Sink>>,
    path: PathBuf,
    temp: PathBuf,
    write_index: bool,
}

impl TfRecordFileWriter {
    /// Start writing `path`, GZIP-compressed if `gzip`. With `write_index`,
    /// `finish` also writes the sidecar index ([`index_path_for`]).
    pub fn create(path: &Path, gzip: bool, write_index: bool) -> Result<Self, TfRecordError> {
        let temp = temp_path_for(path);
        let file = File::create(&temp).map_err(|source| TfRecordError::Io { path: temp.clone(), source })?;
        let buffered = BufWriter::with_capacity(1 << 20, file);
        let sink =
            if gzip { Sink::Gzip(GzEncoder::new(buffered, Compression::default())) } else { Sink::Plain(buffered) };
        Ok(TfRecordFileWriter { writer: Some(RecordWriter::new(sink)), path: path.to_owned(), temp, write_index })
    }

    /// Append one record; returns its offset in the uncompressed stream.
    pub fn write_record(&mut self, data: &[u8]) -> Result<u64, TfRecordError> {
        let temp = &self.temp;
        let io = |source| TfRecordError::Io { path: temp.clone(), source };
        let writer = self.writer.as_mut().ok_or_else(|| io(closed()))?;
        writer.write_record(data).map_err(io)
    }

    /// Flush, fsync, rename into place; returns the record index.
    pub fn finish(mut self) -> Result<RecordIndex, TfRecordError> {
        let writer = self.writer.take().ok_or_else(|| self.io_error(closed()))?;
        let index = writer.index().clone();
        let file = match writer.into_inner() {
            Sink::Plain(w) => w.into_inner().map_err(|e| e.into_error()),
            Sink::Gzip(w) => w.finish().and_then(|b| b.into_inner().map_err(|e| e.into_error())),
        }
        .map_err(|e| self.io_error(e))?;
        file.sync_all().map_err(|e| self.io_error(e))?;
        drop(file);
        if self.write_index {
            index.save(&index_path_for(&self.path))?;
        }
        fs::rename(&self.temp, &self.path).map_err(|source| TfRecordError::Io { path: self.path.clone(), source })?;
        Ok(index)
    }

    fn io_error(&self, source: io::Error) -> TfRecordError {
        TfRecordError::Io { path: self.temp.clone(), source }
    }
}

impl Drop for TfRecordFileWriter {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.writer = None;
            let _ = fs::remove_file(&self.temp);
        }
    }
}

fn closed() -> io::Error {
    io::Error::other("writer already finished")
}
