//! `make bench` promises to rewrite every table of `docs/benchmarks.md`:
//! every bench command the page shows must be one the Makefile's `bench`
//! target runs, or that table silently goes stale.

use std::collections::BTreeSet;

use bench_rows::page_path;

/// The `(package, bench)` pairs of every `cargo bench -p P --bench B` in `text`.
fn bench_commands(text: &str) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == '`').filter(|w| !w.is_empty()).collect();
        for (i, word) in words.iter().enumerate() {
            let after_cargo = i > 0 && matches!(words[i - 1], "cargo" | "$(CARGO)");
            if *word != "bench" || !after_cargo {
                continue;
            }
            let after = &words[i + 1..];
            let value_of = |flag: &str| after.iter().position(|w| *w == flag).and_then(|p| after.get(p + 1));
            if let (Some(package), Some(bench)) = (value_of("-p"), value_of("--bench")) {
                found.insert(((*package).to_owned(), (*bench).to_owned()));
            }
        }
    }
    found
}

/// The recipe lines of the Makefile's `bench` target.
fn bench_recipe(makefile: &str) -> String {
    makefile
        .lines()
        .skip_while(|line| !line.starts_with("bench:"))
        .skip(1)
        .take_while(|line| line.starts_with('\t'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_command_parser_finds_both_spellings() {
    let text =
        "`STAGEHAND_BENCH_REPS=5 cargo bench -p stagehand-trainer --bench step`\n\t$(CARGO) bench -p a --bench b";
    let found = bench_commands(text);
    assert!(found.contains(&("stagehand-trainer".to_owned(), "step".to_owned())));
    assert!(found.contains(&("a".to_owned(), "b".to_owned())));
    assert_eq!(found.len(), 2);
}

#[test]
fn every_bench_the_page_shows_is_run_by_make_bench() -> Result<(), Box<dyn std::error::Error>> {
    let page = page_path();
    let makefile_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Makefile");
    let shown = bench_commands(&std::fs::read_to_string(&page)?);
    assert!(shown.len() > 10, "found only {} bench commands in {}", shown.len(), page.display());
    let run = bench_commands(&bench_recipe(&std::fs::read_to_string(&makefile_path)?));
    let missing: Vec<String> = shown.difference(&run).map(|(p, b)| format!("-p {p} --bench {b}")).collect();
    assert!(
        missing.is_empty(),
        "docs/benchmarks.md shows benches that `make bench` does not run: {}",
        missing.join(", ")
    );
    Ok(())
}
