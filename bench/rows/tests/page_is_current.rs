//! `docs/benchmarks.md`'s tables are exactly what `bench/results/` renders:
//! nobody edits a figure by hand, and no bench's results are missing from
//! the page. `STAGEHAND_UPDATE_DOCS=1` renders the page again instead
//! (after a results file was fixed by hand, say).

use bench_rows::{page_path, read_all, render_page, results_dir};

#[test]
fn every_bench_table_in_the_page_is_rendered_from_its_results_file() -> Result<(), Box<dyn std::error::Error>> {
    let page = page_path();
    let text = std::fs::read_to_string(&page)?;
    let all = read_all(&results_dir())?;
    assert!(!all.is_empty(), "bench/results/ has no results files");
    let rendered = render_page(&text, &all, &page)?;
    if std::env::var_os("STAGEHAND_UPDATE_DOCS").is_some() {
        std::fs::write(&page, &rendered)?;
        println!("rewrote {}", page.display());
        return Ok(());
    }
    if rendered != text {
        let first_difference = text
            .lines()
            .zip(rendered.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "at the end".to_owned(), |line| format!("at line {}", line + 1));
        panic!(
            "docs/benchmarks.md differs from what bench/results/ renders ({first_difference}); \
             tables are written by the benches (bench_rows::record), or run this test with \
             STAGEHAND_UPDATE_DOCS=1 after changing a results file"
        );
    }
    Ok(())
}
