//! DeepCAM HDF5 samples (one file per sample) with min-max normalisation
//! from `stats.h5` and HWC -> CHW, as MLPerf HPC's `cam_hdf5_dataset.py` does.
//!
//! libhdf5 serialises every call behind one global lock, so worker threads
//! reading through it gain nothing. At open, each file's contiguous datasets
//! are located once (through the library); samples are then read from a
//! memory map by byte offset, outside the lock, so workers read in parallel.
//! Chunked or compressed files go through the library.

#![allow(unsafe_code)]

use std::fs::File;
use std::path::{Path, PathBuf};

use formats::climate::{self, ClimateError, ClimateShape, DATA, Extent, LABELS};
use memmap2::Mmap;

use crate::dataset::{Dataset, DatasetError};

enum Access {
    /// Contiguous datasets: mapped file, byte extents of data and labels.
    Mapped { map: Mmap, file: File, data: Extent, labels: Extent },
    /// Anything else: through libhdf5.
    Library,
}

struct SampleFile {
    path: PathBuf,
    access: Access,
}

/// DeepCAM samples, normalised to [0, 1] per channel, as (C, H, W) inputs and
/// (H, W) class targets (as f32).
pub struct DeepcamDataset {
    files: Vec<SampleFile>,
    shape: ClimateShape,
    minval: Vec<f32>,
    range: Vec<f32>,
    /// With `Some(k)`, a label outside 0..k fails the read.
    classes: Option<usize>,
}

fn hdf5_error(error: ClimateError) -> DatasetError {
    DatasetError::Climate(error)
}

impl DeepcamDataset {
    /// Open sample files and the `stats.h5` that normalises them.
    pub fn open(paths: &[impl AsRef<Path>], stats: &Path, shape: ClimateShape) -> Result<Self, DatasetError> {
        let stats = climate::read_stats(stats).map_err(hdf5_error)?;
        if stats.minval.len() != shape.channels {
            return Err(DatasetError::Climate(ClimateError::Shape {
                path: PathBuf::from("stats.h5"),
                dataset: "climate/minval".into(),
                got: vec![stats.minval.len()],
                expected: vec![shape.channels],
            }));
        }
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let path = path.as_ref();
            let data = climate::contiguous_extent(path, DATA, &[shape.height, shape.width, shape.channels]);
            let labels = climate::contiguous_extent(path, LABELS, &[shape.height, shape.width]);
            let access = match (data, labels) {
                (Ok(data), Ok(labels)) => {
                    let file = File::open(path).map_err(|source| DatasetError::Io { path: path.to_owned(), source })?;
                    // SAFETY: read-only map of a staged sample file; staged
                    // files are written by temp file + rename and never
                    // modified in place.
                    formats::mapped::report_sigbus();
                    let map = unsafe { Mmap::map(&file) }
                        .map_err(|source| DatasetError::Io { path: path.to_owned(), source })?;
                    let end = data.offset.max(labels.offset) + data.len.max(labels.len);
                    if (map.len() as u64) < data.offset + data.len || (map.len() as u64) < labels.offset + labels.len {
                        return Err(DatasetError::Io {
                            path: path.to_owned(),
                            source: std::io::Error::other(format!(
                                "file shorter than its datasets (needs {end} bytes)"
                            )),
                        });
                    }
                    Access::Mapped { map, file, data, labels }
                }
                (Err(ClimateError::NotContiguous { .. }), _) | (_, Err(ClimateError::NotContiguous { .. })) => {
                    Access::Library
                }
                (Err(e), _) | (_, Err(e)) => return Err(hdf5_error(e)),
            };
            files.push(SampleFile { path: path.to_owned(), access });
        }
        let range = stats.maxval.iter().zip(&stats.minval).map(|(hi, lo)| hi - lo).collect();
        Ok(DeepcamDataset { files, shape, minval: stats.minval, range, classes: None })
    }

    /// Fail a read whose labels are not all class ids 0..`classes`, naming
    /// the file and the pixel (a model trained on them would index past its
    /// classes or learn from garbage).
    pub fn with_classes(mut self, classes: usize) -> Self {
        self.classes = Some(classes);
        self
    }

    fn check_labels(&self, index: usize, y: &[f32]) -> Result<(), DatasetError> {
        let Some(classes) = self.classes else { return Ok(()) };
        match y.iter().position(|&l| l < 0.0 || l >= classes as f32) {
            None => Ok(()),
            Some(p) => Err(DatasetError::Shape {
                path: self.files[index].path.clone(),
                key: index as u64,
                reason: format!(
                    "label {} at row {}, column {} is not a class id 0 to {}",
                    y[p],
                    p / self.shape.width,
                    p % self.shape.width,
                    classes - 1
                ),
            }),
        }
    }
}

/// Pixels per tile of [`normalise_hwc_to_chw`]: a tile of 16 channels is
/// 16 KiB of input, so it stays in L1 while each channel's plane is written.
const TILE_PIXELS: usize = 256;

/// Min-max normalise little-endian f32 values stored pixel-major
/// (H, W, C) into channel planes (C, H, W): `x[ch][p] = (v - min[ch]) /
/// range[ch]`, 0 where a channel's range is 0.
///
/// The work goes by tiles of pixels, one channel at a time within a tile,
/// so every plane is written sequentially and the input is read from L1;
/// an element-wise scatter (index = p * C + ch) strides across 16 planes
/// per pixel and needs a division per value for its indices.
fn normalise_hwc_to_chw(hwc: &[u8], minval: &[f32], range: &[f32], x: &mut [f32]) {
    let channels = minval.len();
    let pixels = x.len() / channels;
    debug_assert_eq!(hwc.len(), x.len() * 4);
    for tile_start in (0..pixels).step_by(TILE_PIXELS) {
        let tile_end = (tile_start + TILE_PIXELS).min(pixels);
        let tile = &hwc[tile_start * channels * 4..tile_end * channels * 4];
        for (ch, (&lo, &span)) in minval.iter().zip(range).enumerate() {
            let plane = &mut x[ch * pixels + tile_start..ch * pixels + tile_end];
            if span == 0.0 {
                plane.fill(0.0);
                continue;
            }
            for (o, px) in plane.iter_mut().zip(tile.chunks_exact(channels * 4)) {
                let b = &px[ch * 4..ch * 4 + 4];
                *o = (f32::from_le_bytes([b[0], b[1], b[2], b[3]]) - lo) / span;
            }
        }
    }
}

/// The same for values already decoded. Only the library path (chunked or
/// compressed files) takes it, where libhdf5's read and decompression cost
/// far more than this copy back to bytes; the mapped path reads bytes.
fn normalise_values_to_chw(hwc: &[f32], minval: &[f32], range: &[f32], x: &mut [f32]) {
    let bytes: Vec<u8> = hwc.iter().flat_map(|v| v.to_le_bytes()).collect();
    normalise_hwc_to_chw(&bytes, minval, range, x);
}

impl Dataset for DeepcamDataset {
    fn len(&self) -> usize {
        self.files.len()
    }

    fn locate(&self, index: usize) -> String {
        match self.files.get(index) {
            Some(file) => format!("sample {index} ({})", file.path.display()),
            None => format!("sample {index}"),
        }
    }

    fn x_len(&self) -> usize {
        self.shape.values()
    }

    fn y_len(&self) -> usize {
        self.shape.pixels()
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let file = self.files.get(index).ok_or(DatasetError::OutOfRange { index, len: self.files.len() })?;
        match &file.access {
            Access::Mapped { map, file: opened, data, labels } => {
                // A staged file truncated during an epoch: an error naming it
                // (skipped with skip_corrupt) instead of SIGBUS on the read.
                formats::mapped::check_still_covers(opened, map.len() as u64)
                    .map_err(|source| DatasetError::Io { path: file.path.clone(), source })?;
                let bytes = &map[data.offset as usize..(data.offset + data.len) as usize];
                normalise_hwc_to_chw(bytes, &self.minval, &self.range, x);
                let bytes = &map[labels.offset as usize..(labels.offset + labels.len) as usize];
                for (o, b) in y.iter_mut().zip(bytes.chunks_exact(4)) {
                    *o = i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32;
                }
                self.check_labels(index, y)?;
                Ok(data.len + labels.len)
            }
            Access::Library => {
                let sample = climate::read_sample(&file.path, self.shape).map_err(hdf5_error)?;
                normalise_values_to_chw(&sample.data, &self.minval, &self.range, x);
                for (o, &l) in y.iter_mut().zip(&sample.labels) {
                    *o = l as f32;
                }
                self.check_labels(index, y)?;
                Ok(((sample.data.len() + sample.labels.len()) * 4) as u64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, element by element: what the tiled version must equal.
    fn reference(hwc: &[f32], minval: &[f32], range: &[f32]) -> Vec<f32> {
        let c = minval.len();
        let hw = hwc.len() / c;
        let mut x = vec![f32::NAN; hwc.len()];
        for (i, &v) in hwc.iter().enumerate() {
            let (p, ch) = (i / c, i % c);
            x[ch * hw + p] = if range[ch] != 0.0 { (v - minval[ch]) / range[ch] } else { 0.0 };
        }
        x
    }

    #[test]
    fn tiled_normalise_equals_the_elementwise_definition_bit_for_bit() {
        // Pixel counts below, at and across tile boundaries; 16 channels as
        // DeepCAM, 3 and 1 as other layouts; channel 1 has a zero range.
        for (pixels, channels) in [(1, 16), (255, 16), (256, 16), (257, 3), (1000, 16), (777, 1)] {
            let hwc: Vec<f32> = (0..pixels * channels).map(|i| (i as f32 * 0.37).sin() * 50.0 - 3.0).collect();
            let minval: Vec<f32> = (0..channels).map(|c| -60.0 + c as f32).collect();
            let range: Vec<f32> = (0..channels).map(|c| if c == 1 { 0.0 } else { 100.0 + c as f32 * 7.5 }).collect();
            let mut x = vec![f32::NAN; hwc.len()];
            normalise_values_to_chw(&hwc, &minval, &range, &mut x);
            let want = reference(&hwc, &minval, &range);
            let same = x.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{pixels} pixels x {channels} channels differ from the definition");
        }
    }
}
