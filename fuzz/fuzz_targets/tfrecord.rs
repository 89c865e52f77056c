//! TFRecord framing: the header scan, the verified record walk and the
//! index built from them, on raw bytes and on bytes whose CRCs were made
//! right (so the fuzzer reaches past the checksums). On well-framed input
//! the scan, the walk and the index must agree record for record.
//!
//! The checks live in `fuzz_checks::tfrecord`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::tfrecord::check(input));
