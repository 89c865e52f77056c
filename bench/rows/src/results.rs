use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;

/// One row of a bench's table: a figure of ours, the peer measured in the
/// same run, their ratio and the target it is held to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Stable name of the row within its bench; a later run's row of the
    /// same id replaces it.
    pub id: String,
    /// What was measured and our figure.
    pub figure: String,
    /// The peer and its figure, if there is a peer.
    pub peer: Option<String>,
    /// Ours against the peer, as the bench words it (`2.69×`, `80 %`).
    pub ratio: Option<String>,
    /// The target, if the issue that asked for the bench set one.
    pub target: Option<Target>,
    /// The machine that measured it ([`crate::machine_label`]); stamped by
    /// [`crate::record`].
    pub machine: String,
    /// The day it was measured, `YYYY-MM-DD`; stamped by [`crate::record`].
    pub date: String,
}

/// A row's target and whether the figure meets it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The target as written (`≤ 1.5×`, `< 2 %`).
    pub text: String,
    /// Whether it is met; `None` for a target that is a reference rather
    /// than a threshold (the paper's figure, say).
    pub met: Option<bool>,
}

impl Row {
    /// A row with a figure and nothing else yet.
    pub fn new(id: impl Into<String>, figure: impl Into<String>) -> Self {
        Row {
            id: id.into(),
            figure: figure.into(),
            peer: None,
            ratio: None,
            target: None,
            machine: String::new(),
            date: String::new(),
        }
    }

    /// The peer and its figure.
    pub fn peer(mut self, peer: impl Into<String>) -> Self {
        self.peer = Some(peer.into());
        self
    }

    /// Ours against the peer.
    pub fn ratio(mut self, ratio: impl Into<String>) -> Self {
        self.ratio = Some(ratio.into());
        self
    }

    /// The target and whether it is met (`None`: a reference, not a threshold).
    pub fn target(mut self, text: impl Into<String>, met: Option<bool>) -> Self {
        self.target = Some(Target { text: text.into(), met });
        self
    }

    /// Our time over the peer's, `ratio` (shown as `0.84×`), held to at
    /// most `limit` (`≤ 0.9×`): how every model's step row compares.
    pub fn time_ratio_at_most(self, ratio: f64, limit: f64) -> Self {
        self.ratio(format!("{ratio:.2}×")).target(format!("≤ {limit:.1}×"), Some(ratio <= limit))
    }
}

/// What one bench has recorded: the command that reproduces it and its
/// rows, in the order the page shows them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// The bench's name (`cargo bench --bench NAME`), also the file's name.
    pub bench: String,
    /// The command that measured the rows.
    pub command: String,
    /// The rows.
    pub rows: Vec<Row>,
}

impl BenchResults {
    /// No rows yet.
    pub fn new(bench: &str) -> Self {
        BenchResults { bench: bench.to_owned(), command: String::new(), rows: Vec::new() }
    }

    /// Reads a results file.
    pub fn read(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        serde_json::from_str(&text).map_err(|source| Error::Json { path: path.to_owned(), source })
    }

    /// Writes the results file, pretty-printed so that `git diff` shows
    /// which figures changed.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let mut text =
            serde_json::to_string_pretty(self).map_err(|source| Error::Json { path: path.to_owned(), source })?;
        text.push('\n');
        std::fs::write(path, text).map_err(|source| Error::Io { path: path.to_owned(), source })
    }

    /// Replaces each stored row that has the id of a new one, in place, and
    /// appends new rows with ids not seen before.
    pub fn merge(&mut self, rows: &[Row]) {
        for row in rows {
            match self.rows.iter_mut().find(|stored| stored.id == row.id) {
                Some(stored) => *stored = row.clone(),
                None => self.rows.push(row.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, figure: &str) -> Row {
        Row::new(id, figure)
    }

    #[test]
    fn a_time_ratio_is_met_at_or_under_its_limit_and_shown_as_the_page_writes_it() {
        let under = row("a", "x").time_ratio_at_most(0.844, 0.9);
        assert_eq!(under.ratio.as_deref(), Some("0.84×"));
        let target = under.target.unwrap();
        assert_eq!((target.text.as_str(), target.met), ("≤ 0.9×", Some(true)));
        let over = row("b", "y").time_ratio_at_most(1.01, 1.0).target.unwrap();
        assert_eq!((over.text.as_str(), over.met), ("≤ 1.0×", Some(false)));
    }

    #[test]
    fn a_new_row_replaces_the_stored_row_of_its_id_in_place_and_others_stay() {
        let mut results = BenchResults::new("step");
        results.merge(&[row("a", "1 s"), row("b", "2 s"), row("c", "3 s")]);
        results.merge(&[row("b", "1.5 s"), row("d", "4 s")]);
        let figures: Vec<&str> = results.rows.iter().map(|r| r.figure.as_str()).collect();
        assert_eq!(figures, ["1 s", "1.5 s", "3 s", "4 s"]);
    }

    #[test]
    fn results_survive_a_write_and_read() -> Result<(), Error> {
        let dir = tempfile::tempdir().map_err(|source| Error::Io { path: "tmp".into(), source })?;
        let path = dir.path().join("step.json");
        let mut results = BenchResults::new("step");
        results.command = "cargo bench --bench step".into();
        results.merge(&[row("a", "1 s").peer("TensorFlow: 2 s").ratio("0.5×").target("≤ 0.9×", Some(true))]);
        results.write(&path)?;
        assert_eq!(BenchResults::read(&path)?, results);
        Ok(())
    }

    #[test]
    fn a_file_that_is_not_results_is_an_error_naming_it() {
        let dir = tempfile::tempdir();
        let Ok(dir) = dir else { panic!("no temporary directory") };
        let path = dir.path().join("bad.json");
        assert!(std::fs::write(&path, "{\"bench\": 3}").is_ok());
        let err = BenchResults::read(&path).err().map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains("bad.json")), "{err:?}");
    }
}
