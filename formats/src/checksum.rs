//! xxh3-64 checksums: the hash every manifest row carries.
//!
//! Stored as 16 lower-case hex digits so JSON readers without 64-bit integers
//! keep every bit.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::hash::Hasher as _;

use twox_hash::XxHash3_64;

/// Size of the reads used when hashing a file: large enough to amortise the
/// syscall, small enough to stay in L2 while hashing.
pub const HASH_BUFFER_BYTES: usize = 1 << 20;

/// An xxh3-64 digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Checksum(pub u64);

impl Checksum {
    /// Digest of a byte slice.
    pub fn of(bytes: &[u8]) -> Self {
        Checksum(XxHash3_64::oneshot(bytes))
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Checksum({self})")
    }
}

/// A checksum string that is not 16 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("invalid xxh3 checksum {0:?}: expected 16 hex digits")]
pub struct ParseChecksumError(String);

impl FromStr for Checksum {
    type Err = ParseChecksumError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 16 {
            return Err(ParseChecksumError(s.to_owned()));
        }
        u64::from_str_radix(s, 16).map(Checksum).map_err(|_| ParseChecksumError(s.to_owned()))
    }
}

impl Serialize for Checksum {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Checksum {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Streaming hasher that also counts bytes, for hashing while copying.
#[derive(Clone, Default)]
pub struct StreamingChecksum {
    hasher: XxHash3_64,
    bytes: u64,
}

impl StreamingChecksum {
    /// A fresh hasher.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.write(bytes);
        self.bytes += bytes.len() as u64;
    }

    /// Bytes fed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The digest of everything fed so far.
    pub fn finish(&self) -> Checksum {
        Checksum(self.hasher.finish())
    }
}

/// Hash everything a reader yields; returns (bytes, digest).
pub fn hash_reader(mut reader: impl Read, buffer: &mut Vec<u8>) -> io::Result<(u64, Checksum)> {
    buffer.resize(HASH_BUFFER_BYTES, 0);
    let mut state = StreamingChecksum::new();
    loop {
        let n = match reader.read(buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        state.update(&buffer[..n]);
    }
    Ok((state.bytes(), state.finish()))
}

/// Hash a file with streaming reads; returns (bytes, digest).
pub fn hash_file(path: &Path, buffer: &mut Vec<u8>) -> io::Result<(u64, Checksum)> {
    hash_reader(crate::regular::open_regular(path)?, buffer)
}

/// Hash a file through a populated memory map: no copy out of the page
/// cache, so about twice as fast as [`hash_file`] on node-local storage and
/// tmpfs. Use [`hash_file`] on Lustre/GPFS, and wherever the file might be
/// truncated while it is hashed (a mapping would fault).
#[allow(unsafe_code)]
pub fn hash_file_mapped(path: &Path) -> io::Result<(u64, Checksum)> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok((0, Checksum::of(&[])));
    }
    // SAFETY: read-only map; callers use this only on files nobody modifies
    // while they are hashed (see the doc comment).
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file)? };
    Ok((len, Checksum::of(&map)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_round_trips_through_hex_and_json() {
        let sum = Checksum(0x0123_4567_89ab_cdef);
        assert_eq!(sum.to_string(), "0123456789abcdef");
        let json = serde_json::to_string(&sum).unwrap();
        assert_eq!(json, "\"0123456789abcdef\"");
        assert_eq!(serde_json::from_str::<Checksum>(&json).unwrap(), sum);
    }

    #[test]
    fn malformed_checksum_text_is_rejected() {
        assert!("xyz".parse::<Checksum>().is_err());
        assert!("0123456789abcdeg".parse::<Checksum>().is_err());
    }

    /// Manifests store these digests: any change of hash implementation
    /// must keep them (values from xxhash-rust 0.8 and the reference C
    /// xxHash, `XXH3_64bits` with seed 0).
    #[test]
    fn digests_equal_the_reference_xxh3_64_values() {
        let pattern: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(Checksum::of(b"").to_string(), "2d06800538d394c2");
        assert_eq!(Checksum::of(b"stagehand").to_string(), "b72154ae105619a3");
        assert_eq!(Checksum::of(&pattern).to_string(), "8cf647b0a14f596a");
        let mut streamed = StreamingChecksum::new();
        for piece in pattern.chunks(12_345) {
            streamed.update(piece);
        }
        assert_eq!(streamed.finish().to_string(), "8cf647b0a14f596a");
    }

    #[test]
    fn streaming_digest_equals_one_shot_digest() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut buffer = Vec::new();
        let (n, sum) = hash_reader(&data[..], &mut buffer).unwrap();
        assert_eq!(n, data.len() as u64);
        assert_eq!(sum, Checksum::of(&data));
    }
}
