//! Planning benchmark: `node_needs` and `Plan::build_from`, what
//! `stager plan` computes (and every rank of `stager stage` before any data
//! moves, from the same needs as lists), for the
//! seeds' file counts and machine sizes, each case in a fresh process so
//! its peak RSS is its own. Sizes are drawn around the seeds' file sizes
//! (not equal: equal sizes hide the rebalancing's cost): DeepCAM's HDF5
//! samples, 768 x 1152 x 16 f32 plus labels, about 60 MB each with little
//! spread; CosmoFlow's gzipped 128³ x 4 TFRecords, about 2 MiB each with a
//! wide spread.
//!
//! ```sh
//! cargo bench -p stagehand-stager --bench plan
//! ```
//!
//! `STAGEHAND_BENCH_REPS` (default 3) runs of each case; the median time
//! and the largest peak RSS are reported.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Instant;

use bench_rows::Row;
use formats::placement::Policy;
use stager::plan::{Plan, node_needs};

const CASE_ENV: &str = "STAGEHAND_PLAN_BENCH_CASE";

/// (id, files, nodes, ranks per node, policy, typical file size in bytes, log-normal spread)
const CASES: [(&str, usize, usize, usize, &str, f64, f64); 6] = [
    ("plan-100k-16x4-replicate", 100_000, 16, 4, "replicate", 60e6, 0.02),
    ("plan-100k-16x4-per-node", 100_000, 16, 4, "per-node=25000", 60e6, 0.02),
    ("plan-100k-16x4-shard", 100_000, 16, 4, "shard", 60e6, 0.02),
    ("plan-1m-4608x6-shard", 1_000_000, 4608, 6, "shard", 2.0 * 1048576.0, 0.25),
    ("plan-1m-4608x6-per-node", 1_000_000, 4608, 6, "per-node=1500", 2.0 * 1048576.0, 0.25),
    ("plan-1m-4608x6-replicate", 1_000_000, 4608, 6, "replicate", 2.0 * 1048576.0, 0.25),
];

/// One case in this process: plan it, print seconds and peak RSS as JSON.
fn run_case(id: &str) {
    let &(_, files, nodes, per_node, policy, typical, spread) = CASES.iter().find(|c| c.0 == id).unwrap();
    let sizes = stager::simulate::file_sizes(files, typical as u64, spread, 0);
    let policy: Policy = policy.parse().unwrap();
    let node_of_rank: Vec<usize> = (0..nodes * per_node).map(|r| r / per_node).collect();
    let started = Instant::now();
    let needs = node_needs(&sizes, &vec![None; files], nodes, policy, 0).unwrap();
    let plan = Plan::build_from(&sizes, needs, &node_of_rank).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let loads = plan.read_bytes_per_rank();
    let mean = loads.iter().sum::<u64>() as f64 / loads.len() as f64;
    let worst = *loads.iter().max().unwrap() as f64 / mean;
    println!(
        "{{\"seconds\": {seconds}, \"peak_rss\": {}, \"worst_over_mean\": {worst}}}",
        cluster::memory::peak_rss_bytes()
    );
}

fn main() {
    if let Ok(id) = std::env::var(CASE_ENV) {
        run_case(&id);
        return;
    }
    let reps = bench_rows::repetitions(3);
    let exe = std::env::current_exe().unwrap();
    let mut table = Vec::new();
    for &(id, files, nodes, per_node, policy, _, _) in &CASES {
        let mut runs: Vec<serde_json::Value> = (0..reps)
            .map(|_| {
                let out = Command::new(&exe).env(CASE_ENV, id).output().unwrap();
                assert!(out.status.success(), "{id}: {}", String::from_utf8_lossy(&out.stderr));
                serde_json::from_slice(&out.stdout).unwrap()
            })
            .collect();
        runs.sort_by(|a, b| a["seconds"].as_f64().unwrap().total_cmp(&b["seconds"].as_f64().unwrap()));
        let seconds = runs[reps / 2]["seconds"].as_f64().unwrap();
        let rss = runs.iter().map(|r| r["peak_rss"].as_u64().unwrap()).max().unwrap() as f64 / (1u64 << 30) as f64;
        let worst = runs[0]["worst_over_mean"].as_f64().unwrap();
        let figure = format!(
            "plan {files} files on {nodes} nodes x {per_node} ranks, {policy}: {seconds:.2} s, {rss:.2} GiB peak RSS, slowest reader {:.1} % above the mean (median of {reps})",
            (worst - 1.0) * 100.0
        );
        println!("{figure}");
        table.push(Row::new(id, figure).target("< 10 s and < 2 GB", Some(seconds < 10.0 && rss * 1.073_741_824 < 2.0)));
    }
    bench_rows::record("plan", "cargo bench -p stagehand-stager --bench plan", &table)
        .unwrap_or_else(|e| panic!("{e}"));
}
