//! Mass-map files: square two-dimensional maps of projected matter density,
//! many per file, in the layout of CosmoGAN's own training data (Mustafa
//! et al. 2019, "CosmoGAN: creating high-fidelity weak lensing convergence
//! maps using Generative Adversarial Networks", Comput. Astrophys. Cosmol.
//! 6:1; `MustafaMustafa/cosmoGAN`, `networks/run_dcgan.py` reads
//! `cosmogan_maps_256_8k_1.npy` with `np.load`): one NumPy `.npy` array of
//! shape (N, S, S), little-endian float32, C order. `numpy.load(path,
//! mmap_mode="r")` reads them as they are.
//!
//! Each value is the matter density in a pixel over the mean density,
//! ρ/ρ̄ (mean 1 over a box). Map `i` starts at byte
//! `data_offset + i·S²·4`, so a reader takes one map with a positional read.
//!
//! Encoding and decoding the header do no I/O ([`encode_header`],
//! [`decode_header`]); [`write_maps`] and [`read_map_file`] are the file
//! adapters. [`statistics`] holds what the maps are judged by (power
//! spectrum, pixel histogram).
//!
//! ```
//! use formats::massmaps::{decode_header, encode_header};
//! let header = encode_header(3, 8);
//! assert_eq!(header.len() % 64, 0);
//! let file = decode_header(&header, (header.len() + 3 * 8 * 8 * 4) as u64).unwrap();
//! assert_eq!((file.maps, file.side, file.data_offset), (3, 8, header.len() as u64));
//! ```

pub mod statistics;

use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::npy::{NpyError, NpyHeader};

/// The element type every map file holds: little-endian float32.
pub const DESCR: &str = "<f4";
/// NumPy aligns the data of the arrays it writes to 64 bytes (NEP 1; see
/// `numpy/lib/format.py`, `ARRAY_ALIGN`); so do we.
const ALIGN: usize = 64;
/// Bytes read to decode a header (ours are 128; NumPy's rarely more).
const HEADER_READ: usize = 4096;

/// Why a file is not a mass-map file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapsError {
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The `.npy` header is broken.
    #[error("{}: {source}", path.display())]
    Npy {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: NpyError,
    },
    /// A well-formed `.npy` file that is not maps as CosmoGAN reads them.
    #[error("{}: {reason}", path.display())]
    Layout {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// What a map file's header says, checked against the file's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapFile {
    /// Maps in the file.
    pub maps: usize,
    /// Pixels per side.
    pub side: usize,
    /// Where map 0 starts.
    pub data_offset: u64,
}

impl MapFile {
    /// Values in one map.
    pub fn values(&self) -> usize {
        self.side * self.side
    }

    /// Where map `i` starts, in bytes from the start of the file.
    pub fn offset_of(&self, i: usize) -> u64 {
        self.data_offset + (i * self.values() * 4) as u64
    }
}

/// The `.npy` (version 1.0) header of `maps` maps of `side`² pixels,
/// padded with spaces so the data start at a multiple of 64 bytes, as
/// NumPy writes it.
pub fn encode_header(maps: usize, side: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '{DESCR}', 'fortran_order': False, 'shape': ({maps}, {side}, {side}), }}");
    // magic (6) + version (2) + length (2) + dict + padding + '\n'
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(ALIGN) * ALIGN;
    let mut bytes = Vec::with_capacity(total);
    bytes.extend_from_slice(crate::npy::MAGIC);
    bytes.extend_from_slice(&[1, 0]);
    // A dict of three short keys is far below u16::MAX.
    bytes.extend_from_slice(&((total - 10) as u16).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    bytes.resize(total - 1, b' ');
    bytes.push(b'\n');
    bytes
}

/// Decode the header at the start of a map file of `file_len` bytes: an
/// array of three dimensions (N, S, S) of little-endian float32 in C order
/// whose data fill the rest of the file exactly.
pub fn decode_header(bytes: &[u8], file_len: u64) -> Result<MapFile, String> {
    let header = NpyHeader::decode(bytes).map_err(|e| e.to_string())?;
    if header.descr != DESCR {
        return Err(format!("holds {} values; mass maps are little-endian float32 ({DESCR})", header.descr));
    }
    if header.fortran_order {
        return Err("is stored in Fortran order; mass maps are C order".into());
    }
    let (maps, side) = match header.shape.as_slice() {
        &[n, h, w] if h == w && h > 0 => (n, h),
        &[_, h, w] => return Err(format!("holds maps of {h}×{w}; mass maps are square")),
        other => return Err(format!("holds an array of shape {other:?}; mass maps are (maps, side, side)")),
    };
    let data_len = header.data_len().ok_or_else(|| format!("shape {:?} overflows", header.shape))? as u64;
    let expected = header.data_offset as u64 + data_len;
    if file_len != expected {
        return Err(format!(
            "is {file_len} bytes; its header announces {maps} maps of {side}² float32 values, {expected} bytes"
        ));
    }
    Ok(MapFile { maps, side, data_offset: header.data_offset as u64 })
}

/// Write `maps` (each `side`² values, C order) to `path` atomically and
/// durably (a temporary name, fsync, rename).
pub fn write_maps(path: &Path, side: usize, maps: &[f32]) -> Result<(), MapsError> {
    let values = side * side;
    if values == 0 || !maps.len().is_multiple_of(values) {
        return Err(MapsError::Layout {
            path: path.to_owned(),
            reason: format!("{} values are not whole maps of {side}²", maps.len()),
        });
    }
    let mut bytes = encode_header(maps.len() / values, side);
    bytes.reserve(maps.len() * 4);
    maps.iter().for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    crate::atomic::write_durably(path, &bytes).map_err(|source| MapsError::Io { path: path.to_owned(), source })
}

/// Open the map file at `path` and check its header against its length.
pub fn read_map_file(path: &Path) -> Result<MapFile, MapsError> {
    let io = |source| MapsError::Io { path: path.to_owned(), source };
    let file = crate::regular::open_regular(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut head = Vec::with_capacity(HEADER_READ);
    file.take(HEADER_READ as u64).read_to_end(&mut head).map_err(io)?;
    decode_header(&head, len).map_err(|reason| MapsError::Layout { path: path.to_owned(), reason })
}

/// The number of maps in the file at `path`.
pub fn count_maps(path: &Path) -> Result<u64, MapsError> {
    read_map_file(path).map(|f| f.maps as u64)
}

/// Read the whole map file at `path`: its header and every value.
pub fn read_maps(path: &Path) -> Result<(MapFile, Vec<f32>), MapsError> {
    let file = read_map_file(path)?;
    let bytes = std::fs::read(path).map_err(|source| MapsError::Io { path: path.to_owned(), source })?;
    // The file may have changed since its header was checked.
    let data = decode_header(&bytes, bytes.len() as u64)
        .ok()
        .filter(|now| *now == file)
        .and_then(|_| bytes.get(file.data_offset as usize..))
        .ok_or_else(|| MapsError::Layout { path: path.to_owned(), reason: "changed while it was read".into() })?;
    Ok((file, data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn written_maps_read_back_with_their_count_and_side() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("maps-00000.npy");
        let maps: Vec<f32> = (0..2 * 4 * 4).map(|i| i as f32 / 3.0).collect();
        write_maps(&path, 4, &maps).unwrap();
        assert_eq!(count_maps(&path).unwrap(), 2);
        let (file, back) = read_maps(&path).unwrap();
        assert_eq!((file.maps, file.side), (2, 4));
        assert_eq!(back, maps);
        assert_eq!(file.offset_of(1), file.data_offset + 64);
    }

    #[test]
    fn a_cut_short_file_and_other_arrays_are_refused_with_the_reason() {
        let header = encode_header(2, 4);
        let whole = (header.len() + 2 * 16 * 4) as u64;
        assert!(decode_header(&header, whole - 4).unwrap_err().contains("announces 2 maps"));
        assert!(decode_header(&header, whole + 4).is_err());
        // Replacements of the same length keep the header well formed.
        let swap = |from: &str, to: &str| {
            assert_eq!(from.len(), to.len());
            let at = header.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
            let mut bytes = header.clone();
            bytes[at..at + to.len()].copy_from_slice(to.as_bytes());
            bytes
        };
        let err = decode_header(&swap("<f4", "<i4"), whole).unwrap_err();
        assert!(err.contains("float32"), "{err}");
        assert!(decode_header(&swap("False", "True "), whole).unwrap_err().contains("Fortran"));
        assert!(decode_header(&swap("(2, 4, 4)", "(2, 8, 2)"), whole).unwrap_err().contains("square"));
        assert!(decode_header(&swap("(2, 4, 4)", "(32,    )"), whole).unwrap_err().contains("(maps, side, side)"));
        assert!(decode_header(b"not an npy", 10).is_err());
    }

    #[test]
    fn a_file_that_is_no_whole_number_of_maps_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_maps(&dir.path().join("m.npy"), 4, &[0.0; 17]).unwrap_err();
        assert!(err.to_string().contains("not whole maps"), "{err}");
    }
}
