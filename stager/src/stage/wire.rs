//! What goes over MPI for one chunk: a head (file, offset, length, flags)
//! with `TAG_HEAD`, then the chunk's bytes alone with `TAG_BODY` from the
//! same sender (MPI keeps a sender's messages to one receiver in order). The
//! body is a message of its own so it can be sent straight from a memory map
//! of the source file, and received into the start of a page-aligned buffer.
//!
//! Small files travel instead in packs (`TAG_PACK`): whole files, each a
//! head followed by its bytes, back to back in one message. A message costs
//! a handshake and a few system calls whatever its size; one per file of a
//! few KiB made those the cost of staging such a dataset. Only whole files
//! are packed, so a pack never has to be ordered against a file's other
//! chunks.

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

/// Files packed for one receiver: `(head, bytes)` records back to back.
#[derive(Debug, Default)]
pub(super) struct Pack {
    bytes: Vec<u8>,
    files: usize,
}

impl Pack {
    /// Append a whole file (`head.offset == 0`, `head.last`) and its bytes.
    pub(super) fn push(&mut self, head: Head, body: &[u8]) {
        debug_assert!(head.offset == 0 && head.last && head.len == body.len());
        self.bytes.extend_from_slice(&head.encode());
        self.bytes.extend_from_slice(body);
        self.files += 1;
    }

    /// Bytes the pack holds, heads included.
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.files == 0
    }

    /// The message to send.
    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Empty it, keeping its memory.
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.files = 0;
    }
}

/// The records of a received pack, or `Err` with the offset of the first
/// malformed one: a head that does not decode, is not a whole file, or
/// announces more bytes than follow.
pub(super) fn unpack(message: &[u8]) -> Result<Vec<(Head, &[u8])>, usize> {
    let mut records = Vec::new();
    let mut at = 0;
    while at < message.len() {
        let head = message.get(at..at + HEAD_LEN).and_then(Head::decode).ok_or(at)?;
        if head.offset != 0 || !head.last {
            return Err(at);
        }
        let body = message.get(at + HEAD_LEN..).and_then(|rest| rest.get(..head.len)).ok_or(at)?;
        records.push((head, body));
        at += HEAD_LEN + head.len;
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(file: usize, len: usize) -> Head {
        Head { file, offset: 0, len, last: true }
    }

    #[test]
    fn packs_round_trip() {
        let mut pack = Pack::default();
        assert!(pack.is_empty() && unpack(pack.as_bytes()).unwrap().is_empty());
        let files: Vec<(Head, Vec<u8>)> = (0..5).map(|f| (whole(f * 7, f * 100), vec![f as u8; f * 100])).collect();
        for (head, body) in &files {
            pack.push(*head, body);
        }
        assert_eq!(pack.len(), files.iter().map(|(h, _)| HEAD_LEN + h.len).sum::<usize>());
        let records = unpack(pack.as_bytes()).unwrap();
        assert_eq!(records.len(), files.len());
        for ((head, body), (want_head, want_body)) in records.iter().zip(&files) {
            assert_eq!((head, *body), (want_head, want_body.as_slice()));
        }
        pack.clear();
        assert!(pack.is_empty() && pack.as_bytes().is_empty());
    }

    #[test]
    fn malformed_packs_are_refused_at_the_bad_record() {
        let mut pack = Pack::default();
        pack.push(whole(1, 10), &[1; 10]);
        pack.push(whole(2, 20), &[2; 20]);
        let bytes = pack.as_bytes();
        let second = HEAD_LEN + 10;
        assert_eq!(unpack(&bytes[..bytes.len() - 1]), Err(second), "cut short");
        assert_eq!(unpack(&bytes[..second + 3]), Err(second), "head cut short");
        let mut partial = bytes.to_vec();
        partial[second + 8] = 1; // offset 1: not a whole file
        assert_eq!(unpack(&partial), Err(second));
        let mut not_last = bytes.to_vec();
        not_last[24] = 0;
        assert_eq!(unpack(&not_last), Err(0));
        let mut huge = bytes.to_vec();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(unpack(&huge).is_err());
    }

    /// Any bytes at all: records or an error, never a panic, and the
    /// records never reach past the message.
    #[test]
    fn unpacking_arbitrary_bytes_never_panics() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..400 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    if rng.is_multiple_of(3) { 0 } else { rng as u8 }
                })
                .collect();
            if let Ok(records) = unpack(&bytes) {
                assert_eq!(records.iter().map(|(h, _)| HEAD_LEN + h.len).sum::<usize>(), bytes.len());
            }
        }
    }

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
