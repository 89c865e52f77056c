//! Multislice scattering samples (the layout in docs/formats.md): one LMDB value
//! per sample holding a 32-byte header, the CBED stack `(positions, H, W)`
//! and the target projected potential `(H, W)`, stored as f32 or f16 and
//! optionally zstd-compressed. A pure codec: it never does I/O; the bytes
//! come from a [`SampleStore`](crate::lmdb::SampleStore).
//!
//! ```text
//! b"SHSC" | u8 version = 1 | u8 precision (0 f32, 1 f16) | u8 compression (0 none, 1 zstd) | u8 0
//! u32 positions | u32 height | u32 width | u64 payload bytes | u32 check
//! payload: cbed[positions * H * W] then potential[H * W], little-endian,
//!          zstd-compressed as one frame if compression = 1
//! ```
//!
//! `check` is the low 32 bits of the xxh3-64 of the payload as stored, so a
//! damaged value is an error, never silently different numbers.
//!
//! ```
//! use formats::scattering::{self, Compression, Precision, ScatteringShape};
//!
//! let shape = ScatteringShape { positions: 2, height: 3, width: 4 };
//! let cbed: Vec<f32> = (0..shape.cbed_len()).map(|i| i as f32).collect();
//! let potential = vec![0.5f32; shape.potential_len()];
//! let bytes = scattering::encode(shape, &cbed, &potential, Precision::F32, Compression::Zstd(3)).unwrap();
//! let (mut c, mut p, mut scratch) = (vec![0.0; 24], vec![0.0; 12], Vec::new());
//! scattering::decode_into(&bytes, &mut c, &mut p, &mut scratch).unwrap();
//! assert_eq!((c, p), (cbed, potential));
//! ```

use half::f16;
use twox_hash::XxHash3_64;

const MAGIC: &[u8; 4] = b"SHSC";
const VERSION: u8 = 1;
/// Bytes before the payload.
pub const HEADER_LEN: usize = 32;

/// Shape of one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScatteringShape {
    /// Probe positions (CBED patterns per sample).
    pub positions: u32,
    /// Pattern and potential height.
    pub height: u32,
    /// Pattern and potential width.
    pub width: u32,
}

impl ScatteringShape {
    /// Values in the CBED stack.
    pub fn cbed_len(&self) -> usize {
        self.positions as usize * self.potential_len()
    }

    /// Values in the projected potential.
    pub fn potential_len(&self) -> usize {
        self.height as usize * self.width as usize
    }

    /// [`cbed_len`](Self::cbed_len), or `None` if it overflows (a shape read
    /// from a damaged header).
    pub fn checked_cbed_len(&self) -> Option<usize> {
        (self.positions as usize).checked_mul(self.checked_potential_len()?)
    }

    /// [`potential_len`](Self::potential_len), or `None` if it overflows.
    pub fn checked_potential_len(&self) -> Option<usize> {
        (self.height as usize).checked_mul(self.width as usize)
    }
}

/// Stored element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// IEEE single precision.
    F32,
    /// IEEE half precision (values rounded to nearest).
    F16,
}

impl Precision {
    fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F16 => 2,
        }
    }
}

/// Payload compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Raw values.
    None,
    /// One zstd frame at this level.
    Zstd(i32),
}

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Sample shape.
    pub shape: ScatteringShape,
    /// Stored element type.
    pub precision: Precision,
    /// Whether the payload is zstd-compressed.
    pub compressed: bool,
    /// Payload bytes after the header.
    pub payload: u64,
}

/// Why a value is not a valid scattering sample, with the byte it concerns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {at}: {reason}")]
pub struct ScatteringError {
    /// Byte offset in the value.
    pub at: usize,
    /// What is wrong.
    pub reason: String,
}

fn error(at: usize, reason: impl Into<String>) -> ScatteringError {
    ScatteringError { at, reason: reason.into() }
}

/// Encode one sample. `cbed` and `potential` must have the shape's lengths.
pub fn encode(
    shape: ScatteringShape,
    cbed: &[f32],
    potential: &[f32],
    precision: Precision,
    compression: Compression,
) -> Result<Vec<u8>, ScatteringError> {
    if cbed.len() != shape.cbed_len() || potential.len() != shape.potential_len() {
        return Err(error(
            0,
            format!(
                "arrays of {} and {} values do not match shape {shape:?} ({} and {})",
                cbed.len(),
                potential.len(),
                shape.cbed_len(),
                shape.potential_len()
            ),
        ));
    }
    let mut raw = Vec::with_capacity((cbed.len() + potential.len()) * precision.bytes());
    for &v in cbed.iter().chain(potential) {
        match precision {
            Precision::F32 => raw.extend_from_slice(&v.to_le_bytes()),
            Precision::F16 => raw.extend_from_slice(&f16::from_f32(v).to_le_bytes()),
        }
    }
    let payload = match compression {
        Compression::None => raw,
        Compression::Zstd(level) => {
            zstd::bulk::compress(&raw, level).map_err(|e| error(HEADER_LEN, format!("zstd: {e}")))?
        }
    };
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.push(match precision {
        Precision::F32 => 0,
        Precision::F16 => 1,
    });
    out.push(u8::from(matches!(compression, Compression::Zstd(_))));
    out.push(0);
    for v in [shape.positions, shape.height, shape.width] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&(XxHash3_64::oneshot(&payload) as u32).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Read and check the header of `bytes`.
pub fn decode_header(bytes: &[u8]) -> Result<Header, ScatteringError> {
    if bytes.len() < HEADER_LEN {
        return Err(error(bytes.len(), format!("{} bytes, shorter than the {HEADER_LEN}-byte header", bytes.len())));
    }
    if &bytes[0..4] != MAGIC {
        return Err(error(0, "not a scattering sample (bad magic)"));
    }
    if bytes[4] != VERSION {
        return Err(error(4, format!("unknown version {}", bytes[4])));
    }
    let precision = match bytes[5] {
        0 => Precision::F32,
        1 => Precision::F16,
        other => return Err(error(5, format!("unknown precision code {other}"))),
    };
    let compressed = match bytes[6] {
        0 => false,
        1 => true,
        other => return Err(error(6, format!("unknown compression code {other}"))),
    };
    if bytes[7] != 0 {
        return Err(error(7, "reserved byte is not zero"));
    }
    let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let shape = ScatteringShape { positions: u32_at(8), height: u32_at(12), width: u32_at(16) };
    // Every length computed from the shape below and by callers must not
    // overflow: 4 bytes per value of the CBED stack and the potential.
    let fits = shape
        .checked_cbed_len()
        .zip(shape.checked_potential_len())
        .and_then(|(c, p)| c.checked_add(p))
        .and_then(|n| n.checked_mul(4));
    if fits.is_none() {
        return Err(error(8, format!("stored shape {shape:?} has more values than memory can hold")));
    }
    let mut payload = [0u8; 8];
    payload.copy_from_slice(&bytes[20..28]);
    let payload = u64::from_le_bytes(payload);
    if payload != (bytes.len() - HEADER_LEN) as u64 {
        return Err(error(20, format!("header says {payload} payload bytes, value has {}", bytes.len() - HEADER_LEN)));
    }
    if u32_at(28) != XxHash3_64::oneshot(&bytes[HEADER_LEN..]) as u32 {
        return Err(error(HEADER_LEN, "payload checksum does not match (damaged value)"));
    }
    Ok(Header { shape, precision, compressed, payload })
}

/// Decode `bytes` into `cbed` and `potential`, which must have the stored
/// shape's lengths; `scratch` holds the decompressed payload (reuse it).
pub fn decode_into(
    bytes: &[u8],
    cbed: &mut [f32],
    potential: &mut [f32],
    scratch: &mut Vec<u8>,
) -> Result<Header, ScatteringError> {
    let header = decode_header(bytes)?;
    let shape = header.shape;
    if cbed.len() != shape.cbed_len() || potential.len() != shape.potential_len() {
        return Err(error(
            8,
            format!("stored shape {shape:?} does not match the expected {} and {} values", cbed.len(), potential.len()),
        ));
    }
    let raw_len = (shape.cbed_len() + shape.potential_len()) * header.precision.bytes();
    let payload = &bytes[HEADER_LEN..];
    let raw: &[u8] = if header.compressed {
        scratch.clear();
        scratch.reserve(raw_len);
        // Decompress into at most `raw_len` bytes: a frame that claims more
        // is corrupt, and never allocates beyond what the shape needs.
        let mut decoder = zstd::bulk::Decompressor::new().map_err(|e| error(HEADER_LEN, format!("zstd: {e}")))?;
        let n = decoder
            .decompress_to_buffer(payload, scratch)
            .map_err(|e| error(HEADER_LEN, format!("zstd payload does not decompress: {e}")))?;
        &scratch[..n]
    } else {
        payload
    };
    if raw.len() != raw_len {
        return Err(error(HEADER_LEN, format!("payload holds {} bytes, shape {shape:?} needs {raw_len}", raw.len())));
    }
    let (raw_cbed, raw_potential) = raw.split_at(shape.cbed_len() * header.precision.bytes());
    convert(raw_cbed, cbed, header.precision);
    convert(raw_potential, potential, header.precision);
    Ok(header)
}

fn convert(raw: &[u8], out: &mut [f32], precision: Precision) {
    match precision {
        Precision::F32 => {
            for (o, b) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        Precision::F16 => {
            for (o, b) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = f16::from_le_bytes([b[0], b[1]]).to_f32();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SHAPE: ScatteringShape = ScatteringShape { positions: 3, height: 5, width: 7 };

    fn arrays() -> (Vec<f32>, Vec<f32>) {
        let cbed = (0..SHAPE.cbed_len()).map(|i| (i as f32 * 0.37).sin()).collect();
        let potential = (0..SHAPE.potential_len()).map(|i| i as f32 / 8.0).collect();
        (cbed, potential)
    }

    fn decode(bytes: &[u8]) -> Result<(Vec<f32>, Vec<f32>), ScatteringError> {
        let (mut c, mut p) = (vec![0.0; SHAPE.cbed_len()], vec![0.0; SHAPE.potential_len()]);
        decode_into(bytes, &mut c, &mut p, &mut Vec::new())?;
        Ok((c, p))
    }

    #[test]
    fn f32_round_trips_exactly_plain_and_compressed() {
        let (cbed, potential) = arrays();
        for compression in [Compression::None, Compression::Zstd(1), Compression::Zstd(19)] {
            let bytes = encode(SHAPE, &cbed, &potential, Precision::F32, compression).unwrap();
            assert_eq!(decode(&bytes).unwrap(), (cbed.clone(), potential.clone()));
        }
    }

    #[test]
    fn f16_round_trips_to_half_precision() {
        let (cbed, potential) = arrays();
        let bytes = encode(SHAPE, &cbed, &potential, Precision::F16, Compression::Zstd(3)).unwrap();
        let (c, p) = decode(&bytes).unwrap();
        for (a, b) in c.iter().chain(&p).zip(cbed.iter().chain(&potential)) {
            assert!((a - b).abs() <= b.abs() * 1e-3 + 1e-4, "{a} vs {b}");
        }
        assert_eq!(decode_header(&bytes).unwrap().precision, Precision::F16);
    }

    #[test]
    fn wrong_lengths_are_refused_on_encode_and_decode() {
        let (cbed, potential) = arrays();
        assert!(encode(SHAPE, &cbed[1..], &potential, Precision::F32, Compression::None).is_err());
        let bytes = encode(SHAPE, &cbed, &potential, Precision::F32, Compression::None).unwrap();
        let (mut c, mut p) = (vec![0.0; SHAPE.cbed_len() + 1], vec![0.0; SHAPE.potential_len()]);
        let e = decode_into(&bytes, &mut c, &mut p, &mut Vec::new()).unwrap_err();
        assert_eq!(e.at, 8);
    }

    #[test]
    fn bad_magic_version_and_codes_name_their_byte() {
        let (cbed, potential) = arrays();
        let good = encode(SHAPE, &cbed, &potential, Precision::F32, Compression::None).unwrap();
        for (at, value) in [(0, b'X'), (4, 9), (5, 7), (6, 4)] {
            let mut bad = good.clone();
            bad[at] = value;
            assert_eq!(decode(&bad).unwrap_err().at, at);
        }
    }

    #[test]
    fn a_header_shape_whose_value_count_overflows_is_an_error() {
        let (cbed, potential) = arrays();
        let mut bytes = encode(SHAPE, &cbed, &potential, Precision::F32, Compression::None).unwrap();
        for at in [8, 12, 16] {
            bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        let e = decode_header(&bytes).unwrap_err();
        assert_eq!(e.at, 8, "{e}");
    }

    #[test]
    fn corrupt_zstd_payload_is_an_error() {
        let (cbed, potential) = arrays();
        let mut bytes = encode(SHAPE, &cbed, &potential, Precision::F32, Compression::Zstd(3)).unwrap();
        // A payload that does not decompress, with a checksum that matches it.
        bytes[HEADER_LEN] ^= 0xff;
        let check = (XxHash3_64::oneshot(&bytes[HEADER_LEN..]) as u32).to_le_bytes();
        bytes[28..32].copy_from_slice(&check);
        let e = decode(&bytes).unwrap_err();
        assert!(e.reason.contains("decompress"), "{e}");
    }

    proptest! {
        #[test]
        fn every_truncation_is_an_error(cut in 0usize..(HEADER_LEN + 4 * 140), zstd in any::<bool>()) {
            let (cbed, potential) = arrays();
            let compression = if zstd { Compression::Zstd(3) } else { Compression::None };
            let bytes = encode(SHAPE, &cbed, &potential, Precision::F32, compression).unwrap();
            prop_assume!(cut < bytes.len());
            prop_assert!(decode(&bytes[..cut]).is_err());
        }

        #[test]
        fn any_byte_flip_is_an_error(at in 0usize..HEADER_LEN + 4 * 140, flip in 1u8..=255, zstd in any::<bool>()) {
            let (cbed, potential) = arrays();
            let compression = if zstd { Compression::Zstd(3) } else { Compression::None };
            let mut bytes = encode(SHAPE, &cbed, &potential, Precision::F32, compression).unwrap();
            prop_assume!(at < bytes.len());
            bytes[at] ^= flip;
            prop_assert!(decode(&bytes).is_err());
        }
    }
}
