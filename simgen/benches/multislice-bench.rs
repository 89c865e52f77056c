//! `simgen multislice` benchmark: Si [001], 200 kV, 512 × 512
//! grid, 200 Å thick in equal slices of about 2 Å, an 8 × 8 scan, 20 mrad
//! probe, no phonons; against abTEM (bench/peers/abtem_multislice.py, CPU,
//! FFTW, the same thread count, imaging the very same atoms at the same
//! probe positions) in the same run, median of several runs each.
//!
//! ```sh
//! cargo bench -p stagehand-simgen --bench multislice-bench
//! ```
//! `STAGEHAND_BENCH_REPS` (default 3), `STAGEHAND_BENCH_DIR` (default
//! /tmp/stagehand-multislice-bench), `STAGEHAND_BENCH_THREADS` (default:
//! all cores), `STAGEHAND_BENCH_PAPER=1` also times one sample of the
//! paper's size (32 × 32 positions) for the cost per node-hour.
//!
//! Reports milliseconds per probe position and slice, the FFT share, peak
//! memory, positions per second for both codes and their ratio, the
//! patterns' agreement (relative L2 after normalising each pattern), and
//! the bytes of one sample stored as f32 and as f16 + zstd.

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

fn config(scan: usize) -> MultisliceConfig {
    MultisliceConfig {
        random_offset: true,
        crystal: Crystal::built_in("Si").unwrap(),
        zone: [0, 0, 1],
        max_tilt: 0.0,
        thickness: (200.0, 200.0),
        beam: Beam::new(200e3).unwrap(),
        lens: Probe { semiangle: 0.020, aberrations: Aberrations::default() },
        grid: 512,
        sampling: 0.05,
        sampling_tolerance: simgen::multislice::specimen::SAMPLING_TOLERANCE,
        slice: 2.0,
        scan: (scan, scan),
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

fn abtem(dir: &Path, threads: usize, reps: usize) -> Option<Value> {
    let out = e2e::peer_command("abtem_multislice.py")?
        .args([dir.to_str().unwrap(), &threads.to_string(), &reps.to_string()])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("abTEM peer failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last()?).ok()
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
    let plan = config(8).plan().unwrap();
    let n = plan.grid.n;
    let (mut walls, mut per_position_slice, mut fft_share, mut setups) = (vec![], vec![], vec![], vec![]);
    let mut last = None;
    let mut peer = Vec::new();
    for rep in 0..reps {
        let (wall, sample) = timed(&plan, &pool);
        let positions = plan.positions() as f64;
        walls.push(wall);
        setups.push(sample.setup_time.as_secs_f64());
        per_position_slice.push(sample.scan_time.as_secs_f64() * threads as f64 / (positions * sample.slices as f64));
        fft_share.push(sample.fft_time.as_secs_f64() / (sample.scan_time.as_secs_f64() * threads as f64));
        eprintln!("rep {rep}: ours {wall:.2} s ({} slices)", sample.slices);
        if rep == 0 {
            write_inputs(&dir, &plan, &sample);
        }
        // The peer alternates with us, one scan a turn, so both see the same machine.
        if let Some(r) = abtem(&dir, threads, 1) {
            eprintln!("rep {rep}: abTEM {:.2} s", r["seconds_median"].as_f64().unwrap());
            peer.push(r);
        }
        last = Some(sample);
    }
    let sample = last.unwrap();
    let positions = plan.positions() as f64;
    let ours_pps = positions / median(walls.clone());
    let shape = ScatteringShape { positions: positions as u32, height: n as u32, width: n as u32 };
    let f32_bytes = scattering::encode(shape, &sample.cbed, &sample.target, Precision::F32, Compression::None).unwrap();
    let f16_bytes =
        scattering::encode(shape, &sample.cbed, &sample.target, Precision::F16, Compression::Zstd(3)).unwrap();
    let mut report = json!({
        "case": "Si [001], 200 kV, 512x512, 200 A in 2 A slices, 8x8 scan, 20 mrad, no phonons",
        "threads": threads,
        "reps": reps,
        "sampling_angstrom": plan.grid.dx,
        "slices": sample.slices,
        "ours": {
            "seconds_per_sample_median": median(walls.clone()),
            "setup_seconds_median": median(setups),
            "positions_per_second": ours_pps,
            "ms_per_position_slice": 1e3 * median(per_position_slice),
            "fft_share_of_scan": median(fft_share),
            "peak_rss_mib": cluster::memory::peak_rss_bytes() as f64 / f64::from(1u32 << 20),
        },
        "stored_bytes_per_sample": { "f32": f32_bytes.len(), "f16_zstd": f16_bytes.len(),
            "ratio": f16_bytes.len() as f64 / f32_bytes.len() as f64 },
    });
    if !peer.is_empty() {
        let peer_seconds = median(peer.iter().map(|r| r["seconds_median"].as_f64().unwrap()).collect());
        let peer_pps = positions / peer_seconds;
        let shape: Vec<usize> =
            peer[0]["pattern_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let theirs: Vec<f32> = std::fs::read(dir.join("abtem_patterns.f32"))
            .unwrap()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let l2 = agreement(&sample.cbed, n, &theirs, [shape[0], shape[1], shape[2]]);
        report["abtem"] = json!({
            "seconds_per_sample_median": peer_seconds,
            "positions_per_second": peer_pps,
            "slices": peer[0]["slices"], "version": peer[0]["abtem"], "pattern_shape": shape,
        });
        report["ratio_positions_per_second"] = json!(ours_pps / peer_pps);
        report["pattern_relative_l2"] = json!({
            "median": median(l2.clone()), "max": l2.iter().copied().fold(0.0, f64::max),
        });
    } else {
        eprintln!("SKIPPED the abTEM comparison: the peer did not run (see above); no rows recorded");
    }
    if std::env::var_os("STAGEHAND_BENCH_PAPER").is_some() {
        let paper = config(32).plan().unwrap();
        let (wall, _) = timed(&paper, &pool);
        report["paper_sample"] = json!({
            "case": "32x32 positions, 512x512, 200 A, Si [001], 200 kV",
            "seconds": wall,
            "samples_per_node_hour": 3600.0 / wall,
        });
    }
    let text = serde_json::to_string_pretty(&report).unwrap();
    println!("{text}");
    std::fs::write(dir.join("report.json"), text).unwrap();
    if !peer.is_empty() {
        record_rows(&report, reps);
    }
}

/// The rows of docs/benchmarks.md, from the report printed above.
fn record_rows(report: &serde_json::Value, reps: usize) {
    let number = |pointer: &str| report.pointer(pointer).and_then(serde_json::Value::as_f64).unwrap();
    let (ours, theirs) = (number("/ours/seconds_per_sample_median"), number("/abtem/seconds_per_sample_median"));
    let speedup = number("/ratio_positions_per_second");
    let l2 = number("/pattern_relative_l2/median");
    let version = report["abtem"]["version"].as_str().unwrap();
    let threads = &report["threads"];
    let mut rows = vec![
        Row::new("sample-vs-abtem", format!("one 64-position sample, 512², {} slices: {ours:.2} s", report["slices"]))
            .peer(format!("abTEM {version} (FFTW, dask, {threads} workers): {theirs:.2} s"))
            .ratio(format!("{speedup:.2}×"))
            .target("≥ 2×", Some(speedup >= 2.0)),
        Row::new("patterns-vs-abtem", format!("patterns against abTEM's, relative L2 (median): {:.2} %", 100.0 * l2))
            .target("≤ 2 %", Some(l2 <= 0.02)),
    ];
    if let Some(seconds) = report.pointer("/paper_sample/seconds").and_then(serde_json::Value::as_f64) {
        rows.push(Row::new("paper-sample", format!("a paper-size sample (32 × 32 positions): {seconds:.0} s")));
    }
    bench_rows::record(
        "multislice-bench",
        &format!("STAGEHAND_BENCH_REPS={reps} cargo bench -p stagehand-simgen --bench multislice-bench"),
        &rows,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}
