//! The CosmoFlow sample of MLPerf HPC (`mlcommons/hpc`, `cosmoflow/prepare.py`):
//! a `tf.train.Example` with `x` = one byte string of little-endian int16
//! particle counts, shape (D, D, D, C) in C order, and `y` = 4 float32 target
//! parameters in [-1, 1]. Generic in D and C.
//!
//! [`CosmoSampleView`] parses a record without copying the 16 MiB of `x`: the
//! loader's hot path. [`CosmoSample`] is the owned form for writers.

use prost::Message;

use crate::example::{Example, ExampleError};

/// Number of target parameters (Omega_M, sigma_8, n_s and h).
pub const TARGETS: usize = 4;

/// The target parameters' names, in the order of `y`: the MLPerf HPC data's
/// Ω_m, σ_8, n_s and H_0 (as h = H_0 / 100 km/s/Mpc).
pub const TARGET_NAMES: [&str; TARGETS] = ["omega_m", "sigma_8", "n_s", "h"];

/// Spatial size D and channel count C of a sample of shape (D, D, D, C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CosmoShape {
    /// Cube edge D, in voxels.
    pub size: usize,
    /// Channels C (redshifts).
    pub channels: usize,
}

impl CosmoShape {
    /// The MLPerf HPC shape: (128, 128, 128, 4).
    pub const MLPERF: CosmoShape = CosmoShape { size: 128, channels: 4 };

    /// D^3 * C.
    pub fn voxels(&self) -> usize {
        self.size * self.size * self.size * self.channels
    }

    /// Bytes of `x`.
    pub fn x_bytes(&self) -> usize {
        self.voxels() * 2
    }

    /// (D, D, D, C).
    pub fn dims(&self) -> [usize; 4] {
        [self.size, self.size, self.size, self.channels]
    }
}

/// A record that is not a valid CosmoFlow sample of the expected shape.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CosmoError {
    /// Not a well-formed Example.
    #[error(transparent)]
    Example(#[from] ExampleError),
    /// Protobuf wire format broken at this byte of the record.
    #[error("malformed protobuf at byte {at} of the record: {reason}")]
    Wire {
        /// Byte position within the record payload.
        at: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A feature is absent.
    #[error("feature {0:?} is missing")]
    Missing(&'static str),
    /// `x` has the wrong size for the expected shape.
    #[error("feature \"x\" holds {got} bytes, expected {expected} for shape {dims:?} int16")]
    XSize {
        /// Bytes found.
        got: usize,
        /// Bytes expected.
        expected: usize,
        /// Expected (D, D, D, C).
        dims: [usize; 4],
    },
    /// `y` does not hold exactly 4 values.
    #[error("feature \"y\" holds {0} floats, expected 4")]
    YLen(usize),
    /// Constructor given data of the wrong size.
    #[error("sample data holds {got} voxels, expected {expected}")]
    DataLen {
        /// Voxels given.
        got: usize,
        /// Voxels expected.
        expected: usize,
    },
}

/// An owned CosmoFlow sample.
#[derive(Debug, Clone, PartialEq)]
pub struct CosmoSample {
    shape: CosmoShape,
    x: Vec<i16>,
    y: [f32; TARGETS],
}

impl CosmoSample {
    /// A sample of `shape` with counts `x` (C order, channel fastest) and targets `y`.
    pub fn new(shape: CosmoShape, x: Vec<i16>, y: [f32; TARGETS]) -> Result<Self, CosmoError> {
        if x.len() != shape.voxels() {
            return Err(CosmoError::DataLen { got: x.len(), expected: shape.voxels() });
        }
        Ok(CosmoSample { shape, x, y })
    }

    /// Shape.
    pub fn shape(&self) -> CosmoShape {
        self.shape
    }

    /// Particle counts.
    pub fn x(&self) -> &[i16] {
        &self.x
    }

    /// Targets.
    pub fn y(&self) -> [f32; TARGETS] {
        self.y
    }

    /// Encode as `tf.train.Example` protobuf bytes (one TFRecord payload).
    pub fn to_example_bytes(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(self.x.len() * 2);
        for v in &self.x {
            raw.extend_from_slice(&v.to_le_bytes());
        }
        Example::new().with_bytes("x", vec![raw]).with_floats("y", self.y.to_vec()).encode_to_vec()
    }

    /// Decode and check against the expected shape.
    pub fn from_example_bytes(bytes: &[u8], shape: CosmoShape) -> Result<Self, CosmoError> {
        let view = CosmoSampleView::parse(bytes, shape)?;
        Ok(CosmoSample { shape, x: view.x_values().collect(), y: view.y })
    }
}

/// A CosmoFlow sample borrowed from a record: `x` stays in the file's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CosmoSampleView<'a> {
    /// Raw little-endian int16 bytes of `x`.
    pub x: &'a [u8],
    /// The targets.
    pub y: [f32; TARGETS],
}

impl<'a> CosmoSampleView<'a> {
    /// Parse an Example's wire bytes, finding `x` and `y` without copying.
    pub fn parse(bytes: &'a [u8], shape: CosmoShape) -> Result<Self, CosmoError> {
        let mut x = None;
        let mut y = None;
        for field in Wire::new(bytes, 0) {
            let (number, value, at) = field?;
            let (1, WireValue::Len(features)) = (number, value) else {
                continue;
            };
            for entry in Wire::new(features, at) {
                let (number, value, at) = entry?;
                let (1, WireValue::Len(entry)) = (number, value) else {
                    continue;
                };
                let (key, feature, feature_at) = map_entry(entry, at)?;
                match key {
                    b"x" => x = Some(single_bytes(feature, feature_at)?),
                    b"y" => y = Some(floats(feature, feature_at)?),
                    _ => {}
                }
            }
        }
        let x = x.ok_or(CosmoError::Missing("x"))?;
        let y = y.ok_or(CosmoError::Missing("y"))?;
        if x.len() != shape.x_bytes() {
            return Err(CosmoError::XSize { got: x.len(), expected: shape.x_bytes(), dims: shape.dims() });
        }
        Ok(CosmoSampleView { x, y })
    }

    /// The counts as int16 values.
    pub fn x_values(&self) -> impl Iterator<Item = i16> + 'a {
        self.x.chunks_exact(2).map(|pair| i16::from_le_bytes([pair[0], pair[1]]))
    }
}

fn map_entry(entry: &[u8], base: usize) -> Result<(&[u8], &[u8], usize), CosmoError> {
    let mut key: &[u8] = &[];
    let mut value: (&[u8], usize) = (&[], base);
    for field in Wire::new(entry, base) {
        match field? {
            (1, WireValue::Len(k), _) => key = k,
            (2, WireValue::Len(v), at) => value = (v, at),
            _ => {}
        }
    }
    Ok((key, value.0, value.1))
}

/// The single byte string of a `Feature { bytes_list }`.
fn single_bytes(feature: &[u8], base: usize) -> Result<&[u8], CosmoError> {
    let mut found = None;
    for field in Wire::new(feature, base) {
        if let (1, WireValue::Len(list), at) = field? {
            for item in Wire::new(list, at) {
                if let (1, WireValue::Len(value), _) = item? {
                    if found.is_some() {
                        return Err(CosmoError::Example(ExampleError::WrongKind {
                            name: "x".into(),
                            expected: "bytes_list with one element",
                        }));
                    }
                    found = Some(value);
                }
            }
        } else {
            return Err(CosmoError::Example(ExampleError::WrongKind { name: "x".into(), expected: "bytes_list" }));
        }
    }
    found.ok_or(CosmoError::Missing("x"))
}

/// The 4 values of a `Feature { float_list }`, packed or not.
fn floats(feature: &[u8], base: usize) -> Result<[f32; TARGETS], CosmoError> {
    let mut values = Vec::with_capacity(TARGETS);
    for field in Wire::new(feature, base) {
        let (2, WireValue::Len(list), at) = field? else {
            return Err(CosmoError::Example(ExampleError::WrongKind { name: "y".into(), expected: "float_list" }));
        };
        for item in Wire::new(list, at) {
            match item? {
                (1, WireValue::Len(packed), at) => {
                    if packed.len() % 4 != 0 {
                        return Err(CosmoError::Wire { at, reason: "packed floats not a multiple of 4 bytes" });
                    }
                    values.extend(packed.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])));
                }
                (1, WireValue::Fixed32(bits), _) => values.push(f32::from_bits(bits)),
                _ => {}
            }
        }
    }
    <[f32; TARGETS]>::try_from(values.as_slice()).map_err(|_| CosmoError::YLen(values.len()))
}

#[derive(Debug, Clone, Copy)]
enum WireValue<'a> {
    Varint,
    Fixed64,
    Len(&'a [u8]),
    Fixed32(u32),
}

/// A protobuf wire-format field walker over a slice. `base` is the slice's
/// position in the record, so errors point at the record byte.
struct Wire<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: usize,
    failed: bool,
}

impl<'a> Wire<'a> {
    fn new(bytes: &'a [u8], base: usize) -> Self {
        Wire { bytes, pos: 0, base, failed: false }
    }

    fn varint(&mut self) -> Result<u64, CosmoError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(self.error("truncated varint"));
            };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.error("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: u64) -> Result<&'a [u8], CosmoError> {
        let end = (self.pos as u64)
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len() as u64)
            .ok_or_else(|| self.error("field runs past the end of its message"))?;
        let slice = &self.bytes[self.pos..end as usize];
        self.pos = end as usize;
        Ok(slice)
    }

    fn error(&self, reason: &'static str) -> CosmoError {
        CosmoError::Wire { at: self.base + self.pos, reason }
    }

    fn field(&mut self) -> Result<(u64, WireValue<'a>, usize), CosmoError> {
        let key = self.varint()?;
        let number = key >> 3;
        let value = match key & 7 {
            0 => {
                self.varint()?;
                WireValue::Varint
            }
            1 => {
                self.take(8)?;
                WireValue::Fixed64
            }
            2 => {
                let len = self.varint()?;
                let at = self.pos;
                let slice = self.take(len)?;
                return Ok((number, WireValue::Len(slice), self.base + at));
            }
            5 => {
                let b = self.take(4)?;
                WireValue::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            _ => return Err(self.error("unsupported wire type")),
        };
        Ok((number, value, self.base + self.pos))
    }
}

impl<'a> Iterator for Wire<'a> {
    type Item = Result<(u64, WireValue<'a>, usize), CosmoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.bytes.len() {
            return None;
        }
        let item = self.field();
        self.failed = item.is_err();
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(shape: CosmoShape) -> CosmoSample {
        let x = (0..shape.voxels()).map(|i| (i as i16).wrapping_mul(31)).collect();
        CosmoSample::new(shape, x, [0.5, -1.0, 0.25, 1.0]).unwrap()
    }

    #[test]
    fn sample_round_trips_for_several_shapes() {
        for shape in [
            CosmoShape { size: 1, channels: 1 },
            CosmoShape { size: 4, channels: 4 },
            CosmoShape { size: 8, channels: 2 },
        ] {
            let s = sample(shape);
            let bytes = s.to_example_bytes();
            assert_eq!(CosmoSample::from_example_bytes(&bytes, shape).unwrap(), s);
        }
    }

    #[test]
    fn view_agrees_with_prost_decoding() {
        let s = sample(CosmoShape { size: 4, channels: 4 });
        let bytes = s.to_example_bytes();
        let ex = Example::decode_bytes(&bytes).unwrap();
        let view = CosmoSampleView::parse(&bytes, s.shape()).unwrap();
        assert_eq!(view.x, &ex.bytes("x").unwrap()[0][..]);
        assert_eq!(&view.y[..], ex.floats("y").unwrap());
    }

    #[test]
    fn unpacked_floats_are_accepted() {
        // Feature{float_list: FloatList{value: [1,2,3,4]}} written unpacked (wire type 5).
        let mut list = Vec::new();
        for v in [1.0f32, 2.0, 3.0, 4.0] {
            list.push(0x0d);
            list.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(floats(&[&[0x12, list.len() as u8][..], &list].concat(), 0).unwrap(), [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn wrong_shape_is_named() {
        let s = sample(CosmoShape { size: 4, channels: 4 });
        let err =
            CosmoSample::from_example_bytes(&s.to_example_bytes(), CosmoShape { size: 8, channels: 4 }).unwrap_err();
        assert!(err.to_string().contains("[8, 8, 8, 4]"), "{err}");
    }

    #[test]
    fn missing_features_are_named() {
        let bytes = Example::new().with_floats("y", vec![0.0; 4]).encode_to_vec();
        let err = CosmoSampleView::parse(&bytes, CosmoShape { size: 1, channels: 1 }).unwrap_err();
        assert!(err.to_string().contains("\"x\""), "{err}");
        let bytes = Example::new().with_bytes("x", vec![vec![0, 0]]).encode_to_vec();
        let err = CosmoSampleView::parse(&bytes, CosmoShape { size: 1, channels: 1 }).unwrap_err();
        assert!(err.to_string().contains("\"y\""), "{err}");
    }

    #[test]
    fn every_truncation_of_a_record_is_an_error_not_a_panic() {
        let shape = CosmoShape { size: 2, channels: 1 };
        let bytes = sample(shape).to_example_bytes();
        for cut in 0..bytes.len() {
            assert!(CosmoSampleView::parse(&bytes[..cut], shape).is_err(), "cut at {cut} accepted");
        }
    }
}
