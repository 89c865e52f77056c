//! `simgen multislice` benchmark against abTEM
//! (bench/peers/abtem_multislice.py, CPU, FFTW, the same thread count,
//! imaging the very same atoms at the same probe positions), one scan a
//! turn with us, over several configurations: the reference case (Si
//! [001], 200 kV, 512 × 512 grid, 200 Å thick in slices of about 2 Å, an
//! 8 × 8 scan, 20 mrad probe, no phonons) and others that change the
//! grid (256², and 384², not a power of two), the crystal (SrTiO3, Au,
//! GaAs), the thickness (50 to 150 slices) and the scan (4 × 4 to 8 × 8).
//!
//! ```sh
//! cargo bench -p stagehand-simgen --bench multislice-bench
//! ```
//! `STAGEHAND_BENCH_REPS` (default 3), `STAGEHAND_BENCH_DIR` (default
//! /tmp/stagehand-multislice-bench), `STAGEHAND_BENCH_THREADS` (default:
//! all cores), `STAGEHAND_BENCH_PAPER=1` also times one sample of the
//! paper's size (32 × 32 positions) for the cost per node-hour,
//! `STAGEHAND_BENCH_ONLY=ID` only the configurations whose id holds ID
//! (recording no rows).
//!
//! Reports, per configuration, milliseconds per probe position and slice,
//! the FFT share, positions per second for both codes and the speedup
//! (the median of each turn's own, and the lowest), the patterns'
//! agreement (relative L2 after normalising each pattern) with abTEM's
//! physics (abTEM run once more with exact structure factors, the way we
//! place atoms, untimed) and with stock abTEM, whose bilinear atom
//! positions low-pass heavy atoms (both codes' patterns are left in the
//! case's directory as `ours_patterns.f32`, `[position][ky][kx]` n × n,
//! `abtem_patterns.f32` and `abtem_exact_patterns.f32`); and peak memory
//! and the bytes of one reference sample stored as f32 and as f16 + zstd.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use bench_rows::Row;
use formats::scattering::{self, Compression, Precision, ScatteringShape};
use serde_json::{Value, json};
use simgen::multislice::crystal::Crystal;
use simgen::multislice::generate::{Mode, MultisliceConfig, Plan, Sample};
use simgen::multislice::optics::{Aberrations, Beam};
use simgen::multislice::potential::Target;
use simgen::multislice::wave::Probe;

#[path = "../tests/support/abtem_inputs.rs"]
mod abtem_inputs;

use abtem_inputs::write_inputs;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One configuration of the comparison.
struct Case {
    /// The row's id and the report's key.
    id: &'static str,
    crystal: &'static str,
    grid: usize,
    /// Å per pixel: grid × sampling holds a whole number of cells (the
    /// crystal's lattice constant sets it).
    sampling: f64,
    thickness: f64,
    scan: usize,
}

/// The reference case first (its row ids are the page's oldest).
const CASES: [Case; 5] = [
    Case { id: "sample-vs-abtem", crystal: "Si", grid: 512, sampling: 0.05, thickness: 200.0, scan: 8 },
    Case { id: "si-256", crystal: "Si", grid: 256, sampling: 0.1, thickness: 200.0, scan: 8 },
    Case { id: "srtio3-512-100a", crystal: "SrTiO3", grid: 512, sampling: 0.05, thickness: 100.0, scan: 8 },
    Case { id: "au-384-100a-6x6", crystal: "Au", grid: 384, sampling: 0.0667, thickness: 100.0, scan: 6 },
    Case { id: "gaas-512-300a-4x4", crystal: "GaAs", grid: 512, sampling: 0.0552, thickness: 300.0, scan: 4 },
];

fn config(case: &Case) -> MultisliceConfig {
    MultisliceConfig {
        random_offset: true,
        crystal: Crystal::built_in(case.crystal).unwrap(),
        zone: [0, 0, 1],
        max_tilt: 0.0,
        thickness: (case.thickness, case.thickness),
        beam: Beam::new(200e3).unwrap(),
        lens: Probe { semiangle: 0.020, aberrations: Aberrations::default() },
        grid: case.grid,
        sampling: case.sampling,
        sampling_tolerance: simgen::multislice::specimen::SAMPLING_TOLERANCE,
        slice: 2.0,
        scan: (case.scan, case.scan),
        phonons: 0,
        phonon_sigma: 0.0,
        crystal_thermal: false,
        target: Target::Density,
        mode: Mode::Cbed,
        seed: 1,
    }
}

/// One timed sample: (wall seconds, the sample).
fn timed(plan: &Plan, pool: &rayon::ThreadPool) -> (f64, Sample) {
    let started = Instant::now();
    let sample = pool.install(|| plan.sample(0)).unwrap();
    (started.elapsed().as_secs_f64(), sample)
}

/// How abTEM places atoms on the grid (see bench/peers/abtem_multislice.py).
#[derive(Clone, Copy, PartialEq)]
enum Projection {
    /// Stock abTEM, bilinear deltas over a sinc: what users run, timed.
    Stock,
    /// Exact structure factors, as ours: the physics our patterns must match.
    ExactStructureFactors,
}

fn abtem(dir: &Path, threads: usize, reps: usize, projection: Projection) -> Option<Value> {
    let mut command = e2e::peer_command("abtem_multislice.py")?;
    command.args([dir.to_str().unwrap(), &threads.to_string(), &reps.to_string()]);
    if projection == Projection::ExactStructureFactors {
        command.arg("--exact-structure-factors");
    }
    let out = command.output().ok()?;
    if !out.status.success() {
        eprintln!("abTEM peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last()?).ok()
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

/// Relative L2 distance of each of our patterns to abTEM's, both normalised
/// to unit sum. abTEM's are `[kx][ky]`, cropped to its cutoff square around
/// k = 0; ours are `[ky][kx]` with k = 0 at (n/2, n/2).
fn agreement(ours: &[f32], n: usize, theirs: &[f32], shape: [usize; 3]) -> Vec<f64> {
    let [positions, sx, sy] = shape;
    (0..positions)
        .map(|p| {
            let mine = &ours[p * n * n..(p + 1) * n * n];
            let other = &theirs[p * sx * sy..(p + 1) * sx * sy];
            let pairs: Vec<(f64, f64)> = (0..sx)
                .flat_map(|i| (0..sy).map(move |j| (i, j)))
                .map(|(i, j)| {
                    let (kx, ky) = (n / 2 + i - sx / 2, n / 2 + j - sy / 2);
                    (f64::from(mine[ky * n + kx]), f64::from(other[i * sy + j]))
                })
                .collect();
            let (sa, sb) = pairs.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
            let (diff, norm) =
                pairs.iter().fold((0.0, 0.0), |(d, m), (x, y)| (d + (x / sa - y / sb).powi(2), m + (y / sb).powi(2)));
            (diff / norm).sqrt()
        })
        .collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let reps = bench_rows::repetitions(3);
    let threads: usize = std::env::var("STAGEHAND_BENCH_THREADS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1));
    let dir = PathBuf::from(
        std::env::var("STAGEHAND_BENCH_DIR").unwrap_or_else(|_| "/tmp/stagehand-multislice-bench".into()),
    );
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let mut report = json!({ "threads": threads, "reps": reps });
    // `STAGEHAND_BENCH_ONLY=au` times the configurations whose id holds
    // it and records no rows (the page shows every configuration or none).
    let only = std::env::var("STAGEHAND_BENCH_ONLY").ok();
    let chosen: Vec<&Case> = CASES.iter().filter(|case| only.as_deref().is_none_or(|o| case.id.contains(o))).collect();
    assert!(!chosen.is_empty(), "STAGEHAND_BENCH_ONLY={only:?} names none of {:?}", CASES.map(|case| case.id));
    for case in chosen {
        let (measured, sample) = compare(case, reps, threads, &pool, &dir.join(case.id));
        if case.id == CASES[0].id {
            report["stored_bytes_per_sample"] = stored_bytes(&config(case).plan().unwrap(), &sample);
        }
        report["cases"][case.id] = measured;
    }
    report["peak_rss_mib"] = json!(cluster::memory::peak_rss_bytes() as f64 / f64::from(1u32 << 20));
    if std::env::var_os("STAGEHAND_BENCH_PAPER").is_some() {
        let paper = config(&Case { scan: 32, ..CASES[0] }).plan().unwrap();
        let (wall, _) = timed(&paper, &pool);
        report["paper_sample"] = json!({
            "case": "32x32 positions, 512x512, 200 A, Si [001], 200 kV",
            "seconds": wall,
            "samples_per_node_hour": 3600.0 / wall,
        });
    }
    let text = serde_json::to_string_pretty(&report).unwrap();
    println!("{text}");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.json"), text).unwrap();
    let compared = CASES.iter().all(|case| {
        let measured = &report["cases"][case.id];
        measured.get("abtem").is_some() && measured.get("pattern_relative_l2").is_some()
    });
    if only.is_some() {
        eprintln!("STAGEHAND_BENCH_ONLY set: no rows recorded");
    } else if compared {
        record_rows(&report, reps);
    } else {
        eprintln!(
            "SKIPPED the abTEM comparison of some configuration: the peer did not run (see above); no rows recorded"
        );
    }
}

/// The bytes of `sample` stored as f32 and as f16 + zstd.
fn stored_bytes(plan: &Plan, sample: &Sample) -> Value {
    let n = plan.grid.n as u32;
    let shape = ScatteringShape { positions: plan.positions() as u32, height: n, width: n };
    let f32_bytes = scattering::encode(shape, &sample.cbed, &sample.target, Precision::F32, Compression::None).unwrap();
    let f16_bytes =
        scattering::encode(shape, &sample.cbed, &sample.target, Precision::F16, Compression::Zstd(3)).unwrap();
    json!({ "f32": f32_bytes.len(), "f16_zstd": f16_bytes.len(), "ratio": f16_bytes.len() as f64 / f32_bytes.len() as f64 })
}

/// `case` timed `reps` times, ours and abTEM's in turn: the report of the
/// case (abTEM's part only when it ran) and our last sample.
fn compare(case: &Case, reps: usize, threads: usize, pool: &rayon::ThreadPool, dir: &Path) -> (Value, Sample) {
    let plan = config(case).plan().unwrap();
    let n = plan.grid.n;
    let positions = plan.positions() as f64;
    let (mut walls, mut per_position_slice, mut fft_share, mut setups) = (vec![], vec![], vec![], vec![]);
    let (mut last, mut peer, mut speedups) = (None, Vec::new(), Vec::new());
    for rep in 0..reps {
        let (wall, sample) = timed(&plan, pool);
        walls.push(wall);
        setups.push(sample.setup_time.as_secs_f64());
        per_position_slice.push(sample.scan_time.as_secs_f64() * threads as f64 / (positions * sample.slices as f64));
        fft_share.push(sample.fft_time.as_secs_f64() / (sample.scan_time.as_secs_f64() * threads as f64));
        eprintln!("{} rep {rep}: ours {wall:.2} s ({} slices)", case.id, sample.slices);
        if rep == 0 {
            write_inputs(dir, &plan, &sample);
        }
        // The peer alternates with us, one scan a turn, so both see the same machine.
        if let Some(r) = abtem(dir, threads, 1, Projection::Stock) {
            let seconds = r["seconds_median"].as_f64().unwrap();
            eprintln!("{} rep {rep}: abTEM {seconds:.2} s", case.id);
            speedups.push(seconds / wall);
            peer.push(r);
        }
        last = Some(sample);
    }
    let sample = last.unwrap();
    // Ours beside abTEM's, for looking at where they differ.
    let ours_bytes: Vec<u8> = sample.cbed.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("ours_patterns.f32"), ours_bytes).unwrap();
    let mut report = json!({
        "case": format!("{} [001], 200 kV, {n}x{n} at {:.4} A, {} A in 2 A slices, {}x{} scan, 20 mrad, no phonons",
            case.crystal, plan.grid.dx, case.thickness, case.scan, case.scan),
        "slices": sample.slices,
        "ours": {
            "seconds_per_sample_median": median(walls.clone()),
            "setup_seconds_median": median(setups),
            "positions_per_second": positions / median(walls),
            "ms_per_position_slice": 1e3 * median(per_position_slice),
            "fft_share_of_scan": median(fft_share),
        },
    });
    if peer.is_empty() {
        return (report, sample);
    }
    let peer_seconds = median(peer.iter().map(|r| r["seconds_median"].as_f64().unwrap()).collect());
    let shape: Vec<usize> =
        peer[0]["pattern_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    let shape3 = [shape[0], shape[1], shape[2]];
    let stock_l2 = agreement(&sample.cbed, n, &read_f32(&dir.join("abtem_patterns.f32")), shape3);
    // Our patterns are checked against abTEM's physics with its one
    // approximation (bilinear atom positions) taken out, once, untimed.
    let exact = abtem(dir, threads, 1, Projection::ExactStructureFactors)
        .map(|_| agreement(&sample.cbed, n, &read_f32(&dir.join("abtem_exact_patterns.f32")), shape3));
    report["abtem"] = json!({
        "seconds_per_sample_median": peer_seconds,
        "positions_per_second": positions / peer_seconds,
        "slices": peer[0]["slices"], "version": peer[0]["abtem"], "pattern_shape": shape,
    });
    report["speedup"] = json!({
        "median": median(speedups.clone()),
        "lowest": speedups.iter().copied().fold(f64::INFINITY, f64::min),
        "each": speedups,
    });
    let summary = |l2: &[f64]| json!({ "median": median(l2.to_vec()), "max": l2.iter().copied().fold(0.0, f64::max) });
    report["pattern_relative_l2_to_stock_abtem"] = summary(&stock_l2);
    if let Some(l2) = exact {
        report["pattern_relative_l2"] = summary(&l2);
    }
    (report, sample)
}

/// The rows of docs/benchmarks.md, from the report printed above.
fn record_rows(report: &Value, reps: usize) {
    let threads = &report["threads"];
    let mut rows = Vec::new();
    // The largest median L2 and its crystal, against exact and stock abTEM.
    let (mut worst_l2, mut worst_stock_l2): (Option<(f64, &str)>, _) = (None, None);
    for case in &CASES {
        let measured = &report["cases"][case.id];
        let number = |pointer: &str| measured.pointer(pointer).and_then(Value::as_f64).unwrap();
        let (ours, theirs) = (number("/ours/seconds_per_sample_median"), number("/abtem/seconds_per_sample_median"));
        let (speedup, lowest) = (number("/speedup/median"), number("/speedup/lowest"));
        let version = measured["abtem"]["version"].as_str().unwrap();
        let grid = case.grid;
        let figure = format!(
            "{} [001], {grid}², {} slices, {} × {} positions: {ours:.2} s",
            case.crystal, measured["slices"], case.scan, case.scan
        );
        rows.push(
            Row::new(case.id, figure)
                .peer(format!("abTEM {version} (FFTW, dask, {threads} workers): {theirs:.2} s"))
                .ratio(format!("{speedup:.2}× (lowest turn {lowest:.2}×)"))
                .target("≥ 2×", Some(speedup >= 2.0)),
        );
        for (pointer, worst) in [
            ("/pattern_relative_l2/median", &mut worst_l2),
            ("/pattern_relative_l2_to_stock_abtem/median", &mut worst_stock_l2),
        ] {
            let l2 = number(pointer);
            if worst.is_none_or(|(most, _)| l2 > most) {
                *worst = Some((l2, case.crystal));
            }
        }
    }
    if let (Some((l2, crystal)), Some((stock_l2, stock_crystal))) = (worst_l2, worst_stock_l2) {
        rows.push(
            Row::new(
                "patterns-vs-abtem",
                format!(
                    "patterns against abTEM's with exact structure factors (the same physics), relative L2 (median of a configuration's patterns), worst configuration ({crystal}): {:.2} %",
                    100.0 * l2
                ),
            )
            .target("≤ 2 %", Some(l2 <= 0.02)),
        );
        rows.push(Row::new(
            "patterns-vs-stock-abtem",
            format!(
                "patterns against stock abTEM's (atoms spread bilinearly over pixels), worst configuration ({stock_crystal}): {:.2} %",
                100.0 * stock_l2
            ),
        ));
    }
    if let Some(seconds) = report.pointer("/paper_sample/seconds").and_then(Value::as_f64) {
        rows.push(Row::new("paper-sample", format!("a paper-size sample (32 × 32 positions): {seconds:.0} s")));
    }
    bench_rows::record(
        "multislice-bench",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-simgen --bench multislice-bench"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
