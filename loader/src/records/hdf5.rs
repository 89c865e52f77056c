//! One dataset of HDF5 files as samples, one row of its first axis each.

use std::fs::File;
use std::path::{Path, PathBuf};

use formats::hdf5_rows::{self, RowLayout};

use super::RecordSource;
use super::in_range;
use crate::buffer::append_read_at;
use crate::dataset::DatasetError;

struct RowFile {
    path: PathBuf,
    layout: RowLayout,
    /// The file of a contiguous dataset, read at the rows' offsets; `None`
    /// when libhdf5 reads the rows.
    contiguous: Option<File>,
}

/// Dataset `name` of each of a list of HDF5 files; sample `k` of a file is
/// row `k` of its first axis, in the dataset's element type (C order).
/// Rows of contiguous datasets are read at their byte offsets, without
/// libhdf5.
pub struct Hdf5Rows {
    files: Vec<RowFile>,
    name: String,
    /// (file, row), one per sample.
    samples: Vec<(usize, usize)>,
}

fn hdf5_error(error: formats::climate::ClimateError) -> DatasetError {
    DatasetError::Climate(error)
}

impl Hdf5Rows {
    /// Open dataset `name` of each of `paths`. Contiguous datasets are
    /// read at their rows' offsets without libhdf5; chunked or compressed
    /// ones of bytes go through libhdf5, one row per call.
    pub fn open(paths: &[impl AsRef<Path>], name: &str) -> Result<Hdf5Rows, DatasetError> {
        let mut files = Vec::with_capacity(paths.len());
        let mut samples = Vec::new();
        for path in paths {
            let path = path.as_ref();
            let layout = hdf5_rows::layout(path, name).map_err(hdf5_error)?;
            let io = |source| DatasetError::Io { path: path.to_owned(), source };
            let contiguous = match layout.extent {
                Some(extent) => {
                    let file = formats::regular::open_regular(path).map_err(io)?;
                    let len = file.metadata().map_err(io)?.len();
                    if extent.offset + extent.len > len {
                        return Err(DatasetError::Records {
                            path: path.to_owned(),
                            reason: format!("dataset {name:?} runs past the end of the file"),
                        });
                    }
                    Some(file)
                }
                None if layout.bytes => None,
                None => {
                    return Err(DatasetError::Records {
                        path: path.to_owned(),
                        reason: format!(
                            "dataset {name:?} is chunked or compressed and not of bytes; such datasets are read only when contiguous"
                        ),
                    });
                }
            };
            samples.extend((0..layout.rows()).map(|row| (files.len(), row)));
            files.push(RowFile { path: path.to_owned(), layout, contiguous });
        }
        Ok(Hdf5Rows { files, name: name.to_owned(), samples })
    }
}

impl RecordSource for Hdf5Rows {
    fn samples(&self) -> usize {
        self.samples.len()
    }
    fn place(&self, index: usize) -> String {
        match self.samples.get(index) {
            Some(&(file, row)) => {
                format!("sample {index} ({}, {:?}[{row}])", self.files[file].path.display(), self.name)
            }
            None => format!("sample {index}"),
        }
    }
    fn append(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        let &(file, row) = in_range(&self.samples, index)?;
        let file = &self.files[file];
        let before = out.len();
        match (&file.contiguous, file.layout.extent) {
            (Some(handle), Some(extent)) => {
                // A row of a contiguous dataset is one run of bytes: read it.
                let row_bytes = file.layout.row_bytes();
                let offset = extent.offset + (row * row_bytes) as u64;
                append_read_at(handle, offset, row_bytes, out)
                    .map_err(|source| DatasetError::Io { path: file.path.clone(), source })?;
            }
            _ => hdf5_rows::read_row(&file.path, &self.name, &file.layout, row, out).map_err(hdf5_error)?,
        }
        Ok((out.len() - before) as u64)
    }
    fn len_of(&self, index: usize) -> Option<usize> {
        let &(file, _) = self.samples.get(index)?;
        Some(self.files[file].layout.row_bytes())
    }
}
