//! The trainer's gradient exchange under a real mpirun: blocking fused
//! averages (no fusion, small buffers, one buffer), the one-step-lagged
//! exchange and the exchange during back-propagation (dense and sparse)
//! equal the mean computed locally (slots put step after step, a large
//! one by several threads, a value that is not finite seen as it is put),
//! summed flat and
//! hierarchically, on 1, 2 and 3 ranks of one node and 4 ranks as 2
//! pretend nodes; the blocking sparse average leaves zeros for tensors no
//! rank had.
//!
//! The test runs this test binary itself under mpirun, with an environment
//! variable that makes each rank run the probe instead: a multi-rank check
//! without a binary the trainer package would install.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use cluster::World;
use cluster::allreduce::Exchange;
use serde_json::Value;
use trainer::exchange::{GradientExchange, LaggedExchange};
use trainer::overlap::OverlapExchange;

/// Set on the ranks: run the probe, not the test.
const PROBE: &str = "STAGEHAND_EXCHANGE_PROBE";
const TEST: &str = "gradient_exchange_averages_fused_and_lagged_flat_and_hierarchical";

#[test]
fn gradient_exchange_averages_fused_and_lagged_flat_and_hierarchical() {
    if std::env::var_os(PROBE).is_some() {
        probe();
        return;
    }
    let this = std::env::current_exe().unwrap();
    for (ranks, per_node) in [(1, "1"), (2, "2"), (3, "3"), (4, "2")] {
        let env = [(PROBE, "1"), ("STAGEHAND_RANKS_PER_NODE", per_node)];
        let out = e2e::mpirun(ranks, &env, &this, &["--exact", TEST, "--nocapture", "--test-threads=1"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{ranks} ranks: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        // The harness prints the test's name on the line the report starts.
        let line = stdout.lines().find_map(|l| l.find('{').map(|at| &l[at..]));
        let report: Value = serde_json::from_str(line.unwrap_or_else(|| panic!("no report: {stdout}"))).unwrap();
        assert_eq!(report["ranks"], ranks);
        assert_eq!(report["checks"], 2 * (3 * 2 * 5 + (3 * 4 + 1) + 3 * 5 + 2 * 5 + 5 + 2 * 5));
    }
}

/// Tensor `t` of rank `r` at step `s`: values every rank can recompute.
fn tensor(r: usize, s: usize, t: usize, len: usize) -> Vec<f32> {
    (0..len).map(|i| ((r + 1) * (i + 1) + 7 * s + 13 * t) as f32 / 8.0).collect()
}

fn mean(ranks: usize, s: usize, t: usize, len: usize) -> Vec<f32> {
    let mut m = vec![0f32; len];
    for r in 0..ranks {
        for (a, b) in m.iter_mut().zip(tensor(r, s, t, len)) {
            *a += b / ranks as f32;
        }
    }
    m
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-4 * y.abs().max(1.0))
}

/// The probe each rank runs (inside this test binary, under mpirun).
fn probe() {
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), Some("warn"));
    let (rank, ranks) = (world.rank(), world.size());
    let lengths = [5usize, 300, 1, 70_000, 12];
    let mut checks = 0;
    for kind in [Exchange::Flat, Exchange::Hierarchical] {
        checks += probe_exchange(&world, kind, &lengths);
    }
    world.barrier();
    if rank == 0 {
        println!("{}", serde_json::json!({ "ranks": ranks, "checks": checks }));
    }
}

/// The checks of one kind of exchange: how many passed (a wrong one fails
/// the rank).
fn probe_exchange(world: &World, kind: Exchange, lengths: &[usize]) -> usize {
    let (rank, ranks) = (world.rank(), world.size());
    let mut checks = 0;
    for fusion in [0usize, 4 * 400, 64 << 20] {
        let mut exchange = GradientExchange::new(world, lengths, fusion, kind).unwrap_or_else(|e| world.fail(e));
        for step in 0..2 {
            let mut grads: Vec<Vec<f32>> = lengths.iter().enumerate().map(|(t, &n)| tensor(rank, step, t, n)).collect();
            exchange.average(&mut grads.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
            for (t, g) in grads.iter().enumerate() {
                if !close(g, &mean(ranks, step, t, lengths[t])) {
                    world.fail(format!("rank {rank}: {kind} fusion {fusion} step {step} tensor {t}: wrong average"));
                }
                checks += 1;
            }
        }
    }
    // Gradients written straight into the fusion slots, step after step
    // (on one rank the two sets of buffers change places each step), one
    // slot long enough to be put by several threads, and a value that is
    // not finite seen as it is put.
    let slot_lengths = [5usize, 300_000, 1, 12];
    let mut exchange = GradientExchange::new(world, &slot_lengths, 4 * 400, kind).unwrap_or_else(|e| world.fail(e));
    for step in 5..8 {
        for (t, &n) in slot_lengths.iter().enumerate() {
            if !exchange.put_weighted(t, &tensor(rank, step, t, n), 1.0 / ranks as f32) {
                world.fail(format!("rank {rank}: finite tensor {t} put as not finite"));
            }
        }
        exchange.average_slots();
        for (t, &n) in slot_lengths.iter().enumerate() {
            if !close(exchange.averaged(t), &mean(ranks, step, t, n)) {
                world.fail(format!("rank {rank}: {kind} slot average of tensor {t} at step {step} is wrong"));
            }
            checks += 1;
        }
    }
    let mut overflowed = tensor(rank, 8, 1, slot_lengths[1]);
    overflowed[slot_lengths[1] - 1] = f32::INFINITY;
    if exchange.put_weighted(1, &overflowed, 1.0) {
        world.fail(format!("rank {rank}: an infinite gradient value was put as finite"));
    }
    checks += 1;
    let Some(lagged) = LaggedExchange::new(world, lengths, 4 * 400, kind) else {
        world.fail("MPI without MPI_THREAD_MULTIPLE: no lagged exchange")
    };
    let mut lagged = lagged.unwrap_or_else(|e| world.fail(e));
    let mut out: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0; n]).collect();
    if lagged.take(&mut out.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>()) {
        world.fail(format!("rank {rank}: a lagged exchange delivered before anything was submitted"));
    }
    for step in 0..3 {
        let grads: Vec<Vec<f32>> = lengths.iter().enumerate().map(|(t, &n)| tensor(rank, step, t, n)).collect();
        lagged.submit(&grads.iter().map(Vec::as_slice).collect::<Vec<_>>());
        // ... step + 1 computes here ...
        if !lagged.take(&mut out.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>()) {
            world.fail(format!("rank {rank}: lagged step {step} delivered nothing"));
        }
        for (t, g) in out.iter().enumerate() {
            if !close(g, &mean(ranks, step, t, lengths[t])) {
                world.fail(format!("rank {rank}: {kind} lagged step {step} tensor {t}: wrong average"));
            }
            checks += 1;
        }
    }
    drop(lagged);
    checks + probe_during_backward(world, kind, lengths) + probe_present(world, kind, lengths)
}

/// The blocking sparse average over two steps: step 0 has tensor 0 on
/// rank 0 only, 1 on the others and 3 everywhere; step 1 has 2 and 4
/// everywhere. A tensor some rank had is the mean with zeros from the
/// ranks that had none; one that no rank had is zeros, also where the step
/// before had averaged it.
fn probe_present(world: &World, kind: Exchange, lengths: &[usize]) -> usize {
    let (rank, ranks) = (world.rank(), world.size());
    let has = |r: usize, step: usize, t: usize| match step {
        0 => t == 3 || (t == 0 && r == 0) || (t == 1 && r != 0),
        _ => t == 2 || t == 4,
    };
    let mut exchange = GradientExchange::new(world, lengths, 4 * 400, kind).unwrap_or_else(|e| world.fail(e));
    let mut checks = 0;
    for step in 0..2 {
        let present: Vec<bool> = (0..lengths.len()).map(|t| has(rank, step, t)).collect();
        for (t, &n) in lengths.iter().enumerate() {
            let g = if present[t] { tensor(rank, step, t, n) } else { vec![0.0; n] };
            exchange.put(t, &g);
        }
        let agreed = exchange.average_present(&present);
        for (t, &n) in lengths.iter().enumerate() {
            let anyone = (0..ranks).any(|r| has(r, step, t));
            let mut want = vec![0f32; n];
            for r in (0..ranks).filter(|&r| has(r, step, t)) {
                for (a, b) in want.iter_mut().zip(tensor(r, step, t, n)) {
                    *a += b / ranks as f32;
                }
            }
            if agreed[t] != anyone || !close(exchange.averaged(t), &want) {
                world.fail(format!("rank {rank}: {kind} sparse step {step} tensor {t}: agreed {} wrong", agreed[t]));
            }
            checks += 1;
        }
    }
    checks
}

/// The exchange during back-propagation: tensors put last first, as
/// back-propagation produces them, in groups of 1,600 bytes; the groups
/// that filled before the backward pass ended left early; a tensor no rank
/// put is zeros, and in a sparse finish not agreed on.
fn probe_during_backward(world: &World, kind: Exchange, lengths: &[usize]) -> usize {
    let (rank, ranks) = (world.rank(), world.size());
    let mut checks = 0;
    let Some(exchange) = OverlapExchange::new(world, lengths, 4 * 400, kind) else {
        world.fail("MPI without MPI_THREAD_MULTIPLE: no exchange during back-propagation")
    };
    let mut exchange = exchange.unwrap_or_else(|e| world.fail(e));
    let weight = 1.0 / ranks as f32;
    for step in 0..2 {
        for t in (0..lengths.len()).rev() {
            if t == 0 {
                exchange.backward_ended();
            }
            exchange.put_weighted(t, &tensor(rank, step, t, lengths[t]), weight).unwrap_or_else(|e| world.fail(e));
        }
        exchange.finish().unwrap_or_else(|e| world.fail(e));
        for (t, &n) in lengths.iter().enumerate() {
            let averaged = exchange.averaged(t).unwrap_or_else(|| world.fail(format!("tensor {t} still in flight")));
            if averaged.len() != n || !close(averaged, &mean(ranks, step, t, n)) {
                world.fail(format!("rank {rank}: {kind} during backward step {step} tensor {t}: wrong average"));
            }
            checks += 1;
        }
    }
    let counts = exchange.counts();
    let groups = exchange.groups() as u64;
    if counts.groups != 2 * groups || counts.during_backward == 0 || counts.during_backward >= counts.groups {
        world.fail(format!("rank {rank}: {kind} {counts:?} of {groups} groups a step"));
    }
    // Sparse: rank 0 has no gradient for tensor 2, and no rank for tensor 0.
    let mut present = vec![false; lengths.len()];
    for t in (1..lengths.len()).rev().filter(|&t| !(t == 2 && rank == 0)) {
        exchange.put_weighted(t, &tensor(rank, 7, t, lengths[t]), weight).unwrap_or_else(|e| world.fail(e));
        present[t] = true;
    }
    let agreed = exchange.finish_present(&present).unwrap_or_else(|e| world.fail(e));
    // (On one rank, rank 0 is every rank: no one has tensor 2.)
    let expected_agreed: Vec<bool> = (0..lengths.len()).map(|t| t != 0 && !(t == 2 && ranks == 1)).collect();
    if agreed != expected_agreed {
        world.fail(format!("rank {rank}: {kind} sparse agreement {agreed:?}"));
    }
    for (t, &n) in lengths.iter().enumerate() {
        let expected: Vec<f32> = match t {
            0 => vec![0.0; n],
            2 => (0..n).map(|i| (1..ranks).map(|r| tensor(r, 7, t, n)[i] * weight).sum()).collect(),
            _ => mean(ranks, 7, t, n),
        };
        let averaged = exchange.averaged(t).unwrap_or_else(|| world.fail(format!("tensor {t} still in flight")));
        if averaged.len() != n || !close(averaged, &expected) {
            world.fail(format!("rank {rank}: {kind} sparse tensor {t}: wrong sum"));
        }
        checks += 1;
    }
    checks
}

/// `trainer exchange-model` under mpirun -np 2: the link between the two
/// ranks and the summing speed measured, a prediction per node count, the
/// two exchanges equal on one node; on 1 rank it says how to run it.
#[test]
fn the_exchange_model_measures_two_ranks_and_predicts_every_scale() {
    let trainer = std::path::Path::new(env!("CARGO_BIN_EXE_trainer"));
    let args = ["exchange-model", "--nodes", "8", "--ranks-per-node", "2", "--json"];
    let out = e2e::mpirun(2, &[], trainer, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let machine = &json["machine"];
    for figure in [&machine["intra"]["latency"], &machine["intra"]["secs_per_byte"], &machine["reduce_secs_per_byte"]] {
        let value = figure.as_f64().unwrap();
        assert!(value.is_finite() && value > 0.0, "{machine}");
    }
    // The default model's gradients: CosmoFlow's first configuration's parameters in f32.
    let entry = trainer::models::find("cosmoflow").unwrap();
    let (parameters, _) = entry.build_default(entry.configs[0]).unwrap().sizes().unwrap();
    assert_eq!(json["bytes"].as_f64().unwrap(), 4.0 * parameters as f64);
    let predictions = json["predictions"].as_array().unwrap();
    let nodes: Vec<u64> = predictions.iter().map(|p| p["nodes"].as_u64().unwrap()).collect();
    assert_eq!(nodes, [1, 2, 4, 8]);
    assert_eq!(predictions[0]["flat_secs"], predictions[0]["hierarchical_secs"]);
    assert!(predictions[3]["flat_secs"].as_f64().unwrap() > predictions[1]["flat_secs"].as_f64().unwrap());

    let out = e2e::mpirun(1, &[], trainer, &["exchange-model"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("mpirun -np 2"), "{stderr}");
    // With the node's link given, one rank is enough and the figures are used as given.
    let given = ["exchange-model", "--intra-latency-us", "2", "--intra-gb-per-sec", "50", "--nodes", "2", "--json"];
    let out = e2e::mpirun(1, &[], trainer, &given);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["machine"]["intra"]["latency"].as_f64().unwrap(), 2e-6);
    assert_eq!(json["machine"]["intra"]["secs_per_byte"].as_f64().unwrap(), 1.0 / 50e9);
}
