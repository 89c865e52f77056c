//! Scattering samples: header and payload decoding on raw bytes and on
//! bytes whose header fields and payload check were made consistent (so
//! the fuzzer reaches the decompression and conversion). Output buffers are
//! sized from the header, as a loader sizes them, within a cap.

use formats::checksum::Checksum;
use formats::scattering::{HEADER_LEN, decode_header, decode_into};

/// Values a target allocates at most (a loader has the shape from the
/// dataset's schema, not from the value).
const CAP: usize = 1 << 20;

/// One input, as the fuzz target `scattering` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let Some((&mode, input)) = input.split_first() else { return };
    let mut bytes = input.to_vec();
    if mode % 2 == 1 && bytes.len() >= HEADER_LEN {
        bytes[..4].copy_from_slice(b"SHSC");
        bytes[4] = 1;
        bytes[5] %= 2;
        bytes[6] %= 2;
        bytes[7] = 0;
        let payload = (bytes.len() - HEADER_LEN) as u64;
        bytes[20..28].copy_from_slice(&payload.to_le_bytes());
        let check = Checksum::of(&bytes[HEADER_LEN..]).0 as u32;
        bytes[28..32].copy_from_slice(&check.to_le_bytes());
    }
    let Ok(header) = decode_header(&bytes) else { return };
    let (Some(cbed_len), Some(potential_len)) = (header.shape.checked_cbed_len(), header.shape.checked_potential_len())
    else {
        return;
    };
    if cbed_len > CAP || potential_len > CAP {
        return;
    }
    let (mut cbed, mut potential, mut scratch) = (vec![0f32; cbed_len], vec![0f32; potential_len], Vec::new());
    let _ = decode_into(&bytes, &mut cbed, &mut potential, &mut scratch);
}
