//! `.npy` headers (the members of `.npz` archives): any bytes decode or
//! fail with an error, and a decoded header's data start lies within the
//! bytes it was decoded from.

use formats::npy::NpyHeader;

/// One input, as the fuzz target `npy` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    if let Ok(header) = NpyHeader::decode(input) {
        assert!(header.data_offset <= input.len());
        assert!(header.element > 0);
        let _ = header.data_len();
    }
}
