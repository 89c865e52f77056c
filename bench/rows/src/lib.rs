//! The rows of `docs/benchmarks.md`, written by the benches themselves.
//!
//! A bench ends by handing its figures to [`record`]. That prints them as
//! Markdown table rows, stamps each with this machine and today's date,
//! replaces the bench's earlier rows of the same ids in
//! `bench/results/<bench>.json`, and renders the bench's table in
//! `docs/benchmarks.md` again from that file. The page's tables are
//! therefore never typed by hand; a test checks that they are exactly what
//! the results files render ([`render_page`]).
//!
//! ```no_run
//! use bench_rows::{record, Row};
//! let (ours, theirs) = (0.053, 0.032);
//! let rows = [Row::new("cosmoflow-step", format!("CosmoFlow step: {ours:.3} s"))
//!     .peer(format!("TensorFlow: {theirs:.3} s"))
//!     .ratio(format!("{:.2}×", ours / theirs))
//!     .target("≤ 0.9×", Some(ours / theirs <= 0.9))];
//! record("step", "cargo bench -p stagehand-trainer --bench step", &rows)?;
//! # Ok::<(), bench_rows::Error>(())
//! ```
//!
//! This crate depends on nothing of ours, so every crate's benches can use
//! it without a dependency cycle (the formats crate is below everything).

mod criterion_estimates;
mod error;
mod machine;
mod page;
mod results;
mod settings;

use std::path::{Path, PathBuf};

pub use criterion_estimates::{criterion_dir, criterion_median_seconds};
pub use error::Error;
pub use machine::machine_label;
pub use page::{render_page, render_table};
pub use results::{BenchResults, Row, Target};
pub use settings::{count, repetitions};

/// `bench/results/` of this checkout: one JSON file per bench.
pub fn results_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

/// `docs/benchmarks.md` of this checkout.
pub fn page_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/benchmarks.md")
}

/// Records a bench's rows: prints them, stamps them with this machine and
/// today's date, merges them into `bench/results/<bench>.json` (a row
/// replaces the stored row of the same id; rows this run did not measure
/// stay), and renders the bench's table in `docs/benchmarks.md` again.
pub fn record(bench: &str, command: &str, rows: &[Row]) -> Result<(), Error> {
    let stamp = Stamp::now();
    let rows: Vec<Row> = rows.iter().map(|row| stamp.apply(row.clone())).collect();
    println!("\nrows for docs/benchmarks.md ({bench}):");
    for row in &rows {
        println!("{}", page::render_row(row));
    }
    record_in(&results_dir(), &page_path(), bench, command, &rows)?;
    println!("recorded in bench/results/{bench}.json and docs/benchmarks.md");
    Ok(())
}

/// [`record`] with explicit places and rows already stamped.
fn record_in(results_dir: &Path, page: &Path, bench: &str, command: &str, rows: &[Row]) -> Result<(), Error> {
    let path = results_dir.join(format!("{bench}.json"));
    let mut results = if path.exists() { BenchResults::read(&path)? } else { BenchResults::new(bench) };
    results.command = command.to_owned();
    results.merge(rows);
    // The page is checked before anything is written, so a page without the
    // bench's table leaves both files as they were.
    let text = std::fs::read_to_string(page).map_err(|source| Error::Io { path: page.to_owned(), source })?;
    let updated = page::replace_table(&text, &results, page)?;
    results.write(&path)?;
    std::fs::write(page, updated).map_err(|source| Error::Io { path: page.to_owned(), source })
}

/// Every bench's stored results, in file-name order.
pub fn read_all(results_dir: &Path) -> Result<Vec<BenchResults>, Error> {
    let entries =
        std::fs::read_dir(results_dir).map_err(|source| Error::Io { path: results_dir.to_owned(), source })?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry.map_err(|source| Error::Io { path: results_dir.to_owned(), source })?.path();
        if path.extension().is_some_and(|ext| ext == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    paths.iter().map(|path| BenchResults::read(path)).collect()
}

/// The machine and date a run's rows are stamped with.
struct Stamp {
    machine: String,
    date: String,
}

impl Stamp {
    fn now() -> Self {
        Stamp { machine: machine_label(), date: time::OffsetDateTime::now_utc().date().to_string() }
    }

    fn apply(&self, mut row: Row) -> Row {
        row.machine = self.machine.clone();
        row.date = self.date.clone();
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(id: &str, figure: &str) -> Row {
        let mut row = Row::new(id, figure);
        row.machine = "m".into();
        row.date = "d".into();
        row
    }

    #[test]
    fn recording_updates_the_results_file_and_the_table_and_keeps_unmeasured_rows()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let page = dir.path().join("benchmarks.md");
        std::fs::write(&page, "prose\n<!-- bench: step -->\n<!-- /bench: step -->\nmore\n")?;
        record_in(dir.path(), &page, "step", "cmd 1", &[stamped("a", "1 s"), stamped("b", "2 s")])?;
        record_in(dir.path(), &page, "step", "cmd 2", &[stamped("a", "0.5 s")])?;
        let results = BenchResults::read(&dir.path().join("step.json"))?;
        let figures: Vec<&str> = results.rows.iter().map(|r| r.figure.as_str()).collect();
        assert_eq!((results.command.as_str(), figures), ("cmd 2", vec!["0.5 s", "2 s"]));
        let text = std::fs::read_to_string(&page)?;
        assert_eq!(text, format!("prose\n{}\nmore\n", render_table(&results)));
        Ok(())
    }

    #[test]
    fn a_page_without_the_benchs_table_leaves_both_files_as_they_were() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let page = dir.path().join("benchmarks.md");
        std::fs::write(&page, "no tables\n")?;
        let result = record_in(dir.path(), &page, "step", "cmd", &[stamped("a", "1 s")]);
        assert!(matches!(result, Err(Error::MissingTable { .. })), "{result:?}");
        assert!(!dir.path().join("step.json").exists());
        assert_eq!(std::fs::read_to_string(&page)?, "no tables\n");
        Ok(())
    }
}
