//! Scattering samples: header and payload decoding on raw bytes and on
//! bytes whose header fields and payload check were made consistent (so
//! the fuzzer reaches the decompression and conversion). Output buffers are
//! sized from the header, as a loader sizes them, within a cap.
//!
//! The checks live in `fuzz_checks::scattering`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::scattering::check(input));
