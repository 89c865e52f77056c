//! Simulator traces: any bytes decode or fail with an error; a decoded
//! trace encodes to bytes that decode and encode to the same bytes.
#![no_main]

use formats::lmdb::trace_codec::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok(trace) = decode(input) else { return };
    let _ = trace.trace_type();
    let mut once = Vec::new();
    encode(&trace, &mut once);
    let again = decode(&once).expect("an encoded trace decodes");
    let mut twice = Vec::new();
    encode(&again, &mut twice);
    assert_eq!(once, twice);
});
