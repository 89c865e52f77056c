//! Tests that cannot run on this machine say so where CI shows it: a line
//! on stderr (written past the test harness's capture, so it shows in
//! every run's output) and a line in the file [`SKIP_LOG_ENV`] names,
//! which `make test` sets and counts at its end. A skip never passes
//! silently.

use std::io::Write as _;

/// The variable naming the file every skip is appended to.
pub const SKIP_LOG_ENV: &str = "STAGEHAND_SKIP_LOG";

/// Record that `test` was skipped and `why`; the caller then returns.
pub fn skip(test: &str, why: &str) {
    let line = format!("{test}: {why}");
    let _ = writeln!(std::io::stderr(), "SKIPPED {line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        // One write of one line with O_APPEND: lines of tests running at
        // once in several processes do not interleave.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut log| log.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            let _ = writeln!(std::io::stderr(), "could not record the skip in {}: {e}", path.to_string_lossy());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Each skip is one line of the log, however many tests skip at once.
    #[test]
    fn skips_from_many_threads_are_whole_lines_of_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skipped.log");
        // SAFETY of the test: no other test of this binary reads the variable.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(SKIP_LOG_ENV, &log);
        }
        std::thread::scope(|s| {
            for t in 0..8 {
                s.spawn(move || skip(&format!("test_{t}"), "no such hardware here"));
            }
        });
        let text = std::fs::read_to_string(&log).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines.len(), 8);
        assert!(lines.iter().all(|l| l.starts_with("test_") && l.ends_with(": no such hardware here")), "{lines:?}");
    }
}
