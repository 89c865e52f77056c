//! What goes over MPI for one chunk: a head (file, offset, length, flags)
//! with `TAG_HEAD`, then the chunk's bytes alone with `TAG_BODY` from the
//! same sender (MPI keeps a sender's messages to one receiver in order). The
//! body is a message of its own so it can be sent straight from a memory map
//! of the source file, and received into the start of a page-aligned buffer.

/// Bytes of a head.
pub(super) const HEAD_LEN: usize = 32;
const LAST: u64 = 1;

/// Which bytes of which file a body holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    /// Index of the file in the manifest.
    pub(super) file: usize,
    /// Offset of the body in the file.
    pub(super) offset: u64,
    /// Bytes of the body.
    pub(super) len: usize,
    /// The file's last chunk.
    pub(super) last: bool,
}

impl Head {
    pub(super) fn encode(&self) -> [u8; HEAD_LEN] {
        let mut bytes = [0u8; HEAD_LEN];
        let fields = [self.file as u64, self.offset, self.len as u64, if self.last { LAST } else { 0 }];
        for (slot, value) in bytes.chunks_exact_mut(8).zip(fields) {
            slot.copy_from_slice(&value.to_le_bytes());
        }
        bytes
    }

    /// `None` unless `bytes` is a head this version writes.
    pub(super) fn decode(bytes: &[u8]) -> Option<Head> {
        if bytes.len() != HEAD_LEN {
            return None;
        }
        let mut fields = bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
        let (file, offset, len, flags) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        if flags & !LAST != 0 {
            return None;
        }
        Some(Head {
            file: usize::try_from(file).ok()?,
            offset,
            len: usize::try_from(len).ok()?,
            last: flags & LAST != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_round_trips() {
        for head in [
            Head { file: 0, offset: 0, len: 0, last: true },
            Head { file: 41, offset: 3 << 33, len: 8 << 20, last: false },
        ] {
            assert_eq!(Head::decode(&head.encode()), Some(head));
        }
    }

    #[test]
    fn malformed_heads_are_refused() {
        let good = Head { file: 1, offset: 2, len: 3, last: false }.encode();
        assert_eq!(Head::decode(&good[..HEAD_LEN - 1]), None);
        assert_eq!(Head::decode(&[good.as_slice(), &[0]].concat()), None);
        let mut unknown_flag = good;
        unknown_flag[24] = 2;
        assert_eq!(Head::decode(&unknown_flag), None);
    }
}
