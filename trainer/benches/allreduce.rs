//! Allreduce efficiency: the fused gradient exchange of the
//! full-size CosmoFlow model (MLPerf HPC configuration, 16 tensors, 8.9 M
//! parameters) against a bare MPI allreduce of the same bytes on the same
//! ranks, in the same run.
//!
//! Also the hierarchical exchange (Kurth et al. 2018: reduce in the node,
//! each local rank allreduces its part between nodes, gather in the node)
//! against the flat one on 4 ranks as 2 pretend nodes, same run: on one
//! machine there is no network for it to save, so the row checks that it
//! costs no more than 5 %.
//!
//! The `trainer` itself on 2 ranks, CosmoFlow (`mlperf-small`) and
//! DeepLabv3+ (`small`): the share of the step spent waiting for the
//! exchange when gradient groups (an eighth of the gradients each) are
//! reduced during back-propagation, against the exchange after it, runs
//! alternating in the same bench.
//!
//! And what the alpha-beta model (`trainer exchange-model`, fed by the
//! link between two ranks and the summing speed measured here) predicts
//! for the same gradients at Summit's scale, 4,608 nodes of 6 ranks.
//!
//! ```sh
//! cargo bench -p stagehand-trainer --bench allreduce
//! ```
//! It re-runs itself under `mpirun -np 2` (`STAGEHAND_BENCH_RANKS` to change)
//! and `mpirun -np 4` with 2 ranks per pretend node.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use bench_rows::Row;
use cluster::World;
use cluster::allreduce::Exchange;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use trainer::exchange::GradientExchange;

const CHILD: &str = "STAGEHAND_ALLREDUCE_BENCH_CHILD";

/// Parameter tensors (weights, bias) of the MLPerf CosmoFlow model: five
/// Conv3d 3³ layers 4->32->64->128->256->512, dense 32768->128->64->4.
fn cosmoflow_tensors() -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut channels = 4;
    for i in 0..5 {
        let filters = 32 << i;
        lengths.extend([27 * channels * filters, filters]);
        channels = filters;
    }
    for (input, output) in [(4 * 4 * 4 * 512, 128), (128, 64), (64, 4)] {
        lengths.extend([input * output, output]);
    }
    lengths
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn child() {
    let world = World::init().expect("MPI");
    let lengths = cosmoflow_tensors();
    let total: usize = lengths.iter().sum();
    let iterations = 30;
    let mut exchange = GradientExchange::new(&world, &lengths, 64 << 20, Exchange::Flat).unwrap();
    let mut hierarchical = GradientExchange::new(&world, &lengths, 64 << 20, Exchange::Hierarchical).unwrap();
    let mut grads: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![1.0; n]).collect();
    let send = vec![1.0f32; total];
    let mut recv = vec![0.0f32; total];
    let mut copy = vec![0.0f32; total];
    let (mut fused, mut bare, mut slots) = (Vec::new(), Vec::new(), Vec::new());
    let (mut puts, mut copies, mut hier) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..iterations + 3 {
        world.barrier();
        let t = Instant::now();
        exchange.average(&mut grads.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
        let f = t.elapsed().as_secs_f64();
        world.barrier();
        let t = Instant::now();
        world.comm().all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
        let b = t.elapsed().as_secs_f64();
        // Gradients written straight into the fusion slots, divided by the
        // ranks on the way (the copy out of the model a trainer makes
        // anyway; timed against a plain copy of the same floats), then
        // averaged.
        let t = Instant::now();
        for (t, g) in grads.iter().enumerate() {
            exchange.put(t, g);
        }
        let p = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut at = 0;
        for g in &grads {
            copy[at..at + g.len()].copy_from_slice(g);
            at += g.len();
        }
        let c = t.elapsed().as_secs_f64();
        std::hint::black_box(&copy);
        world.barrier();
        let t = Instant::now();
        exchange.average_slots();
        let s = t.elapsed().as_secs_f64();
        for (t, g) in grads.iter().enumerate() {
            hierarchical.put(t, g);
        }
        world.barrier();
        let t = Instant::now();
        hierarchical.average_slots();
        let h = t.elapsed().as_secs_f64();
        if i >= 3 {
            hier.push(h);
            fused.push(f);
            bare.push(b);
            slots.push(s);
            puts.push(p);
            copies.push(c);
        }
    }
    if world.rank() == 0 {
        let (f, b, s) = (median(fused), median(bare), median(slots));
        let (p, c, h) = (median(puts), median(copies), median(hier));
        let bytes = (total * 4) as f64;
        println!(
            "{}",
            serde_json::json!({ "ranks": world.size(), "parameters": total, "tensors": lengths.len(),
                "buffers": exchange.plan().buffers(), "fused_s": f, "bare_s": b,
                "slots_s": s, "put_s": p, "plain_copy_s": c, "fused_gbps": bytes / f / 1e9, "bare_gbps": bytes / b / 1e9,
                "efficiency_copying": b / f, "efficiency": b / s, "hierarchical_s": h,
                "hierarchical_over_flat": s / h })
        );
    }
}

/// `trainer exchange-model` for the full CosmoFlow gradients at 4,608
/// nodes of 6 ranks: (flat, hierarchical) seconds.
fn predicted_at_summit_scale() -> (f64, f64) {
    let trainer = std::path::Path::new(env!("CARGO_BIN_EXE_trainer"));
    let args = ["exchange-model", "--config", "mlperf", "--nodes", "4608", "--ranks-per-node", "6", "--json"];
    let out = e2e::mpirun(2, &[], trainer, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    println!("exchange model: {}", v["machine"]);
    let last = v["predictions"].as_array().and_then(|p| p.last()).unwrap();
    assert_eq!(last["nodes"], 4608);
    (last["flat_secs"].as_f64().unwrap(), last["hierarchical_secs"].as_f64().unwrap())
}

/// One `trainer train` on 2 ranks: its report. MPI polls for progress as
/// on a cluster node whose cores are the job's: `e2e::mpirun` passes
/// `--oversubscribe` (the tests run 4 ranks on 2 cores), under which Open
/// MPI yields the core whenever it waits, and a communication thread that
/// yields to the compute threads leaves its groups unsummed until the
/// backward pass ends.
fn train(args: &[&str]) -> serde_json::Value {
    let trainer = std::path::Path::new(env!("CARGO_BIN_EXE_trainer"));
    let all: Vec<&str> = ["train"].iter().chain(args).copied().collect();
    let out = e2e::mpirun(2, &[("OMPI_MCA_mpi_yield_when_idle", "0")], trainer, &all);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The exchange-wait share of the step after the backward pass and during
/// it (medians of 5 alternating runs), and the groups of the last run
/// during it: (after, during, groups report).
fn exchange_wait(args: &[&str]) -> (f64, f64, serde_json::Value) {
    let wait = |report: &serde_json::Value| report["fractions"][2].as_f64().unwrap();
    let (mut after, mut during, mut groups) = (Vec::new(), Vec::new(), serde_json::Value::Null);
    for rep in 0..5 {
        let blocking = train(args);
        // Groups of an eighth of the gradients: several leave early.
        let group_mb = format!("{}", blocking["parameters"].as_f64().unwrap() * 4.0 / 8.0 / (1u64 << 20) as f64);
        let extra = ["--reduce-during-backward", "--fusion-mb", group_mb.as_str()];
        let overlapped = train(&[args, &extra[..]].concat());
        println!(
            "{} rep {rep}: exchange wait {:.1} % after the backward pass, {:.1} % during it ({})",
            args[1],
            100.0 * wait(&blocking),
            100.0 * wait(&overlapped),
            overlapped["gradient_groups"]
        );
        after.push(wait(&blocking));
        during.push(wait(&overlapped));
        groups = overlapped["gradient_groups"].clone();
    }
    (median(after), median(during), groups)
}

/// The row of one model's exchange wait during against after the backward pass.
fn wait_row(id: &str, what: &str, (after, during, groups): (f64, f64, serde_json::Value)) -> Row {
    Row::new(
        id,
        format!(
            "{what}, waiting for the exchange with groups reduced during back-propagation: {:.1} % of the step ({} of {} groups left before the backward pass ended)",
            100.0 * during,
            groups["during_backward"],
            groups["groups"]
        ),
    )
    .peer(format!("the exchange after the backward pass, same run: {:.1} %", 100.0 * after))
    .ratio(format!("{:.2}× its wait", during / after))
    .target("less wait than after it", Some(during < after))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let ranks: usize = std::env::var("STAGEHAND_BENCH_RANKS").ok().and_then(|r| r.parse().ok()).unwrap_or(2);
    let me = std::env::current_exe().unwrap();
    let (mut efficiencies, mut fused_gbps, mut bare_gbps, mut megabytes) = (Vec::new(), Vec::new(), Vec::new(), 0.0);
    for rep in 0..3 {
        let out = e2e::mpirun(ranks, &[(CHILD, "1")], &me, &["--bench"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8_lossy(&out.stdout);
        println!("rep {rep}: {}", line.trim());
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        efficiencies.push(v["efficiency"].as_f64().unwrap());
        fused_gbps.push(v["fused_gbps"].as_f64().unwrap());
        bare_gbps.push(v["bare_gbps"].as_f64().unwrap());
        megabytes = v["parameters"].as_f64().unwrap() * 4.0 / 1e6;
    }
    let mut hierarchical = Vec::new();
    for rep in 0..3 {
        let out = e2e::mpirun(4, &[(CHILD, "1"), ("STAGEHAND_RANKS_PER_NODE", "2")], &me, &["--bench"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let line = String::from_utf8_lossy(&out.stdout);
        println!("4 ranks as 2 nodes, rep {rep}: {}", line.trim());
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        hierarchical.push((
            v["hierarchical_over_flat"].as_f64().unwrap(),
            v["slots_s"].as_f64().unwrap(),
            v["hierarchical_s"].as_f64().unwrap(),
        ));
    }
    hierarchical.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (speed, flat_s, hier_s) = hierarchical[1];
    let efficiency = median(efficiencies);
    let (model_flat_s, model_hier_s) = predicted_at_summit_scale();
    let dir = tempfile::tempdir().unwrap();
    let (cosmo, climate) = (e2e::simulated_cosmo(dir.path(), 16, 5), e2e::simulated_climate(dir.path(), 40, 16, 5));
    let run = ["--val-fraction", "0", "--epochs", "2", "--workers", "1"];
    let cosmo_args =
        [&["--config", "mlperf-small", "--data", cosmo.to_str().unwrap(), "--batch", "4"][..], &run].concat();
    let cosmoflow_wait = exchange_wait(&cosmo_args);
    let deeplab_args = [
        &["--model", "deeplabv3plus", "--config", "small", "--data", climate.to_str().unwrap(), "--batch", "2"][..],
        &run,
    ]
    .concat();
    let deeplab_wait = exchange_wait(&deeplab_args);
    println!(
        "\nfused exchange (gradients written into the fusion slots) / bare allreduce bandwidth, median of 3 runs (each the median of 30 steps): {:.1} %",
        100.0 * efficiency
    );
    let rows = [
        Row::new(
            "fused-vs-bare",
            format!(
                "fused gradient exchange, full CosmoFlow gradients ({megabytes:.1} MB), {ranks} ranks: {:.2} GB/s",
                median(fused_gbps)
            ),
        )
        .peer(format!("a bare `MPI_Allreduce` of the same floats: {:.2} GB/s", median(bare_gbps)))
        .ratio(format!("{:.1} % of its bandwidth", 100.0 * efficiency))
        .target("≥ 90 %", Some(efficiency >= 0.9)),
        Row::new(
            "hierarchical-vs-flat",
            format!("hierarchical exchange, the same gradients, 4 ranks as 2 pretend nodes: {:.1} ms", 1e3 * hier_s),
        )
        .peer(format!("the flat exchange, same run: {:.1} ms", 1e3 * flat_s))
        .ratio(format!("{speed:.2}× its speed"))
        .target("≥ 0.95× (one machine: no network to save)", Some(speed >= 0.95)),
        Row::new(
            "exchange-model-4608-nodes",
            format!(
                "predicted hierarchical exchange of the same gradients at 4,608 nodes × 6 ranks (alpha-beta model, \
                 node figures measured here, Summit's 23 GB/s and 1 µs between nodes): {:.1} ms",
                1e3 * model_hier_s
            ),
        )
        .peer(format!("the flat exchange, same model: {:.1} ms", 1e3 * model_flat_s))
        .ratio(format!("{:.2}× its speed", model_flat_s / model_hier_s))
        .target("a prediction (no target)", None),
        wait_row("during-backward-cosmoflow", "CosmoFlow `mlperf-small`, 2 ranks × batch 4", cosmoflow_wait),
        wait_row("during-backward-deeplab", "DeepLabv3+ `small`, 2 ranks × batch 2", deeplab_wait),
    ];
    bench_rows::record("allreduce", "cargo bench -p stagehand-trainer --bench allreduce", &rows)
        .unwrap_or_else(|e| panic!("{e}"));
}
