//! The JSON report of a staging run.

use stager::stage::{StageConfig, StageOutcome};

const GB: f64 = 1e9;

/// Figures a person (or a script) compares between runs.
pub fn build(outcome: &StageOutcome, config: &StageConfig, ranks: usize, nodes: usize) -> serde_json::Value {
    let sum = |f: fn(&stager::stage::RankStats) -> u64| outcome.ranks.iter().map(f).sum::<u64>();
    let max = |f: fn(&stager::stage::RankStats) -> f64| outcome.ranks.iter().map(f).fold(0.0, f64::max);
    let read = sum(|r| r.read_bytes);
    let moved = sum(|r| r.moved_bytes);
    let written = sum(|r| r.written_bytes);
    let (read_secs, write_secs, total_secs) = (max(|r| r.read_secs), max(|r| r.write_secs), max(|r| r.total_secs));
    let slowest = outcome
        .ranks
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_secs.total_cmp(&b.1.total_secs))
        .map(|(rank, r)| serde_json::json!({ "rank": rank, "seconds": r.total_secs }));
    let rate = |bytes: u64, secs: f64| if secs > 0.0 { bytes as f64 / GB / secs } else { 0.0 };
    serde_json::json!({
        "mode": if config.naive { "naive" } else { "staged" },
        "policy": config.policy.to_string(),
        "seed": config.seed,
        "ranks": ranks,
        "nodes": nodes,
        "files_needed": outcome.files_needed,
        "files_skipped_from_journal": outcome.files_skipped,
        "unique_bytes_needed": outcome.unique_bytes,
        "bytes_read_from_source": read,
        "bytes_moved_over_mpi": moved,
        "bytes_written": written,
        "read_amplification": if outcome.unique_bytes > 0 { read as f64 / outcome.unique_bytes as f64 } else { 0.0 },
        "seconds": { "read": read_secs, "write": write_secs, "total": total_secs },
        "gb_per_s": { "read": rate(read, read_secs), "write": rate(written, write_secs), "total": rate(written, total_secs) },
        "slowest_rank": slowest,
        "peak_rss_bytes_max_rank": outcome.ranks.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0),
        "max_inflight_bytes": config.max_inflight,
        "source_bandwidth_emulated": config.source_bandwidth,
    })
}
