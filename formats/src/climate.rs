//! The DeepCAM climate sample (MLPerf HPC, `deepcam/src/data/cam_hdf5_dataset.py`)
//! and its `stats.h5` (`deepcam/src/utils/summarize_data.py`), over libhdf5.
//!
//! A sample file `data-*.h5` holds `climate/data` float32 (H, W, C) and
//! `climate/labels_0` int32 (H, W) with classes 0 background, 1 tropical
//! cyclone, 2 atmospheric river. Both are written contiguous, so
//! [`contiguous_extent`] can give a reader the raw byte range to `mmap`: libhdf5
//! serialises every call behind one global lock, and reading by offset is how
//! many workers read at once.

use std::fs;
use std::path::{Path, PathBuf};

use hdf5::H5Type;

/// Dataset holding the fields.
pub const DATA: &str = "climate/data";
/// Dataset holding the per-pixel classes.
pub const LABELS: &str = "climate/labels_0";
/// File name of the per-channel statistics.
pub const STATS_FILE: &str = "stats.h5";

/// Height, width and channels of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClimateShape {
    /// Rows (latitude).
    pub height: usize,
    /// Columns (longitude).
    pub width: usize,
    /// Variables.
    pub channels: usize,
}

impl ClimateShape {
    /// The DeepCAM shape: 768 x 1152 x 16.
    pub const DEEPCAM: ClimateShape = ClimateShape { height: 768, width: 1152, channels: 16 };

    /// H * W.
    pub fn pixels(&self) -> usize {
        self.height * self.width
    }

    /// H * W * C.
    pub fn values(&self) -> usize {
        self.pixels() * self.channels
    }
}

/// What went wrong reading or writing a climate file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClimateError {
    /// libhdf5 reported an error.
    #[error("{}: {what}: {source}", path.display())]
    Hdf5 {
        /// File.
        path: PathBuf,
        /// What was being done (names the dataset).
        what: String,
        /// The library's error.
        source: hdf5::Error,
    },
    /// A dataset has a different shape than expected.
    #[error("{}: dataset {dataset} has shape {got:?}, expected {expected:?}", path.display())]
    Shape {
        /// File.
        path: PathBuf,
        /// Dataset.
        dataset: String,
        /// Shape found.
        got: Vec<usize>,
        /// Shape expected.
        expected: Vec<usize>,
    },
    /// A dataset has another number of dimensions than its kind.
    #[error("{}: dataset {dataset} has shape {got:?}, expected {rank} dimensions", path.display())]
    Rank {
        /// File.
        path: PathBuf,
        /// Dataset.
        dataset: String,
        /// Shape found.
        got: Vec<usize>,
        /// Dimensions expected.
        rank: usize,
    },
    /// A dataset has a different element type than expected.
    #[error("{}: dataset {dataset} does not hold {expected}", path.display())]
    Dtype {
        /// File.
        path: PathBuf,
        /// Dataset.
        dataset: String,
        /// Expected element type.
        expected: &'static str,
    },
    /// A dataset is not stored contiguously (chunked, compact or unallocated).
    #[error("{}: dataset {dataset} is not contiguous, so it has no byte extent; read it through libhdf5", path.display())]
    NotContiguous {
        /// File.
        path: PathBuf,
        /// Dataset.
        dataset: String,
    },
    /// Buffers given to a writer do not match the shape.
    #[error("{what} holds {got} values, expected {expected}")]
    BufferLen {
        /// Which buffer.
        what: &'static str,
        /// Values given.
        got: usize,
        /// Values expected.
        expected: usize,
    },
    /// A string attribute that HDF5 cannot hold (an interior NUL).
    #[error("{}: attribute {name}: {reason}", path.display())]
    Attribute {
        /// File.
        path: PathBuf,
        /// Attribute.
        name: &'static str,
        /// Why.
        reason: String,
    },
    /// Filesystem error (the rename of the finished file, or the flags of
    /// the descriptor it is written through).
    #[error("{}: {source}", path.display())]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// A sample read into memory.
#[derive(Debug, Clone, PartialEq)]
pub struct ClimateSample {
    /// Fields, (H, W, C) C order.
    pub data: Vec<f32>,
    /// Classes, (H, W).
    pub labels: Vec<i32>,
}

/// Per-channel statistics, as DeepCAM's `summarize_data.py` writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelStats {
    /// Number of samples summarised (`climate/count`, a scalar).
    pub count: i64,
    /// Mean per channel.
    pub mean: Vec<f32>,
    /// Mean of squares per channel.
    pub sqmean: Vec<f32>,
    /// Minimum per channel.
    pub minval: Vec<f32>,
    /// Maximum per channel.
    pub maxval: Vec<f32>,
}

/// Byte range of a contiguous dataset inside its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Offset of the first element.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
}

pub(crate) fn h5err(path: &Path, what: impl Into<String>) -> impl FnOnce(hdf5::Error) -> ClimateError {
    let path = path.to_owned();
    let what = what.into();
    move |source| ClimateError::Hdf5 { path, what, source }
}

fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), ClimateError> {
    if got == expected { Ok(()) } else { Err(ClimateError::BufferLen { what, got, expected }) }
}

pub(crate) fn write_dataset<T: H5Type>(
    file: &hdf5::File,
    path: &Path,
    name: &str,
    shape: &[usize],
    values: &[T],
) -> Result<(), ClimateError> {
    let ds = file.new_dataset::<T>().shape(shape).create(name).map_err(h5err(path, format!("creating {name}")))?;
    ds.write_raw(values).map_err(h5err(path, format!("writing {name}")))
}

/// Write the file atomically: build it under a hidden temporary name, then rename.
pub(crate) fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&hdf5::File, &Path) -> Result<(), ClimateError>,
) -> Result<(), ClimateError> {
    let temp = crate::atomic::temp_path_for(path);
    let result = (|| {
        let file = crate::hdf5_file::create(&temp).map_err(h5err(path, "creating file"))?;
        fill(&file, path)?;
        file.close().map_err(h5err(path, "closing file"))
    })();
    match result {
        Ok(()) => fs::rename(&temp, path).map_err(|source| ClimateError::Io { path: path.to_owned(), source }),
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Write one sample file with contiguous `climate/data` and `climate/labels_0`.
pub fn write_sample(path: &Path, shape: ClimateShape, data: &[f32], labels: &[i32]) -> Result<(), ClimateError> {
    write_described_sample(path, shape, data, labels, &[])
}

/// Attribute of `climate/data` naming each channel.
pub const CHANNEL_NAMES: &str = "channel_names";
/// Attribute of `climate/data` giving each channel's units.
pub const CHANNEL_UNITS: &str = "channel_units";

/// [`write_sample`], with each channel's name and units (`channels[c] =
/// (name, units)`, one per channel, or none) as the string-array attributes
/// [`CHANNEL_NAMES`] and [`CHANNEL_UNITS`] of `climate/data`.
pub fn write_described_sample(
    path: &Path,
    shape: ClimateShape,
    data: &[f32],
    labels: &[i32],
    channels: &[(&str, &str)],
) -> Result<(), ClimateError> {
    check_len("data", data.len(), shape.values())?;
    check_len("labels", labels.len(), shape.pixels())?;
    if !channels.is_empty() {
        check_len("channel descriptions", channels.len(), shape.channels)?;
    }
    write_atomically(path, |file, path| {
        write_dataset(file, path, DATA, &[shape.height, shape.width, shape.channels], data)?;
        if !channels.is_empty() {
            let ds = file.dataset(DATA).map_err(h5err(path, format!("reopening {DATA}")))?;
            for (name, values) in [
                (CHANNEL_NAMES, channels.iter().map(|c| c.0).collect::<Vec<_>>()),
                (CHANNEL_UNITS, channels.iter().map(|c| c.1).collect()),
            ] {
                let strings = values
                    .iter()
                    .map(|v| v.parse::<hdf5::types::VarLenUnicode>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ClimateError::Attribute { path: path.to_owned(), name, reason: e.to_string() })?;
                let attr = ds
                    .new_attr::<hdf5::types::VarLenUnicode>()
                    .shape([strings.len()])
                    .create(name)
                    .map_err(h5err(path, format!("creating attribute {name}")))?;
                attr.write(&strings).map_err(h5err(path, format!("writing attribute {name}")))?;
            }
        }
        write_dataset(file, path, LABELS, &[shape.height, shape.width], labels)
    })
}

/// The channel names and units a sample file carries (empty if it has none).
pub fn read_channel_descriptions(path: &Path) -> Result<Vec<(String, String)>, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let ds = file.dataset(DATA).map_err(h5err(path, format!("opening {DATA}")))?;
    if !ds.attr_names().map_err(h5err(path, "listing attributes"))?.iter().any(|n| n == CHANNEL_NAMES) {
        return Ok(Vec::new());
    }
    let read = |name: &str| -> Result<Vec<String>, ClimateError> {
        let values: Vec<hdf5::types::VarLenUnicode> =
            ds.attr(name).and_then(|a| a.read_raw()).map_err(h5err(path, format!("reading attribute {name}")))?;
        Ok(values.iter().map(|v| v.as_str().to_owned()).collect())
    };
    Ok(read(CHANNEL_NAMES)?.into_iter().zip(read(CHANNEL_UNITS)?).collect())
}

pub(crate) fn open_checked(
    file: &hdf5::File,
    path: &Path,
    name: &str,
    expected: &[usize],
) -> Result<hdf5::Dataset, ClimateError> {
    let ds = file.dataset(name).map_err(h5err(path, format!("opening dataset {name}")))?;
    let got = ds.shape();
    if got != expected {
        return Err(ClimateError::Shape {
            path: path.to_owned(),
            dataset: name.to_owned(),
            got,
            expected: expected.to_vec(),
        });
    }
    Ok(ds)
}

pub(crate) fn check_dtype<T: H5Type>(
    ds: &hdf5::Dataset,
    path: &Path,
    name: &str,
    expected: &'static str,
) -> Result<(), ClimateError> {
    let dtype = ds.dtype().map_err(h5err(path, format!("reading type of {name}")))?;
    let wanted = hdf5::Datatype::from_type::<T>().map_err(h5err(path, "building type"))?;
    if dtype.to_descriptor().ok() == wanted.to_descriptor().ok() {
        Ok(())
    } else {
        Err(ClimateError::Dtype { path: path.to_owned(), dataset: name.to_owned(), expected })
    }
}

/// The (height, width, channels) of a sample file's `climate/data`: the
/// shape of a dataset given as files without a manifest.
pub fn read_shape(path: &Path) -> Result<ClimateShape, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let ds = file.dataset(DATA).map_err(h5err(path, format!("opening {DATA}")))?;
    match ds.shape().as_slice() {
        &[height, width, channels] => Ok(ClimateShape { height, width, channels }),
        got => Err(ClimateError::Rank { path: path.to_owned(), dataset: DATA.into(), got: got.to_vec(), rank: 3 }),
    }
}

/// Read a sample through libhdf5, checking shapes and element types.
pub fn read_sample(path: &Path, shape: ClimateShape) -> Result<ClimateSample, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let data = open_checked(&file, path, DATA, &[shape.height, shape.width, shape.channels])?;
    check_dtype::<f32>(&data, path, DATA, "float32")?;
    let labels = open_checked(&file, path, LABELS, &[shape.height, shape.width])?;
    check_dtype::<i32>(&labels, path, LABELS, "int32")?;
    Ok(ClimateSample {
        data: data.read_raw().map_err(h5err(path, format!("reading {DATA}")))?,
        labels: labels.read_raw().map_err(h5err(path, format!("reading {LABELS}")))?,
    })
}

/// The byte range of a contiguous dataset, checked against its shape and
/// element size, so a reader can map it without taking the HDF5 lock again.
pub fn contiguous_extent(path: &Path, dataset: &str, expected_shape: &[usize]) -> Result<Extent, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let ds = open_checked(&file, path, dataset, expected_shape)?;
    let not_contiguous = || ClimateError::NotContiguous { path: path.to_owned(), dataset: dataset.to_owned() };
    if ds.layout() != hdf5::dataset::Layout::Contiguous {
        return Err(not_contiguous());
    }
    let offset = ds.offset().ok_or_else(not_contiguous)?;
    let element = ds.dtype().map_err(h5err(path, format!("reading type of {dataset}")))?.size();
    let len = (expected_shape.iter().product::<usize>() * element) as u64;
    if ds.storage_size() != len {
        return Err(not_contiguous());
    }
    Ok(Extent { offset, len })
}

/// Write `stats.h5` atomically.
pub fn write_stats(path: &Path, stats: &ChannelStats) -> Result<(), ClimateError> {
    let c = stats.mean.len();
    for (what, v) in [("sqmean", &stats.sqmean), ("minval", &stats.minval), ("maxval", &stats.maxval)] {
        check_len(what, v.len(), c)?;
    }
    write_atomically(path, |file, path| {
        let count = file.new_dataset::<i64>().create("climate/count").map_err(h5err(path, "creating climate/count"))?;
        count.write_scalar(&stats.count).map_err(h5err(path, "writing climate/count"))?;
        for (name, values) in [
            ("climate/mean", &stats.mean),
            ("climate/sqmean", &stats.sqmean),
            ("climate/minval", &stats.minval),
            ("climate/maxval", &stats.maxval),
        ] {
            write_dataset(file, path, name, &[c], values)?;
        }
        Ok(())
    })
}

/// Read `stats.h5`.
pub fn read_stats(path: &Path) -> Result<ChannelStats, ClimateError> {
    let file = crate::hdf5_file::open(path).map_err(h5err(path, "opening file"))?;
    let read = |name: &str| -> Result<Vec<f32>, ClimateError> {
        file.dataset(name).and_then(|d| d.read_raw::<f32>()).map_err(h5err(path, format!("reading {name}")))
    };
    let count = file
        .dataset("climate/count")
        .and_then(|d| d.read_scalar::<i64>())
        .map_err(h5err(path, "reading climate/count"))?;
    let stats = ChannelStats {
        count,
        mean: read("climate/mean")?,
        sqmean: read("climate/sqmean")?,
        minval: read("climate/minval")?,
        maxval: read("climate/maxval")?,
    };
    let c = stats.mean.len();
    for (name, v) in
        [("climate/sqmean", &stats.sqmean), ("climate/minval", &stats.minval), ("climate/maxval", &stats.maxval)]
    {
        if v.len() != c {
            return Err(ClimateError::Shape {
                path: path.to_owned(),
                dataset: name.to_owned(),
                got: vec![v.len()],
                expected: vec![c],
            });
        }
    }
    Ok(stats)
}
