//! The cluster layer under a real `mpirun`: topology, paths, progress.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

fn probe(ranks: usize, env: &[(&str, &str)]) -> (Vec<Value>, Value) {
    let output = e2e::mpirun(
        ranks,
        env,
        env!("CARGO_BIN_EXE_mpi-topology-probe").as_ref(),
        &["/tmp/bb/node{node}/r{local_rank}"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "mpirun failed: {}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let progress = lines.iter().find(|l| l.get("progress").is_some()).cloned().expect("rank 0 printed progress");
    let mut ranks_lines: Vec<Value> = lines.into_iter().filter(|l| l.get("rank").is_some()).collect();
    ranks_lines.sort_by_key(|l| l["rank"].as_u64());
    (ranks_lines, progress)
}

#[test]
fn four_ranks_as_two_pretend_nodes() {
    let (ranks, progress) = probe(4, &[("STAGEHAND_RANKS_PER_NODE", "2")]);
    assert_eq!(ranks.len(), 4);
    for (r, line) in ranks.iter().enumerate() {
        assert_eq!(line["rank"], r);
        assert_eq!(line["size"], 4);
        assert_eq!(line["nodes"], 2);
        assert_eq!(line["node"], r / 2);
        assert_eq!(line["local_rank"], r % 2);
        assert_eq!(line["local_size"], 2);
        assert_eq!(line["path"], format!("/tmp/bb/node{}/r{}", r / 2, r % 2));
        let mates: Vec<u64> = (0..4).filter(|m| m / 2 == r / 2).map(|m| m as u64).collect();
        assert_eq!(line["ranks_of_node"], serde_json::json!(mates));
    }
    // Rank r adds 100 bytes and one item r+1 times; rank 0 must see them all.
    let expected: Vec<[u64; 2]> = (0..4).map(|r| [100 * (r + 1), r + 1]).collect();
    assert_eq!(progress["progress"], serde_json::json!(expected));
}

#[test]
fn finishing_progress_does_not_wait_a_draw_interval() {
    // Rank 0 used to sleep its 100 ms draw interval before looking for the
    // other ranks' last counts, adding 0.1-0.2 s to the end of every job.
    let (_, progress) = probe(4, &[("STAGEHAND_RANKS_PER_NODE", "1")]);
    let finish_ms = progress["finish_ms"].as_f64().expect("rank 0 timed finish");
    assert!(finish_ms < 50.0, "Progress::finish took {finish_ms} ms after every rank was done");
}

#[test]
fn four_ranks_as_four_pretend_nodes() {
    let (ranks, _) = probe(4, &[("STAGEHAND_RANKS_PER_NODE", "1")]);
    for (r, line) in ranks.iter().enumerate() {
        assert_eq!(
            (line["node"].as_u64(), line["nodes"].as_u64(), line["local_rank"].as_u64()),
            (Some(r as u64), Some(4), Some(0))
        );
    }
}

#[test]
fn without_override_one_machine_is_one_node() {
    let (ranks, _) = probe(3, &[]);
    for (r, line) in ranks.iter().enumerate() {
        assert_eq!(
            (line["node"].as_u64(), line["nodes"].as_u64(), line["local_rank"].as_u64()),
            (Some(0), Some(1), Some(r as u64))
        );
    }
}

#[test]
fn malformed_override_fails_every_rank_with_a_clear_message() {
    let output =
        e2e::mpirun(2, &[("STAGEHAND_RANKS_PER_NODE", "two")], env!("CARGO_BIN_EXE_mpi-topology-probe").as_ref(), &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("STAGEHAND_RANKS_PER_NODE=\"two\""), "{stderr}");
}

/// The hierarchical exchange sums like the flat one, within the bound of
/// reassociating R terms ((R - 1) ε/2 Σ|x| each, against the exact sum):
/// 4 ranks as 2 pretend nodes (parts of buffers whose length 2 does not
/// divide), as 4 nodes of one rank, and as 1 node of 4; on the calling
/// thread and on a thread of its own. Every rank gets the same bits.
#[test]
fn hierarchical_and_flat_sums_agree_within_the_reassociation_bound() {
    for per_node in ["2", "1", "4"] {
        let out = e2e::mpirun(
            4,
            &[("STAGEHAND_RANKS_PER_NODE", per_node)],
            env!("CARGO_BIN_EXE_mpi-allreduce-probe").as_ref(),
            &[],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{per_node} per node: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        assert_eq!(lines.len(), 4, "{stdout}");
        for line in &lines {
            for exchange in ["flat", "hierarchical"] {
                for key in ["worst", "worst_on_thread"] {
                    let worst = line[exchange][key].as_f64().unwrap();
                    assert!(worst <= 1.0, "{per_node} per node, {exchange} {key}: {worst} of the bound\n{stdout}");
                }
                let digest = &line[exchange]["digest"];
                assert!(digest.is_u64(), "{stdout}");
                assert_eq!(
                    digest, &lines[0][exchange]["digest"],
                    "{per_node} per node, {exchange}: ranks differ\n{stdout}"
                );
            }
        }
    }
}

/// Nodes of different rank counts cannot line their parts up: every rank
/// fails with one line that says so.
#[test]
fn a_hierarchical_exchange_over_uneven_nodes_fails_naming_them() {
    let out =
        e2e::mpirun(3, &[("STAGEHAND_RANKS_PER_NODE", "2")], env!("CARGO_BIN_EXE_mpi-allreduce-probe").as_ref(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the same number of ranks on every node; node 1 has 1, node 0 has 2"), "{stderr}");
}
