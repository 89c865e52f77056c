//! One HDF5 dataset, named by the caller, read as rows along its first
//! axis: DLIO's HDF5 files (`records`, `(samples, dim, dim)` of bytes) and
//! any array of samples stacked the same way.
//!
//! A contiguous, uncompressed dataset gives its byte range ([`RowLayout::extent`])
//! so a reader can map the file and take rows without libhdf5 (and its one
//! global lock). Chunked or compressed datasets are read through libhdf5
//! with [`read_row`], for one-byte unsigned elements (libhdf5 would convert
//! any other type on the way, which a byte reader must not do).

use std::path::Path;

use hdf5::types::{IntSize, TypeDescriptor};
use hdf5::{Hyperslab, Selection, SliceOrIndex};

use crate::climate::{ClimateError, Extent};

/// The shape and storage of one dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLayout {
    /// The dataset's shape; rows are along the first axis.
    pub shape: Vec<usize>,
    /// Bytes per element.
    pub element: usize,
    /// The byte range of a contiguous dataset, `None` for one libhdf5 must read.
    pub extent: Option<Extent>,
    /// True if the elements are one-byte unsigned integers.
    pub bytes: bool,
}

impl RowLayout {
    /// Rows in the dataset.
    pub fn rows(&self) -> usize {
        self.shape.first().copied().unwrap_or(0)
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.shape.iter().skip(1).product::<usize>() * self.element
    }
}

fn h5err(path: &Path, what: String) -> impl FnOnce(hdf5::Error) -> ClimateError {
    let path = path.to_owned();
    move |source| ClimateError::Hdf5 { path, what, source }
}

/// The layout of dataset `name` in the file at `path`.
pub fn layout(path: &Path, name: &str) -> Result<RowLayout, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file".into()))?;
    let ds = file.dataset(name).map_err(h5err(path, format!("opening dataset {name}")))?;
    let shape = ds.shape();
    if shape.is_empty() {
        return Err(ClimateError::Rank { path: path.to_owned(), dataset: name.to_owned(), got: shape, rank: 1 });
    }
    let dtype = ds.dtype().map_err(h5err(path, format!("reading the type of {name}")))?;
    let element = dtype.size();
    let bytes = matches!(dtype.to_descriptor(), Ok(TypeDescriptor::Unsigned(IntSize::U1)));
    let len = (shape.iter().product::<usize>() * element) as u64;
    let contiguous = ds.layout() == hdf5::dataset::Layout::Contiguous && ds.storage_size() == len;
    let extent = ds.offset().filter(|_| contiguous).map(|offset| Extent { offset, len });
    Ok(RowLayout { shape, element, extent, bytes })
}

/// Append row `row` of dataset `name` (of `layout`) to `out` through
/// libhdf5; the dataset must hold one-byte unsigned elements.
pub fn read_row(
    path: &Path,
    name: &str,
    layout: &RowLayout,
    row: usize,
    out: &mut Vec<u8>,
) -> Result<(), ClimateError> {
    if !layout.bytes {
        return Err(ClimateError::Dtype {
            path: path.to_owned(),
            dataset: name.to_owned(),
            expected: "one-byte unsigned integers (the only type read through libhdf5; other types are read from contiguous datasets)",
        });
    }
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file".into()))?;
    let ds = file.dataset(name).map_err(h5err(path, format!("opening dataset {name}")))?;
    let slab: Vec<SliceOrIndex> = std::iter::once(SliceOrIndex::Index(row))
        .chain(layout.shape.iter().skip(1).map(|&count| SliceOrIndex::SliceCount {
            start: 0,
            step: 1,
            count,
            block: 1,
        }))
        .collect();
    let values = ds
        .read_slice::<u8, _, ndarray::IxDyn>(Selection::from(Hyperslab::from(slab)))
        .map_err(h5err(path, format!("reading row {row} of {name}")))?;
    out.extend(values.iter());
    Ok(())
}
