//! `.npy` headers (the members of `.npz` archives): any bytes decode or
//! fail with an error, and a decoded header's data start lies within the
//! bytes it was decoded from.
#![no_main]

use formats::npy::NpyHeader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if let Ok(header) = NpyHeader::decode(input) {
        assert!(header.data_offset <= input.len());
        assert!(header.element > 0);
        let _ = header.data_len();
    }
});
