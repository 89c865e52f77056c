//! What users type: placement policies, sizes, rates, read methods and
//! destination templates parse or fail with an error, and a parsed policy
//! prints as text that parses back to it.
//!
//! The checks live in `fuzz_checks::options`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::options::check(input));
