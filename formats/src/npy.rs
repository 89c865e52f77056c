//! The header of a NumPy `.npy` array (the format of each member of an
//! `.npz` archive): magic, version, and the dictionary that gives the
//! element type, the memory order and the shape. Decoding does no I/O; the
//! caller hands over the first bytes of the array.
//!
//! Format: NumPy Enhancement Proposal 1 ("A simple file format for NumPy
//! arrays") and `numpy/lib/format.py`: `\x93NUMPY`, major and minor
//! version, the header's length (2 bytes little-endian in version 1, 4 in
//! versions 2 and 3), then a Python dict literal padded with spaces and
//! ended by `\n`; the data follow at the header's end.
//!
//! Written by hand because `ndarray-npy` keeps its header parser private,
//! and `py_literal` (what it parses with) brings a PEG parser generator and
//! big integers for a dict of three keys whose shape NumPy's writer fixes.
//!
//! ```
//! use formats::npy::NpyHeader;
//! let dict = b"{'descr': '|u1', 'fortran_order': False, 'shape': (4, 4, 2), }";
//! let mut file = b"\x93NUMPY\x01\x00".to_vec();
//! file.extend_from_slice(&((dict.len() + 1) as u16).to_le_bytes());
//! file.extend_from_slice(dict);
//! file.push(b'\n');
//! let header = NpyHeader::decode(&file).unwrap();
//! assert_eq!((header.shape.as_slice(), header.element, header.data_offset), (&[4, 4, 2][..], 1, file.len()));
//! ```

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Longest header accepted (NumPy itself refuses more than 10,000 bytes of
/// dict unless told otherwise).
pub const MAX_HEADER: usize = 65_536;

/// Why bytes are not an `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    /// Fewer bytes than the header needs.
    #[error("the .npy header is cut short: {needed} bytes needed, {have} present")]
    Short {
        /// Bytes the header needs.
        needed: usize,
        /// Bytes given.
        have: usize,
    },
    /// The first six bytes are not `\x93NUMPY`.
    #[error("not a .npy array (no \\x93NUMPY magic)")]
    Magic,
    /// A version other than 1.0, 2.0 or 3.0.
    #[error(".npy version {major}.{minor}: versions 1.0, 2.0 and 3.0 are read")]
    Version {
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The dict is longer than [`MAX_HEADER`].
    #[error(".npy header of {0} bytes (at most {MAX_HEADER} are read)")]
    TooLong(usize),
    /// The dict does not parse, or lacks a key.
    #[error(".npy header dict: {0}")]
    Dict(String),
    /// An element type other than booleans, integers, floats and complex
    /// numbers of fixed size (structured and object arrays are not samples).
    #[error(".npy element type {0:?}: only fixed-size numbers are read")]
    Descr(String),
}

/// What an `.npy` header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// NumPy's type string, e.g. `|u1` or `<f4`.
    pub descr: String,
    /// Bytes per element.
    pub element: usize,
    /// True if the array is stored column-major.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
    /// Where the data start, from the first byte of the `.npy` array.
    pub data_offset: usize,
}

impl NpyHeader {
    /// Decode the header at the start of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<NpyHeader, NpyError> {
        let short = |needed: usize| NpyError::Short { needed, have: bytes.len() };
        if bytes.len() < 8 {
            return Err(short(8));
        }
        if &bytes[..6] != MAGIC {
            return Err(NpyError::Magic);
        }
        let (major, minor) = (bytes[6], bytes[7]);
        let (len, start) = match (major, minor) {
            (1, 0) => {
                let b = bytes.get(8..10).ok_or_else(|| short(10))?;
                (usize::from(u16::from_le_bytes([b[0], b[1]])), 10)
            }
            (2, 0) | (3, 0) => {
                let b = bytes.get(8..12).ok_or_else(|| short(12))?;
                (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
            }
            _ => return Err(NpyError::Version { major, minor }),
        };
        if len > MAX_HEADER {
            return Err(NpyError::TooLong(len));
        }
        let end = start + len;
        let dict = bytes.get(start..end).ok_or_else(|| short(end))?;
        let dict = std::str::from_utf8(dict).map_err(|_| NpyError::Dict("not UTF-8".into()))?;
        let dict = dict.strip_suffix('\n').ok_or_else(|| NpyError::Dict("not ended by a newline".into()))?;
        let (descr, fortran_order, shape) = parse_dict(dict)?;
        let element = element_size(&descr)?;
        Ok(NpyHeader { descr, element, fortran_order, shape, data_offset: end })
    }

    /// Elements in the array.
    pub fn elements(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
    }

    /// Bytes of data the header announces.
    pub fn data_len(&self) -> Option<usize> {
        self.elements()?.checked_mul(self.element)
    }
}

/// Bytes per element of a fixed-size numeric type string (`<f4`, `|u1`,
/// `>i8`, `?`, `|b1`, `<c16`).
fn element_size(descr: &str) -> Result<usize, NpyError> {
    let bad = || NpyError::Descr(descr.to_owned());
    let body = descr.strip_prefix(['<', '>', '|', '=']).unwrap_or(descr);
    if body == "?" {
        return Ok(1);
    }
    let mut chars = body.chars();
    let kind = chars.next().ok_or_else(bad)?;
    let size: usize = chars.as_str().parse().map_err(|_| bad())?;
    let valid = match kind {
        'b' | 'u' | 'i' => matches!(size, 1 | 2 | 4 | 8),
        'f' => matches!(size, 2 | 4 | 8 | 16),
        'c' => matches!(size, 8 | 16 | 32),
        _ => false,
    };
    if valid { Ok(size) } else { Err(bad()) }
}

/// A cursor over the dict literal NumPy writes: `{'key': value, ...}`.
struct Literal<'a> {
    rest: &'a str,
}

impl<'a> Literal<'a> {
    fn error(&self, what: &str) -> NpyError {
        let near: String = self.rest.chars().take(20).collect();
        NpyError::Dict(format!("expected {what} at {near:?}"))
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    /// Consume `token` (after spaces) if it is next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_space();
        match self.rest.strip_prefix(token) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), NpyError> {
        if self.eat(token) { Ok(()) } else { Err(self.error(&format!("{token:?}"))) }
    }

    /// A quoted string without escapes (NumPy's keys and type strings).
    fn string(&mut self) -> Result<&'a str, NpyError> {
        self.skip_space();
        let quote =
            self.rest.chars().next().filter(|c| *c == '\'' || *c == '"').ok_or_else(|| self.error("a string"))?;
        let body = &self.rest[1..];
        let end = body.find(quote).ok_or_else(|| self.error("the string's closing quote"))?;
        let value = &body[..end];
        if value.contains('\\') {
            return Err(self.error("a string without escapes"));
        }
        self.rest = &body[end + 1..];
        Ok(value)
    }

    fn boolean(&mut self) -> Result<bool, NpyError> {
        if self.eat("True") {
            Ok(true)
        } else if self.eat("False") {
            Ok(false)
        } else {
            Err(self.error("True or False"))
        }
    }

    fn integer(&mut self) -> Result<usize, NpyError> {
        self.skip_space();
        let digits = self.rest.bytes().take_while(u8::is_ascii_digit).count();
        let value = self.rest[..digits].parse().map_err(|_| self.error("a dimension"))?;
        self.rest = &self.rest[digits..];
        // Python 2 era writers marked longs with `L`.
        self.eat("L");
        Ok(value)
    }

    /// `()`, `(n,)` or `(n, m, ...)`.
    fn shape(&mut self) -> Result<Vec<usize>, NpyError> {
        self.expect("(")?;
        let mut dims = Vec::new();
        loop {
            if self.eat(")") {
                return Ok(dims);
            }
            dims.push(self.integer()?);
            if !self.eat(",") {
                self.expect(")")?;
                return Ok(dims);
            }
        }
    }
}

fn parse_dict(text: &str) -> Result<(String, bool, Vec<usize>), NpyError> {
    let mut literal = Literal { rest: text };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    literal.expect("{")?;
    loop {
        if literal.eat("}") {
            break;
        }
        let key = literal.string()?;
        literal.expect(":")?;
        match key {
            "descr" => descr = Some(literal.string()?.to_owned()),
            "fortran_order" => fortran = Some(literal.boolean()?),
            "shape" => shape = Some(literal.shape()?),
            other => return Err(NpyError::Dict(format!("unknown key {other:?}"))),
        }
        if !literal.eat(",") {
            literal.expect("}")?;
            break;
        }
    }
    literal.skip_space();
    if !literal.rest.is_empty() {
        return Err(literal.error("the end of the header"));
    }
    let missing = |key: &str| NpyError::Dict(format!("no {key:?} key"));
    Ok((
        descr.ok_or_else(|| missing("descr"))?,
        fortran.ok_or_else(|| missing("fortran_order"))?,
        shape.ok_or_else(|| missing("shape"))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(version: u8, dict: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[version, 0]);
        let len = dict.len() + 1;
        if version == 1 {
            out.extend_from_slice(&(len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.push(b'\n');
        out
    }

    #[test]
    fn the_header_numpy_writes_gives_type_order_shape_and_data_offset() {
        // What `np.save` writes for np.zeros((64, 64, 3), np.uint8), padded.
        let dict = "{'descr': '|u1', 'fortran_order': False, 'shape': (64, 64, 3), }          ";
        let bytes = file(1, dict);
        let header = NpyHeader::decode(&bytes).unwrap();
        assert_eq!(header.descr, "|u1");
        assert_eq!(header.element, 1);
        assert!(!header.fortran_order);
        assert_eq!(header.shape, vec![64, 64, 3]);
        assert_eq!(header.data_offset, bytes.len());
        assert_eq!(header.data_len(), Some(64 * 64 * 3));
    }

    #[test]
    fn versions_two_and_three_have_four_byte_lengths() {
        for version in [2, 3] {
            let bytes = file(version, "{'descr': '<f8', 'fortran_order': True, 'shape': (5,), }");
            let header = NpyHeader::decode(&bytes).unwrap();
            assert_eq!((header.element, header.fortran_order, header.shape), (8, true, vec![5]));
            assert_eq!(header.data_offset, bytes.len());
        }
    }

    #[test]
    fn a_scalar_has_an_empty_shape() {
        let header = NpyHeader::decode(&file(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }")).unwrap();
        assert_eq!((header.shape.len(), header.elements()), (0, Some(1)));
    }

    #[test]
    fn damaged_headers_are_refused_with_the_reason() {
        let good = file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
        assert!(matches!(NpyHeader::decode(&good[..20]), Err(NpyError::Short { .. })));
        assert!(matches!(NpyHeader::decode(b"\x93NUMPX\x01\x00\x00\x00"), Err(NpyError::Magic)));
        let mut v4 = good.clone();
        v4[6] = 4;
        assert!(matches!(NpyHeader::decode(&v4), Err(NpyError::Version { major: 4, minor: 0 })));
        for dict in [
            "{'descr': '<f4', 'shape': (2, 3), }",
            "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } trailing",
        ] {
            assert!(NpyHeader::decode(&file(1, dict)).is_err(), "{dict}");
        }
        let mut unterminated = good;
        let last = unterminated.len() - 1;
        unterminated[last] = b' ';
        assert!(matches!(NpyHeader::decode(&unterminated), Err(NpyError::Dict(_))));
    }

    #[test]
    fn every_fixed_size_number_type_has_its_size() {
        for (descr, size) in [("|b1", 1), ("?", 1), ("<u2", 2), (">i8", 8), ("<f2", 2), ("=f4", 4), ("<c16", 16)] {
            assert_eq!(element_size(descr), Ok(size), "{descr}");
        }
        for descr in ["<U10", "|S4", "<f3", "<i", "", "|V8", "<M8"] {
            assert!(element_size(descr).is_err(), "{descr}");
        }
    }
}
