//! Manifests: any bytes load as a manifest or fail with an error; a loaded
//! manifest validates or says why, and placement over a few nodes either
//! works or says why.
//!
//! The checks live in `fuzz_checks::manifest`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::manifest::check(input));
