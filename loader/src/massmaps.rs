//! Mass maps ([`formats::massmaps`]: CosmoGAN's (N, S, S) float32 `.npy`
//! files) as a [`Dataset`]: one sample per map, x the map's S² values of
//! ρ/ρ̄ as stored, y one value, the map's mean (a GAN has no target; the
//! mean lets a reader check what it read).
//!
//! Each map is read with one positional read at its offset into the
//! caller's buffer.
//!
//! ```no_run
//! use loader::dataset::Dataset;
//! use loader::massmaps::MassMaps;
//! let maps = MassMaps::open(&["train/maps-00000.npy"])?;
//! let (mut x, mut y) = (vec![0f32; maps.x_len()], vec![0f32; maps.y_len()]);
//! maps.read_into(0, &mut x, &mut y)?;
//! # Ok::<(), loader::dataset::DatasetError>(())
//! ```

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use formats::massmaps::{MapFile, MapsError, read_map_file};

use crate::dataset::{Dataset, DatasetError};

/// Values in a sample's target: the map's mean.
pub const TARGET_LEN: usize = 1;

struct OpenFile {
    path: PathBuf,
    file: File,
    maps: MapFile,
}

/// The maps of one or more map files, in order.
pub struct MassMaps {
    files: Vec<OpenFile>,
    side: usize,
    /// (file, map in file) of each sample.
    samples: Vec<(usize, usize)>,
}

fn dataset_error(e: MapsError) -> DatasetError {
    match e {
        MapsError::Io { path, source } => DatasetError::Io { path, source },
        MapsError::Npy { path, source } => DatasetError::Records { path, reason: source.to_string() },
        MapsError::Layout { path, reason } => DatasetError::Records { path, reason },
        other => DatasetError::Records { path: PathBuf::new(), reason: other.to_string() },
    }
}

impl MassMaps {
    /// Open map files; every file's header is checked against its length,
    /// and files of another side than the first are refused.
    pub fn open(paths: &[impl AsRef<Path>]) -> Result<MassMaps, DatasetError> {
        let mut files: Vec<OpenFile> = Vec::with_capacity(paths.len());
        let mut samples = Vec::new();
        for path in paths {
            let path = path.as_ref();
            let maps = read_map_file(path).map_err(dataset_error)?;
            if let Some(first) = files.first()
                && first.maps.side != maps.side
            {
                return Err(DatasetError::Shape {
                    path: path.to_owned(),
                    key: 0,
                    reason: format!(
                        "maps of {}², where {} has maps of {}²",
                        maps.side,
                        first.path.display(),
                        first.maps.side
                    ),
                });
            }
            let file = formats::regular::open_regular(path)
                .map_err(|source| DatasetError::Io { path: path.to_owned(), source })?;
            samples.extend((0..maps.maps).map(|m| (files.len(), m)));
            files.push(OpenFile { path: path.to_owned(), file, maps });
        }
        let side = files.first().map_or(0, |f| f.maps.side);
        Ok(MassMaps { files, side, samples })
    }

    /// Pixels per side of every map (0 with no file).
    pub fn side(&self) -> usize {
        self.side
    }
}

impl Dataset for MassMaps {
    fn len(&self) -> usize {
        self.samples.len()
    }

    fn x_len(&self) -> usize {
        self.side * self.side
    }

    fn y_len(&self) -> usize {
        TARGET_LEN
    }

    fn locate(&self, index: usize) -> String {
        match self.samples.get(index) {
            Some(&(file, map)) => format!("sample {index} ({}, map {map})", self.files[file].path.display()),
            None => format!("sample {index}"),
        }
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        let &(file, map) =
            self.samples.get(index).ok_or(DatasetError::OutOfRange { index, len: self.samples.len() })?;
        let open = &self.files[file];
        let values = &mut x[..self.side * self.side];
        open.file
            .read_exact_at(bytemuck::cast_slice_mut(values), open.maps.offset_of(map))
            .map_err(|source| DatasetError::Io { path: open.path.clone(), source })?;
        // The files are little-endian.
        if cfg!(target_endian = "big") {
            for v in values.iter_mut() {
                *v = f32::from_bits(u32::from_le(v.to_bits()));
            }
        }
        y[0] = (values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64) as f32;
        Ok((values.len() * 4) as u64)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use formats::massmaps::write_maps;

    use super::*;

    #[test]
    fn maps_of_several_files_read_in_order_with_their_mean() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
        write_maps(&a, 2, &[1.0, 1.0, 1.0, 1.0, 0.0, 2.0, 4.0, 6.0]).unwrap();
        write_maps(&b, 2, &[9.0; 4]).unwrap();
        let maps = MassMaps::open(&[&a, &b]).unwrap();
        assert_eq!((maps.len(), maps.x_len(), maps.y_len(), maps.side()), (3, 4, 1, 2));
        let (mut x, mut y) = (vec![0f32; 4], vec![0f32; 1]);
        maps.read_into(1, &mut x, &mut y).unwrap();
        assert_eq!((x.as_slice(), y[0]), (&[0.0, 2.0, 4.0, 6.0][..], 3.0));
        maps.read_into(2, &mut x, &mut y).unwrap();
        assert_eq!(y[0], 9.0);
        assert!(maps.locate(2).contains("b.npy, map 0"));
        assert!(maps.read_into(3, &mut x, &mut y).is_err());
    }

    #[test]
    fn files_of_another_side_and_cut_short_files_are_refused_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
        write_maps(&a, 2, &[1.0; 4]).unwrap();
        write_maps(&b, 3, &[1.0; 9]).unwrap();
        let err = MassMaps::open(&[&a, &b]).err().unwrap().to_string();
        assert!(err.contains("maps of 3²"), "{err}");
        let bytes = std::fs::read(&b).unwrap();
        std::fs::write(&b, &bytes[..bytes.len() - 4]).unwrap();
        let err = MassMaps::open(&[&b]).err().unwrap().to_string();
        assert!(err.contains("b.npy") && err.contains("announces"), "{err}");
    }
}
