//! Checkpoints: the bytes of `state.json` and the four array files (split
//! at 0xFF bytes, which JSON never holds) decode or fail with an error. In
//! the odd mode the target first makes the state's checksums match the
//! arrays, so the fuzzer reaches the length checks behind them.
//!
//! The checks live in `fuzz_checks::checkpoint`, which the workspace's tests also
//! run on this target's corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| fuzz_checks::checkpoint::check(input));
