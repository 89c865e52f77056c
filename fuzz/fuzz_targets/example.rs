//! `tf.train.Example` decoding: any bytes decode or fail with an error,
//! and every feature of a decoded Example can be read by name and type.
//!
//! The checks live in `fuzz_checks::example`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::example::check(input));
