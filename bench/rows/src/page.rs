//! The bench tables of `docs/benchmarks.md`. Each sits between
//! `<!-- bench: NAME -->` and `<!-- /bench: NAME -->` lines and is
//! rendered whole from `bench/results/NAME.json`; everything outside those
//! lines (headings, conditions, what limits a figure) is prose written by
//! hand.

use std::path::Path;

use crate::{BenchResults, Error, Row};

const HEADER: &str = "| figure | peer | ratio | target | machine, date |\n|---|---|---|---|---|\n";

/// One row as a Markdown table line.
pub(crate) fn render_row(row: &Row) -> String {
    let missed = row.target.as_ref().is_some_and(|t| t.met == Some(false));
    let ratio = match (&row.ratio, missed) {
        (Some(ratio), true) => format!("**{ratio}**"),
        (Some(ratio), false) => ratio.clone(),
        (None, _) => "—".to_owned(),
    };
    let target = match &row.target {
        Some(target) => match target.met {
            Some(true) => format!("{}: met", target.text),
            Some(false) => format!("{}: **not met**", target.text),
            None => target.text.clone(),
        },
        None => "—".to_owned(),
    };
    let cells = [
        cell(&row.figure),
        row.peer.as_deref().map_or_else(|| "—".to_owned(), cell),
        cell(&ratio),
        cell(&target),
        cell(&format!("{}, {}", row.machine, row.date)),
    ];
    format!("| {} |", cells.join(" | "))
}

/// A `|` inside a cell would end it.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// A bench's table with its markers: the command, then the rows.
pub fn render_table(results: &BenchResults) -> String {
    let mut out = format!("{}\n`{}`\n\n{HEADER}", open(&results.bench), results.command);
    for row in &results.rows {
        out.push_str(&render_row(row));
        out.push('\n');
    }
    out.push_str(&close(&results.bench));
    out
}

fn open(bench: &str) -> String {
    format!("<!-- bench: {bench} -->")
}

fn close(bench: &str) -> String {
    format!("<!-- /bench: {bench} -->")
}

/// Where a bench's table is: the byte range from its opening marker to the
/// end of its closing one.
fn table_range(text: &str, bench: &str, page: &Path) -> Result<Option<(usize, usize)>, Error> {
    let opening = format!("{}\n", open(bench));
    let Some(start) = find_line(text, &opening) else {
        return Ok(None);
    };
    let closing = close(bench);
    match text[start..].find(&closing) {
        Some(offset) => Ok(Some((start, start + offset + closing.len()))),
        None => Err(Error::Unclosed { page: page.to_owned(), bench: bench.to_owned() }),
    }
}

/// The offset of `line` where it starts a line of `text`.
fn find_line(text: &str, line: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(offset) = text[from..].find(line) {
        let at = from + offset;
        if at == 0 || text.as_bytes()[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The page with one bench's table rendered again.
pub(crate) fn replace_table(text: &str, results: &BenchResults, page: &Path) -> Result<String, Error> {
    let Some((start, end)) = table_range(text, &results.bench, page)? else {
        return Err(Error::MissingTable { page: page.to_owned(), bench: results.bench.clone() });
    };
    Ok(format!("{}{}{}", &text[..start], render_table(results), &text[end..]))
}

/// The page with every bench table rendered from `all`. Fails if a bench
/// with results has no table in the page, or a table has no results, or
/// a bench has two tables (only the first would be kept current).
pub fn render_page(text: &str, all: &[BenchResults], page: &Path) -> Result<String, Error> {
    let tables = tables_in(text);
    for bench in &tables {
        let count = tables.iter().filter(|other| *other == bench).count();
        if count > 1 {
            return Err(Error::Repeated { page: page.to_owned(), bench: bench.clone(), count });
        }
    }
    let mut out = text.to_owned();
    for results in all {
        out = replace_table(&out, results, page)?;
    }
    for bench in tables_in(text) {
        if !all.iter().any(|results| results.bench == bench) {
            return Err(Error::NoResults { page: page.to_owned(), bench });
        }
    }
    Ok(out)
}

/// The benches whose tables the page has.
fn tables_in(text: &str) -> Vec<String> {
    text.lines().filter_map(|line| line.strip_prefix("<!-- bench: ")?.strip_suffix(" -->")).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> BenchResults {
        let mut results = BenchResults::new("step");
        results.command = "cargo bench --bench step".into();
        let mut row =
            Row::new("a", "step: 0.053 s").peer("TensorFlow: 0.032 s").ratio("1.62×").target("≤ 0.9×", Some(false));
        row.machine = "AMD EPYC (25/17, AVX-512)".into();
        row.date = "2026-11-25".into();
        results.merge(&[row]);
        results
    }

    const PAGE: &str = "# Benchmarks\n\nprose\n\n<!-- bench: step -->\nold\n<!-- /bench: step -->\n\nmore prose\n";

    #[test]
    fn a_page_with_a_bench_table_twice_is_an_error_naming_it() {
        let twice = format!("{PAGE}\n{PAGE}");
        let err = render_page(&twice, &[results()], Path::new("docs/benchmarks.md")).unwrap_err();
        assert!(matches!(&err, Error::Repeated { bench, count: 2, .. } if bench == "step"), "{err}");
    }

    #[test]
    fn a_missed_target_shows_in_bold_in_ratio_and_target() {
        assert_eq!(
            render_row(&results().rows[0]),
            "| step: 0.053 s | TensorFlow: 0.032 s | **1.62×** | ≤ 0.9×: **not met** | AMD EPYC (25/17, AVX-512), 2026-11-25 |"
        );
    }

    #[test]
    fn a_pipe_in_a_figure_does_not_split_the_cell_and_empty_cells_are_dashes() {
        let mut row = Row::new("a", "x | y");
        row.machine = "m".into();
        row.date = "d".into();
        assert_eq!(render_row(&row), "| x \\| y | — | — | — | m, d |");
    }

    #[test]
    fn the_table_between_the_markers_is_rendered_and_the_prose_around_it_stays() -> Result<(), Error> {
        let page = render_page(PAGE, &[results()], Path::new("page.md"))?;
        assert!(
            page.starts_with("# Benchmarks\n\nprose\n\n<!-- bench: step -->\n`cargo bench --bench step`\n\n| figure |")
        );
        assert!(page.ends_with("2026-11-25 |\n<!-- /bench: step -->\n\nmore prose\n"));
        assert!(!page.contains("old"));
        // Rendering again changes nothing.
        assert_eq!(render_page(&page, &[results()], Path::new("page.md"))?, page);
        Ok(())
    }

    #[test]
    fn results_without_a_table_and_a_table_without_results_are_errors() {
        let mut other = results();
        other.bench = "ops".into();
        let missing = render_page(PAGE, &[results(), other], Path::new("page.md"));
        assert!(matches!(missing, Err(Error::MissingTable { bench, .. }) if bench == "ops"));
        let orphan = render_page(PAGE, &[], Path::new("page.md"));
        assert!(matches!(orphan, Err(Error::NoResults { bench, .. }) if bench == "step"));
    }

    #[test]
    fn an_unclosed_table_is_an_error() {
        let page = "<!-- bench: step -->\nrows\n";
        let result = render_page(page, &[results()], Path::new("page.md"));
        assert!(matches!(result, Err(Error::Unclosed { .. })));
    }

    #[test]
    fn a_marker_inside_a_line_is_not_a_table() {
        let page = "see `<!-- bench: step -->\n` in prose\n";
        let result = render_page(page, &[results()], Path::new("page.md"));
        assert!(matches!(result, Err(Error::MissingTable { .. })));
    }
}
