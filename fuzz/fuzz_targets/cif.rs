//! CIF text: any bytes parse or fail with an error naming a line inside
//! the text; a parsed structure has finite numbers and at least one
//! symmetry operation.
//!
//! The checks live in `fuzz_checks::cif`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::cif::check(input));
