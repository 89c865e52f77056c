//! CosmoFlow samples: the zero-copy view and the decoded sample, for a
//! shape taken from the first byte. A sample that decodes re-encodes to
//! bytes that decode to the same sample.
//!
//! The checks live in `fuzz_checks::cosmoflow`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::cosmoflow::check(input));
