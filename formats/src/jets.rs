//! Collision-event image files in the layout of NERSC's HEP-CNN benchmark
//! (`hep_cnn_benchmark`, `scripts/networks/binary_classifier_tf.py`,
//! `DataSet.load_next_file`), the data of Kurth et al. 2018 §V and of
//! Bhimji et al. 2017 ("Deep neural networks for physics analysis on
//! low-level whole-detector data at the LHC", arXiv:1711.03573).
//!
//! One HDF5 file holds N events, at the file's root:
//!
//! | dataset | type | shape | meaning |
//! |---|---|---|---|
//! | `data` | float32 | (N, C, H, W) | the event unrolled in (η, φ): channel 0 electromagnetic calorimeter E_T, 1 hadronic calorimeter E_T (GeV), 2 tracks per cell |
//! | `label` | int32 | (N) | 1 signal, 0 background |
//! | `weight` | float32 | (N) | the event's weight (cross-section × luminosity / generated) |
//! | `normweight` | float32 | (N) | `weight` over the file's mean weight |
//! | `psr` | float32 | (N) | 1 if the event passes the cut-based selection the network is compared with, else 0 |
//!
//! Every dataset is written contiguous, so a reader can take an event's
//! bytes at [`EventFile::data`]'s offset without libhdf5's global lock.

use std::path::Path;

use crate::climate::{ClimateError, Extent, check_dtype, h5err, open_checked, write_atomically, write_dataset};

/// The event images.
pub const DATA: &str = "data";
/// The classes.
pub const LABEL: &str = "label";
/// The events' weights.
pub const WEIGHT: &str = "weight";
/// The weights over their mean in the file.
pub const NORMWEIGHT: &str = "normweight";
/// The cut-based selection's decision.
pub const PSR: &str = "psr";

/// Channels, rows (η) and columns (φ) of one event image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EventShape {
    /// Channels (3: ECAL, HCAL, tracks).
    pub channels: usize,
    /// Rows: bins of pseudorapidity η.
    pub height: usize,
    /// Columns: bins of azimuth φ.
    pub width: usize,
}

impl EventShape {
    /// Values in one event image.
    pub fn values(&self) -> usize {
        self.channels * self.height * self.width
    }
}

/// Everything but the images of a file's events, with the shape and byte
/// range of the images.
#[derive(Debug, Clone, PartialEq)]
pub struct EventFile {
    /// One image's shape.
    pub shape: EventShape,
    /// 1 signal, 0 background, per event.
    pub labels: Vec<i32>,
    /// Per event.
    pub weights: Vec<f32>,
    /// Per event: passes the cut-based selection.
    pub psr: Vec<f32>,
    /// Where `data` lies in the file (little-endian float32, C order).
    pub data: Extent,
}

impl EventFile {
    /// Events in the file.
    pub fn events(&self) -> usize {
        self.labels.len()
    }
}

/// The events a writer is given: images (N·C·H·W values, C order) and one
/// label, weight and selection decision each.
#[derive(Debug, Clone, Copy)]
pub struct Events<'a> {
    /// The images.
    pub data: &'a [f32],
    /// 1 signal, 0 background.
    pub labels: &'a [i32],
    /// Weights.
    pub weights: &'a [f32],
    /// 1 passes the cut-based selection, 0 not.
    pub psr: &'a [f32],
}

/// Write `events` of `shape` to `path` atomically (a temporary name, then
/// rename), every dataset contiguous.
pub fn write_events(path: &Path, shape: EventShape, events: Events<'_>) -> Result<(), ClimateError> {
    let n = events.labels.len();
    for (what, got, expected) in [
        ("data", events.data.len(), n * shape.values()),
        ("weights", events.weights.len(), n),
        ("psr", events.psr.len(), n),
    ] {
        if got != expected {
            return Err(ClimateError::BufferLen { what, got, expected });
        }
    }
    let mean = events.weights.iter().map(|&w| f64::from(w)).sum::<f64>() / n.max(1) as f64;
    let normweights: Vec<f32> = events.weights.iter().map(|&w| (f64::from(w) / mean) as f32).collect();
    write_atomically(path, |file, path| {
        write_dataset(file, path, DATA, &[n, shape.channels, shape.height, shape.width], events.data)?;
        write_dataset(file, path, LABEL, &[n], events.labels)?;
        write_dataset(file, path, WEIGHT, &[n], events.weights)?;
        write_dataset(file, path, NORMWEIGHT, &[n], &normweights)?;
        write_dataset(file, path, PSR, &[n], events.psr)
    })
}

/// Open an event file: the image shape and extent, labels, weights and
/// selection decisions, every dataset's shape and type checked.
pub fn read_event_file(path: &Path) -> Result<EventFile, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let data = file.dataset(DATA).map_err(h5err(path, format!("opening dataset {DATA}")))?;
    let (events, shape) = match data.shape().as_slice() {
        &[n, channels, height, width] => (n, EventShape { channels, height, width }),
        got => {
            return Err(ClimateError::Rank { path: path.to_owned(), dataset: DATA.into(), got: got.to_vec(), rank: 4 });
        }
    };
    check_dtype::<f32>(&data, path, DATA, "float32")?;
    let not_contiguous = || ClimateError::NotContiguous { path: path.to_owned(), dataset: DATA.to_owned() };
    // A shape whose bytes overflow is no dataset a file can hold.
    let len = [shape.channels, shape.height, shape.width, 4]
        .iter()
        .try_fold(events as u64, |bytes, &d| bytes.checked_mul(d as u64))
        .ok_or_else(not_contiguous)?;
    if data.layout() != hdf5::dataset::Layout::Contiguous || data.storage_size() != len {
        return Err(not_contiguous());
    }
    let offset = data.offset().ok_or_else(not_contiguous)?;
    let labels = open_checked(&file, path, LABEL, &[events])?;
    check_dtype::<i32>(&labels, path, LABEL, "int32")?;
    let read_f32 = |name: &str| -> Result<Vec<f32>, ClimateError> {
        let ds = open_checked(&file, path, name, &[events])?;
        check_dtype::<f32>(&ds, path, name, "float32")?;
        ds.read_raw().map_err(h5err(path, format!("reading {name}")))
    };
    Ok(EventFile {
        shape,
        labels: labels.read_raw().map_err(h5err(path, format!("reading {LABEL}")))?,
        weights: read_f32(WEIGHT)?,
        psr: read_f32(PSR)?,
        data: Extent { offset, len },
    })
}

/// The number of events in the file at `path` (the length of `label`).
pub fn count_events(path: &Path) -> Result<u64, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let labels = file.dataset(LABEL).map_err(h5err(path, format!("opening dataset {LABEL}")))?;
    match labels.shape().as_slice() {
        &[n] => Ok(n as u64),
        got => Err(ClimateError::Rank { path: path.to_owned(), dataset: LABEL.into(), got: got.to_vec(), rank: 1 }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SHAPE: EventShape = EventShape { channels: 3, height: 4, width: 5 };

    fn write(path: &Path, n: usize) {
        let data: Vec<f32> = (0..n * SHAPE.values()).map(|i| i as f32 * 0.5).collect();
        let labels: Vec<i32> = (0..n as i32).map(|i| i % 2).collect();
        let weights: Vec<f32> = (0..n).map(|i| 1.0 + i as f32).collect();
        let psr: Vec<f32> = (0..n).map(|i| (i % 3 == 0) as u8 as f32).collect();
        write_events(path, SHAPE, Events { data: &data, labels: &labels, weights: &weights, psr: &psr }).unwrap();
    }

    #[test]
    fn written_events_read_back_with_their_bytes_at_the_data_extent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.h5");
        write(&path, 3);
        let file = read_event_file(&path).unwrap();
        assert_eq!((file.shape, file.events()), (SHAPE, 3));
        assert_eq!(file.labels, [0, 1, 0]);
        assert_eq!(file.weights, [1.0, 2.0, 3.0]);
        assert_eq!(file.psr, [1.0, 0.0, 0.0]);
        assert_eq!(count_events(&path).unwrap(), 3);
        let bytes = std::fs::read(&path).unwrap();
        let start = file.data.offset as usize + SHAPE.values() * 4;
        let second = f32::from_le_bytes(bytes[start..start + 4].try_into().unwrap());
        assert_eq!(second, SHAPE.values() as f32 * 0.5, "event 1's first value");
        let h5 = crate::hdf5_file::open(&path).unwrap();
        let norm: Vec<f32> = h5.dataset(NORMWEIGHT).unwrap().read_raw().unwrap();
        assert_eq!(norm, [0.5, 1.0, 1.5]);
    }

    #[test]
    fn a_file_missing_a_dataset_or_of_the_wrong_shape_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.h5");
        let file = crate::hdf5_file::create(&path).unwrap();
        write_dataset(&file, &path, DATA, &[2, 3, 4], &[0f32; 24]).unwrap();
        drop(file);
        let error = read_event_file(&path).unwrap_err().to_string();
        assert!(
            error.contains("bad.h5") && error.contains("dataset data") && error.contains("4 dimensions"),
            "{error}"
        );

        let file = crate::hdf5_file::create(&path).unwrap();
        write_dataset(&file, &path, DATA, &[2, 3, 4, 5], &[0f32; 120]).unwrap();
        write_dataset(&file, &path, LABEL, &[3], &[0i32; 3]).unwrap();
        drop(file);
        let error = read_event_file(&path).unwrap_err().to_string();
        assert!(error.contains("dataset label") && error.contains("[3]"), "{error}");
    }
}
