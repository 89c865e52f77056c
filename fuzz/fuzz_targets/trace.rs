//! Simulator traces: any bytes decode or fail with an error; a decoded
//! trace encodes to bytes that decode and encode to the same bytes; and
//! rewriting address ids in place fails exactly where decoding fails, and
//! otherwise equals renumbering the decoded trace.
//!
//! The checks live in `fuzz_checks::trace`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::trace::check(input));
