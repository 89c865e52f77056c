//! The stager's journal: any bytes (torn lines, random bytes, names cut
//! inside a UTF-8 character) parse into entries plus a count of skipped
//! lines; the entries written back parse to the same entries.
//!
//! The checks live in `fuzz_checks::journal`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::journal::check(input));
