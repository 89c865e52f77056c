//! Datasets whose samples are byte strings rather than decoded values:
//! what a benchmark of storage (DLIO, MLPerf Storage) reads, and what a
//! trainer decodes itself.
//!
//! - [`TfRecords`]: every record of TFRecord files (CRC checked), or the
//!   bytes of one feature of each record's `tf.train.Example`.
//! - [`NpzArrays`]: one array of NumPy `.npz` files, samples along its last
//!   axis (DLIO's layout) or first.
//! - [`Hdf5Rows`]: one dataset of HDF5 files by name, samples along its
//!   first axis.
//!
//! Each holds its files open. A sample stored in one run of bytes is read
//! with one positioned read into the batch; one spread over an array (DLIO's
//! `.npz` files of several samples) is gathered from a map. The loader's
//! workers read them with [`Dataset::read_record`](crate::dataset::Dataset::read_record).
//!
//! ```no_run
//! use std::sync::Arc;
//! use loader::pipeline::{Loader, LoaderConfig};
//! use loader::records::TfRecords;
//!
//! let data = Arc::new(TfRecords::open(&["train/img_0_of_8.tfrecord"], Some("image")).unwrap());
//! let order = (0..4).collect();
//! let config = LoaderConfig { batch: 2, workers: 2, prefetch: 4, skip_corrupt: false, check_finite: false, drop_last: false };
//! let mut loader = Loader::new(data, order, config);
//! let batch = loader.next().unwrap().unwrap();
//! println!("{} bytes in the first image", batch.record(0).len());
//! ```

mod hdf5;
mod npz;
mod tfrecord;

pub use self::hdf5::Hdf5Rows;
pub use self::npz::{NpzArrays, SampleAxis};
pub use self::tfrecord::TfRecords;

use std::path::Path;

use crate::dataset::{Dataset, DatasetError};

/// What a dataset of records is: samples, where each is, and its bytes.
/// Every `RecordSource` is a [`Dataset`] that [holds records](Dataset::holds_records).
pub trait RecordSource: Send + Sync {
    /// Number of samples.
    fn samples(&self) -> usize;
    /// Where sample `index` is, for messages.
    fn place(&self, index: usize) -> String;
    /// Append sample `index`'s bytes to `out`; returns the bytes read from storage.
    fn append(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError>;
    /// Sample `index`'s length in bytes, when known without reading it.
    fn len_of(&self, index: usize) -> Option<usize> {
        let _ = index;
        None
    }
}

impl<T: RecordSource> Dataset for T {
    fn len(&self) -> usize {
        self.samples()
    }
    fn x_len(&self) -> usize {
        0
    }
    fn y_len(&self) -> usize {
        0
    }
    fn read_into(&self, index: usize, _x: &mut [f32], _y: &mut [f32]) -> Result<u64, DatasetError> {
        Err(DatasetError::NotValues { index })
    }
    fn locate(&self, index: usize) -> String {
        self.place(index)
    }
    fn holds_records(&self) -> bool {
        true
    }
    fn read_record(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        self.append(index, out)
    }
    fn record_len(&self, index: usize) -> Option<usize> {
        self.len_of(index)
    }
}

fn records_error(path: &Path, reason: impl Into<String>) -> DatasetError {
    DatasetError::Records { path: path.to_owned(), reason: reason.into() }
}

/// Sample `index` of a dataset of `len`, or the error naming both.
fn in_range<T>(items: &[T], index: usize) -> Result<&T, DatasetError> {
    items.get(index).ok_or(DatasetError::OutOfRange { index, len: items.len() })
}

/// Copy sample `k` of an array of `samples` samples stored row-major with
/// `shape` from `data` into `out`: a contiguous run when samples are on the
/// first axis, a gather of every `samples`-th element when on the last.
fn append_sample(data: &[u8], element: usize, samples: usize, k: usize, axis: SampleAxis, out: &mut Vec<u8>) {
    let per_sample = data.len() / samples.max(1);
    match axis {
        SampleAxis::First => out.extend_from_slice(&data[k * per_sample..(k + 1) * per_sample]),
        SampleAxis::Last if samples == 1 => out.extend_from_slice(data),
        SampleAxis::Last => {
            let stride = samples * element;
            out.reserve(per_sample);
            for chunk in data[k * element..].chunks(stride) {
                out.extend_from_slice(&chunk[..element]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_on_the_last_axis_is_gathered_element_by_element() {
        // (2, 3, samples = 2) of 2-byte elements: sample 1 is every odd element.
        let data: Vec<u8> = (0..24).collect();
        let mut out = Vec::new();
        append_sample(&data, 2, 2, 1, SampleAxis::Last, &mut out);
        assert_eq!(out, vec![2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23]);
        out.clear();
        append_sample(&data, 2, 2, 1, SampleAxis::First, &mut out);
        assert_eq!(out, (12..24).collect::<Vec<u8>>());
        out.clear();
        append_sample(&data, 2, 1, 0, SampleAxis::Last, &mut out);
        assert_eq!(out, data);
    }
}
