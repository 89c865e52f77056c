//! Every input of every fuzz target's corpus (`fuzz/corpus/NAME`, what the
//! fuzzer kept as interesting, crashes turned regression tests included)
//! through the target's checks, in the ordinary test build. A failing
//! input is named with the target.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

#[test]
fn every_corpus_input_passes_its_targets_checks() {
    let corpora = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut failed = Vec::new();
    let mut inputs = 0;
    for (name, check) in fuzz_checks::TARGETS {
        let dir = corpora.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: an empty corpus", dir.display());
        for file in files {
            let input = std::fs::read(&file).unwrap();
            inputs += 1;
            if std::panic::catch_unwind(|| check(&input)).is_err() {
                failed.push(format!("{name}: {}", file.display()));
            }
        }
    }
    eprintln!("{inputs} corpus inputs of {} targets", fuzz_checks::TARGETS.len());
    assert!(failed.is_empty(), "inputs that fail their target's checks:\n{}", failed.join("\n"));
}
