//! Figures of benches that run under criterion, read back from the
//! estimates criterion writes, so that their rows carry criterion's
//! medians rather than a second measurement.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Error;

/// Where criterion keeps its estimates for benches that pass it to
/// `Criterion::output_directory`: `$CARGO_TARGET_DIR/criterion`, or the
/// workspace's `target/criterion`.
pub fn criterion_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"), PathBuf::from);
    target.join("criterion")
}

#[derive(Deserialize)]
struct Estimates {
    median: Estimate,
}

#[derive(Deserialize)]
struct Estimate {
    point_estimate: f64,
}

/// The median time of one iteration of `group/function` in the latest run,
/// in seconds.
pub fn criterion_median_seconds(criterion_dir: &Path, group: &str, function: &str) -> Result<f64, Error> {
    let path = criterion_dir.join(group).join(function).join("new/estimates.json");
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io { path: path.clone(), source })?;
    let estimates: Estimates = serde_json::from_str(&text).map_err(|source| Error::Json { path, source })?;
    // criterion's estimates are in nanoseconds.
    Ok(estimates.median.point_estimate * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_read_from_criterions_estimates_in_seconds() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let estimates = dir.path().join("group/fn/new");
        std::fs::create_dir_all(&estimates)?;
        std::fs::write(
            estimates.join("estimates.json"),
            r#"{"mean":{"point_estimate":3.0e6},"median":{"point_estimate":2.5e6,"standard_error":1.0}}"#,
        )?;
        let seconds = criterion_median_seconds(dir.path(), "group", "fn")?;
        assert!((seconds - 2.5e-3).abs() < 1e-12, "{seconds}");
        Ok(())
    }

    #[test]
    fn a_missing_estimate_is_an_error_naming_the_file() {
        let err = criterion_median_seconds(Path::new("/nonexistent"), "g", "f").err().map(|e| e.to_string());
        assert!(err.as_deref().is_some_and(|e| e.contains("g/f/new/estimates.json")), "{err:?}");
    }
}
