//! What each fuzz target checks, one module per target, each a
//! `check(input)` that panics where a parser of untrusted bytes breaks
//! what it promises. The libFuzzer targets in `fuzz/fuzz_targets` call
//! these; `tests/corpora.rs` runs every input of every target's corpus
//! (`fuzz/corpus/NAME`) through them in the ordinary test build, so the
//! inputs the fuzzer found interesting stay regression tests without an
//! instrumented build. Exploring for new inputs is `bash fuzz/run.sh 600`.
//!
//! ```
//! fuzz_checks::npy::check(b"not a header");
//! ```
#![allow(clippy::expect_used)]

pub mod checkpoint;
pub mod cif;
pub mod cosmoflow;
pub mod example;
pub mod journal;
pub mod manifest;
pub mod npy;
pub mod options;
pub mod scattering;
pub mod tfrecord;
pub mod trace;

/// A target's checks of one input.
pub type Check = fn(&[u8]);

/// Every target by name, as `fuzz/corpus/NAME` names its corpus.
pub const TARGETS: [(&str, Check); 11] = [
    ("checkpoint", checkpoint::check),
    ("cif", cif::check),
    ("cosmoflow", cosmoflow::check),
    ("example", example::check),
    ("journal", journal::check),
    ("manifest", manifest::check),
    ("npy", npy::check),
    ("options", options::check),
    ("scattering", scattering::check),
    ("tfrecord", tfrecord::check),
    ("trace", trace::check),
];
