//! `.npy` headers (the members of `.npz` archives): any bytes decode or
//! fail with an error, and a decoded header's data start lies within the
//! bytes it was decoded from.
//!
//! The checks live in `fuzz_checks::npy`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::npy::check(input));
