//! `simgen cosmo` benchmark: one 256³-particle box (256³ grid,
//! 2LPT, 4 redshifts, 8 sub-volumes written) against the same steps in
//! NumPy (bench/peers/numpy_cosmo.py, numpy.fft in single precision), in the
//! same run; 2 boxes on 1 rank against 2 boxes on 2 ranks; and the same box
//! with 10 particle-mesh steps after 2LPT (`--steps 10`), the cost of a
//! step against the 2LPT box alone.
//!
//! ```sh
//! cargo bench -p stagehand-simgen --bench cosmo-bench
//! ```
//! `STAGEHAND_BENCH_REPS` (default 3), `STAGEHAND_BENCH_DIR` (default /tmp/stagehand-simgen-bench).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use bench_rows::Row;
use serde_json::Value;
use simgen::cosmo::generate::DEFAULT_START_REDSHIFT;
use simgen::cosmo::pm::step_boundaries;

const SIMGEN: &str = env!("CARGO_BIN_EXE_simgen");
/// Particle-mesh steps of the N-body row (FastPM's usual ten).
const STEPS: usize = 10;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Run `simgen cosmo --boxes boxes` on `ranks` ranks; (wall s, report).
fn ours(dir: &Path, ranks: usize, boxes: usize, steps: usize) -> (f64, Value) {
    let _ = std::fs::remove_dir_all(dir);
    let (boxes, steps) = (boxes.to_string(), steps.to_string());
    let args = ["cosmo", "--out", dir.to_str().unwrap(), "--boxes", &boxes, "--seed", "7", "--steps", &steps];
    let started = Instant::now();
    let out = e2e::mpirun(ranks, &[], SIMGEN.as_ref(), &args);
    let wall = started.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (wall, serde_json::from_slice(&out.stdout).unwrap())
}

fn numpy(reps: usize) -> Option<Value> {
    let out = e2e::peer_command("numpy_cosmo.py")?.args(["256", "256", "512", "2", &reps.to_string()]).output().ok()?;
    if !out.status.success() {
        eprintln!("numpy peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last()?).ok()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let reps = bench_rows::repetitions(3);
    let dir =
        PathBuf::from(std::env::var("STAGEHAND_BENCH_DIR").unwrap_or_else(|_| "/tmp/stagehand-simgen-bench".into()));
    let (mut per_box, mut fft, mut rss) = (Vec::new(), Vec::new(), 0u64);
    let (mut one_rank, mut two_ranks, mut stepped) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let (_, report) = ours(&dir.join("one"), 1, 1, 0);
        per_box.push(report["seconds_per_box"].as_f64().unwrap());
        fft.push(report["fft_seconds_per_box"].as_f64().unwrap());
        rss = rss.max(report["peak_rss_bytes"].as_u64().unwrap_or(0));
        let (_, with_steps) = ours(&dir.join("steps"), 1, 1, STEPS);
        stepped.push(with_steps["seconds_per_box"].as_f64().unwrap());
        let (_, r1) = ours(&dir.join("scale1"), 1, 2, 0);
        let (_, r2) = ours(&dir.join("scale2"), 2, 2, 0);
        one_rank.push(r1["seconds"].as_f64().unwrap());
        two_ranks.push(r2["seconds"].as_f64().unwrap());
        println!("rep {rep} done");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let peer = numpy(reps);
    let (box_s, fft_s) = (median(per_box.clone()), median(fft.clone()));
    println!("\n| one box: 256³ particles, 256³ grid, 2LPT, 4 redshifts, 8 sub-volumes | s per box | s in FFTs |");
    println!("|---|---|---|");
    println!("| simgen (1 rank) | {box_s:.2} | {fft_s:.2} |");
    let Some(p) = &peer else {
        panic!("the NumPy peer failed (above): no rows recorded");
    };
    let (pb, pf) = (p["seconds_per_box"].as_f64().unwrap(), p["fft_seconds_per_box"].as_f64().unwrap());
    println!("| NumPy peer | {pb:.2} | {pf:.2} |");
    println!("\nsimgen is {:.2}x faster than NumPy per box ({:.2}x in FFTs)", pb / box_s, pf / fft_s);
    let (s1, s2) = (median(one_rank.clone()), median(two_ranks.clone()));
    println!("2 boxes, whole run: 1 rank {s1:.2} s, 2 ranks {s2:.2} s: speed-up {:.2}x", s1 / s2);
    let nbody_s = median(stepped.clone());
    // Every output redshift is a step boundary too: the steps taken.
    let redshifts = [0.0, 0.5, 1.5, 3.0].map(|z: f64| 1.0 / (1.0 + z));
    let start = 1.0 / (1.0 + DEFAULT_START_REDSHIFT);
    let taken = step_boundaries(start, &redshifts, STEPS).len() - 1;
    let per_step = (nbody_s - box_s) / taken as f64;
    println!("with {STEPS} particle-mesh steps ({taken} taken): {nbody_s:.2} s per box, {per_step:.2} s per step");
    println!("peak RSS of a rank: {:.0} MiB", rss as f64 / 1048576.0);
    println!("raw: per box {per_box:?}, fft {fft:?}, 1 rank {one_rank:?}, 2 ranks {two_ranks:?}, stepped {stepped:?}");
    let rows = [
        Row::new("box-vs-numpy", format!("one 256³ box, 2LPT, 4 redshifts, 8 samples written: {box_s:.2} s"))
            .peer(format!("NumPy, the same steps (nothing written): {pb:.2} s"))
            .ratio(format!("{:.2}×", pb / box_s))
            .target("≥ 2×", Some(pb / box_s >= 2.0)),
        Row::new("two-ranks", format!("2 boxes on 2 ranks: {s2:.2} s"))
            .peer(format!("the same on 1 rank: {s1:.2} s"))
            .ratio(format!("{:.2}×", s1 / s2))
            .target("≥ 1.7×", Some(s1 / s2 >= 1.7)),
        Row::new(
            "nbody-steps",
            format!(
                "the same box with --steps {STEPS} ({taken} taken, the redshifts being boundaries): {nbody_s:.2} s, {per_step:.2} s per step"
            ),
        )
        .peer(format!("2LPT alone: {box_s:.2} s"))
        .ratio(format!("a step costs {:.2}× a 2LPT box", per_step / box_s))
        .target("— (cost reported)", None),
    ];
    bench_rows::record(
        "cosmo-bench",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-simgen --bench cosmo-bench"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
