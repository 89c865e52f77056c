use std::path::PathBuf;

/// What can go wrong while recording rows or rendering the page.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a results file or the page failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A results file is not the JSON this crate writes.
    #[error("{}: not a bench results file: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// The page has no table for a bench that has results.
    #[error(
        "{}: no table for bench `{bench}`; add the lines `<!-- bench: {bench} -->` and `<!-- /bench: {bench} -->` where it belongs",
        page.display()
    )]
    MissingTable {
        /// The page.
        page: PathBuf,
        /// The bench.
        bench: String,
    },
    /// The page has a table for a bench without results.
    #[error("{}: the table of bench `{bench}` has no results file bench/results/{bench}.json", page.display())]
    NoResults {
        /// The page.
        page: PathBuf,
        /// The bench.
        bench: String,
    },
    /// A bench has more than one table in the page.
    #[error("{}: the table of bench `{bench}` appears {count} times; a page has one table per bench", page.display())]
    Repeated {
        /// The page.
        page: PathBuf,
        /// The bench whose table repeats.
        bench: String,
        /// How many tables it has.
        count: usize,
    },
    /// A table's opening marker has no closing one.
    #[error("{}: `<!-- bench: {bench} -->` is not closed by `<!-- /bench: {bench} -->`", page.display())]
    Unclosed {
        /// The page.
        page: PathBuf,
        /// The bench.
        bench: String,
    },
}
