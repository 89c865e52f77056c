//! Soak: stage and load in a loop on 4 ranks (2 pretend nodes) for a given
//! time, checking every byte against the manifest and recording each rank's
//! resident memory after every round. It fails if any round had an error;
//! the memory figures show whether anything grows.
//!
//! ```sh
//! STAGEHAND_SOAK_MINUTES=30 cargo bench -p stagehand-stager --bench soak
//! ```
//!
//! Each round, on every node: remove the node's destination, stage the
//! simulated CosmoFlow dataset into it (`per-node` policy, 3/4 of the files
//! per node), re-hash every staged file against the manifest, and read
//! every sample of the node's files through the loader (each record's CRC
//! checked). The stager, hasher and loader run inside the same long-lived
//! rank processes, so a leak in any of them shows as growing RSS.
//!
//! Writes `soak.json` (every round of every rank), `soak.csv` and
//! `soak-rss.svg` (RSS of each rank over time) under `STAGEHAND_SOAK_DIR`
//! (default /tmp/stagehand-soak). `STAGEHAND_SOAK_MINUTES` defaults to 1;
//! `STAGEHAND_SOAK_REDRAW=1` only redraws the SVG from an earlier soak.json.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cluster::World;
use formats::manifest::{MANIFEST_FILE, Manifest};
use formats::placement::Policy;
use loader::dataset::{CosmoTransform, CosmoflowDataset, Dataset};
use loader::pipeline::{Loader, LoaderConfig};
use mpi::traits::*;
use serde_json::{Value, json};
use stager::files::ReadMethod;
use stager::stage::{StageConfig, stage};

/// Set on the ranks: run a rank of the soak instead of launching it.
const RANK_ROLE: &str = "STAGEHAND_SOAK_RANK";
const RANKS: usize = 4;
/// Figures per rank per round, gathered to rank 0.
const FIELDS: usize = 8;

fn root_dir() -> PathBuf {
    PathBuf::from(std::env::var("STAGEHAND_SOAK_DIR").unwrap_or_else(|_| "/tmp/stagehand-soak".into()))
}

fn minutes() -> f64 {
    std::env::var("STAGEHAND_SOAK_MINUTES").ok().and_then(|m| m.parse().ok()).unwrap_or(1.0)
}

fn main() {
    if std::env::var_os(RANK_ROLE).is_some() {
        rank_main();
        return;
    }
    let root = root_dir();
    // Redraw the picture of an earlier soak from its soak.json.
    if std::env::var_os("STAGEHAND_SOAK_REDRAW").is_some() {
        let report: Value = serde_json::from_slice(&std::fs::read(root.join("soak.json")).unwrap()).unwrap();
        let rounds: Vec<Vec<f64>> = serde_json::from_value(report["rounds"].clone()).unwrap();
        let ranks = report["summary"]["ranks"].as_u64().unwrap() as usize;
        std::fs::write(root.join("soak-rss.svg"), rss_svg(&rounds, ranks)).unwrap();
        return;
    }
    std::fs::create_dir_all(&root).unwrap();
    // 12 universes of 8 samples (32³ x 4 int16, 256 KiB each): 24 MiB in 12 files.
    let source = e2e::simulated_cosmo(&root, 12, 2026);
    let this = std::env::current_exe().unwrap();
    let args = [source.to_str().unwrap(), root.to_str().unwrap()];
    let started = Instant::now();
    let out = e2e::mpirun(RANKS, &[(RANK_ROLE, "1"), ("STAGEHAND_RANKS_PER_NODE", "2")], &this, &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the soak failed after {:.0} s:\n{stderr}", started.elapsed().as_secs_f64());
    let report: Value = serde_json::from_slice(&std::fs::read(root.join("soak.json")).unwrap()).unwrap();
    println!("{}", serde_json::to_string_pretty(&report["summary"]).unwrap());
    println!("rounds, RSS per rank: {}", root.join("soak.csv").display());
    println!("RSS over time: {}", root.join("soak-rss.svg").display());
}

fn rank_main() {
    // As the stager binary does: the soak measures that process.
    cluster::allocator::map_large_blocks();
    let world = World::init().unwrap_or_else(|e| e2e::exit_with(&e.into()));
    cluster::logging::init(world.topology(), Some("warn"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (source, root) = (PathBuf::from(&args[0]), PathBuf::from(&args[1]));
    let manifest = Manifest::load(&source.join(MANIFEST_FILE)).unwrap_or_else(|e| world.fail(e));
    let t = *world.topology();
    // Index sidecars follow their sample files; the policy counts the latter.
    let policy = Policy::PerNode(manifest.files.iter().filter(|f| f.samples > 0).count() * 3 / 4);
    let config = StageConfig {
        source: source.clone(),
        dest: root.join("node{node}").to_str().unwrap().to_owned(),
        policy,
        seed: 0,
        threads: 2,
        chunk_size: 1 << 20,
        max_inflight: 32 << 20,
        naive: false,
        source_bandwidth: None,
        read_method: ReadMethod::Auto,
        recheck: false,
        order: Default::default(),
        kept: None,
    };
    let dest = root.join(format!("node{}", t.node));
    let needs = manifest.files_per_node(t.nodes, policy, 0).unwrap_or_else(|e| world.fail(e));
    let deadline = minutes() * 60.0;
    let started = Instant::now();
    // Rank 0 streams every round to a file and keeps nothing in memory: a
    // soak that kept its records would see them as growing RSS (a first
    // version did: 8762 rounds of 32 figures on every rank were the whole
    // creep it measured).
    let records = root.join("soak-rounds.f64");
    let mut out = world.is_root().then(|| std::io::BufWriter::new(std::fs::File::create(&records).unwrap()));
    for round in 0u64.. {
        if t.local_rank == 0 {
            let _ = std::fs::remove_dir_all(&dest);
        }
        world.barrier();
        let begun = Instant::now();
        let staged = stage(&world, &manifest, &config);
        let stage_secs = begun.elapsed().as_secs_f64();
        let stage_errors = u64::from(staged.is_err());
        if let Err(e) = staged {
            eprintln!("round {round}: staging failed: {e}");
        }
        // Every byte against the manifest: the node's ranks split its files.
        let mut bad_files = 0u64;
        let mut buffer = Vec::new();
        for &f in needs[t.node].iter().skip(t.local_rank).step_by(t.local_size) {
            let entry = &manifest.files[f];
            match formats::checksum::hash_file(&dest.join(&entry.path), &mut buffer) {
                Ok((bytes, sum)) if bytes == entry.bytes && sum == entry.xxh3 => {}
                other => {
                    eprintln!("round {round}: {} differs from the manifest: {other:?}", entry.path);
                    bad_files += 1;
                }
            }
        }
        let (samples, load_errors) = load_all(&dest, &manifest, &needs[t.node], &world);
        let rss = cluster::memory::current_rss_bytes().unwrap_or(0);
        let mine = [
            round as f64,
            started.elapsed().as_secs_f64(),
            stage_secs,
            stage_errors as f64,
            bad_files as f64,
            samples as f64,
            load_errors as f64,
            rss as f64,
        ];
        let root_rank = world.comm().process_at_rank(0);
        if let Some(out) = out.as_mut() {
            let mut all = vec![0f64; FIELDS * t.size];
            root_rank.gather_into_root(&mine[..], &mut all[..]);
            for v in all {
                out.write_all(&v.to_le_bytes()).unwrap();
            }
            out.flush().unwrap();
        } else {
            root_rank.gather_into(&mine[..]);
        }
        // Rank 0's clock decides, so every rank stops after the same round.
        let mut go_on = u8::from(started.elapsed().as_secs_f64() < deadline);
        world.comm().process_at_rank(0).broadcast_into(&mut go_on);
        if go_on == 0 {
            break;
        }
    }
    if world.is_root() {
        drop(out);
        let bytes = std::fs::read(&records).unwrap();
        let values: Vec<f64> = bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
        let rounds: Vec<Vec<f64>> = values.chunks_exact(FIELDS * t.size).map(<[f64]>::to_vec).collect();
        write_results(&root, &rounds, t.size, manifest.total_samples());
    }
}

/// Read every sample of the node's `files` through the loader; (samples
/// read, batches that failed).
fn load_all(dest: &Path, manifest: &Manifest, files: &[usize], world: &World) -> (u64, u64) {
    let dataset = match CosmoflowDataset::from_manifest(dest, manifest, Some(files), CosmoTransform::Log1p) {
        Ok(dataset) => Arc::new(dataset),
        Err(e) => {
            eprintln!("rank {}: opening the staged dataset: {e}", world.rank());
            return (0, 1);
        }
    };
    // The node's ranks split the samples.
    let t = world.topology();
    let order: Vec<usize> = (0..dataset.len()).skip(t.local_rank).step_by(t.local_size).collect();
    let config =
        LoaderConfig { batch: 4, workers: 2, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false };
    let (mut samples, mut errors) = (0u64, 0u64);
    let mut loader = Loader::new(dataset, order, config);
    while let Some(batch) = loader.next() {
        match batch {
            Ok(batch) => {
                samples += batch.indices.len() as u64;
                loader.recycle(batch);
            }
            Err(e) => {
                eprintln!("rank {}: loading: {e}", world.rank());
                errors += 1;
            }
        }
    }
    (samples, errors)
}

fn write_results(root: &Path, rounds: &[Vec<f64>], ranks: usize, dataset_samples: u64) {
    let field = |round: &[f64], rank: usize, i: usize| round[rank * FIELDS + i];
    let mut csv =
        String::from("round,seconds,rank,stage_seconds,stage_errors,bad_files,samples,load_errors,rss_bytes\n");
    for round in rounds {
        for rank in 0..ranks {
            let v: Vec<String> = (0..FIELDS).map(|i| field(round, rank, i).to_string()).collect();
            let _ = writeln!(csv, "{},{},{rank},{}", v[0], v[1], v[2..].join(","));
        }
    }
    std::fs::write(root.join("soak.csv"), csv).unwrap();
    let errors: f64 = rounds
        .iter()
        .flat_map(|r| (0..ranks).map(move |k| (r, k)))
        .map(|(r, k)| field(r, k, 3) + field(r, k, 4) + field(r, k, 6))
        .sum();
    // Every sample of every node is read once per round by one of its ranks.
    let short_rounds = rounds
        .iter()
        .filter(|r| (0..ranks).map(|k| field(r, k, 5)).sum::<f64>() < dataset_samples as f64 * 0.75 * 2.0)
        .count();
    let mb = |b: f64| b / f64::from(1u32 << 20);
    // Memory after the first tenth of the rounds (pools and caches warm)
    // against the last round.
    let warm = rounds.len() / 10;
    let per_rank: Vec<Value> = (0..ranks)
        .map(|k| {
            let series: Vec<f64> = rounds.iter().map(|r| field(r, k, 7)).collect();
            let max = series.iter().copied().fold(0.0, f64::max);
            json!({
                "rank": k,
                "rss_first_mb": mb(series[0]),
                "rss_after_warmup_mb": mb(series[warm]),
                "rss_last_mb": mb(series[series.len() - 1]),
                "rss_max_mb": mb(max),
                "growth_after_warmup_mb": mb(series[series.len() - 1] - series[warm]),
            })
        })
        .collect();
    let last = &rounds[rounds.len() - 1];
    let summary = json!({
        "ranks": ranks,
        "rounds": rounds.len(),
        "seconds": field(last, 0, 1),
        "errors": errors,
        "rounds_with_missing_samples": short_rounds,
        "rss": per_rank,
    });
    let report = json!({ "summary": summary, "rounds": rounds });
    std::fs::write(root.join("soak.json"), serde_json::to_vec_pretty(&report).unwrap()).unwrap();
    std::fs::write(root.join("soak-rss.svg"), rss_svg(rounds, ranks)).unwrap();
    if errors > 0.0 || short_rounds > 0 {
        eprintln!("soak: {errors} errors, {short_rounds} rounds with missing samples");
        std::process::exit(1);
    }
}

/// RSS (MiB) of each rank against time (s) as an SVG line chart with
/// ticks and a legend right of the plot: flat or growing shows at a glance.
fn rss_svg(rounds: &[Vec<f64>], ranks: usize) -> String {
    let (w, h, left, right, top, bottom) = (760.0, 380.0, 60.0, 110.0, 40.0, 50.0);
    let t_max = rounds.iter().map(|r| r[1]).fold(1.0, f64::max);
    let rss_mb = |r: &Vec<f64>, k: usize| r[k * FIELDS + 7] / f64::from(1u32 << 20);
    let m_top = rounds.iter().flat_map(|r| (0..ranks).map(move |k| rss_mb(r, k))).fold(1.0, f64::max) * 1.1;
    let x = |t: f64| left + t / t_max * (w - left - right);
    let y = |m: f64| h - bottom - m / m_top * (h - top - bottom);
    let colours = ["#1f5fc8", "#c8501f", "#2a9d4b", "#8a3fc0"];
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\">Resident memory of each rank over the soak</text>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">seconds</text>\n\
         <text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">RSS, MiB</text>\n",
        (left + w - right) / 2.0,
        (left + w - right) / 2.0,
        h - 10.0,
        (top + h - bottom) / 2.0,
        (top + h - bottom) / 2.0,
    );
    let nice = |span: f64| {
        [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 300.0, 600.0, 1200.0, 3600.0]
            .into_iter()
            .find(|step| span / step <= 8.0)
            .unwrap_or(span)
    };
    let (t_step, m_step) = (nice(t_max), nice(m_top));
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3}\" text-anchor=\"middle\">{t}</text>",
            x(t),
            top,
            h - bottom,
            h - bottom + 16.0
        );
        t += t_step;
    }
    let mut m = 0.0;
    while m <= m_top + 1e-9 {
        let _ = writeln!(
            svg,
            "<line x1=\"{left}\" y1=\"{0:.1}\" x2=\"{1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/><text x=\"{2}\" y=\"{3:.1}\" text-anchor=\"end\">{m}</text>",
            y(m),
            w - right,
            left - 6.0,
            y(m) + 4.0
        );
        m += m_step;
    }
    let _ = writeln!(
        svg,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>",
        w - left - right,
        h - top - bottom
    );
    for k in 0..ranks {
        // At most 1000 points a line: each the largest RSS of its stretch
        // of rounds, so thinning never hides growth.
        let stretch = rounds.len().div_ceil(1000).max(1);
        let points: Vec<String> = rounds
            .chunks(stretch)
            .map(|c| {
                let peak = c.iter().map(|r| rss_mb(r, k)).fold(0.0, f64::max);
                format!("{:.1},{:.1}", x(c[c.len() - 1][1]), y(peak))
            })
            .collect();
        let colour = colours[k % colours.len()];
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"/>\n\
             <text x=\"{}\" y=\"{}\" fill=\"{colour}\">rank {k}</text>",
            points.join(" "),
            w - right + 12.0,
            top + 14.0 + 18.0 * k as f64
        );
    }
    svg.push_str("</svg>\n");
    svg
}
