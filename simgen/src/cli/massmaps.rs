//! `simgen massmaps`: CosmoGAN's training maps, projected matter densities
//! cut from simulated boxes, as (N, S, S) float32 `.npy` files, with the
//! dataset's power spectrum and pixel histogram in `statistics.json`.

use std::time::Instant;

use anyhow::Context;
use clap::Args;
use cluster::World;
use cluster::progress::Progress;
use formats::manifest::Schema;
use formats::massmaps::statistics::{PixelHistogram, SpectrumEstimator, to_unit};
use formats::massmaps::write_maps;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use simgen::climate::generate::is_validation;
use simgen::cosmo::fft3::Fft3;
use simgen::cosmo::maps::{MapsConfig, PLANCK_2015};
use simgen::heatmap::{Axes, Axis, Heatmap, Scale};

use super::multislice::Usage;

/// The file of the dataset's statistics, beside `train/` and `validation/`.
pub const STATISTICS_FILE: &str = "statistics.json";

#[derive(Args, Debug)]
pub struct MassMapsArgs {
    #[command(flatten)]
    output: super::OutputArgs,
    /// Number of maps; whole files of --per-file maps are divided among the ranks.
    #[arg(long)]
    maps: u64,
    /// Map side in pixels (CosmoGAN: 256); each box is simulated on a grid of this side.
    #[arg(long, default_value_t = 256)]
    size: usize,
    /// Particles per side of each box (default: --size, one per cell).
    #[arg(long)]
    particles: Option<usize>,
    /// Box side in Mpc/h (default: 2 Mpc/h per pixel).
    #[arg(long)]
    box_size: Option<f64>,
    /// Cells per slab along the projected axis (default: --size / 8); a box gives 3 × size/depth maps.
    #[arg(long)]
    depth: Option<usize>,
    /// Redshift of the maps.
    #[arg(long, default_value_t = 0.0)]
    redshift: f64,
    /// Order of Lagrangian perturbation theory (1: Zel'dovich, 2: 2LPT).
    #[arg(long, default_value_t = 2)]
    lpt: u8,
    /// Particle-mesh steps after 2LPT from z = 9 (0: the maps are 2LPT's).
    #[arg(long, default_value_t = 0)]
    steps: usize,
    /// Ω_m of every box (default: Planck 2015).
    #[arg(long, default_value_t = PLANCK_2015[0])]
    omega_m: f64,
    /// σ8 of every box.
    #[arg(long, default_value_t = PLANCK_2015[1])]
    sigma8: f64,
    /// n_s of every box.
    #[arg(long, default_value_t = PLANCK_2015[2])]
    n_s: f64,
    /// h of every box.
    #[arg(long, default_value_t = PLANCK_2015[3])]
    hubble: f64,
    /// Maps per .npy file (the last may hold fewer); a multiple of the maps per box wastes no box.
    #[arg(long, default_value_t = 192)]
    per_file: u64,
    /// Fraction of the files in `validation/` (spread evenly over the files).
    #[arg(long, default_value_t = 0.1)]
    val_fraction: f64,
    /// Master seed: the same seed gives byte-identical files on any number of ranks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also draw the first eight maps as a PNG.
    #[arg(long)]
    preview: bool,
}

impl MassMapsArgs {
    fn config(&self) -> Result<MapsConfig, Usage> {
        if self.maps == 0 || self.per_file == 0 {
            return Err(Usage("--maps and --per-file must be at least 1".into()));
        }
        if !(0.0..1.0).contains(&self.val_fraction) {
            return Err(Usage(format!("--val-fraction {} must be in [0, 1)", self.val_fraction)));
        }
        let config = MapsConfig {
            side: self.size,
            particles: self.particles.unwrap_or(self.size),
            box_size: self.box_size.unwrap_or(2.0 * self.size as f64),
            depth: self.depth.unwrap_or((self.size / 8).max(1)),
            redshift: self.redshift,
            lpt: self.lpt,
            steps: self.steps,
            cosmology: [self.omega_m, self.sigma8, self.n_s, self.hubble],
            seed: self.seed,
        };
        config.check().map_err(Usage)?;
        Ok(config)
    }
}

/// Where file `file` goes: `train/maps-00003.npy` or `validation/...`.
fn file_path(file: u64, val_fraction: f64) -> String {
    let split = if is_validation(file, val_fraction) { "validation" } else { "train" };
    format!("{split}/maps-{file:05}.npy")
}

/// One file's maps' power spectrum, pixel histogram and moments, summed
/// map by map in order.
struct Sums {
    power: Vec<f64>,
    histogram: PixelHistogram,
    /// [maps, Σ x, Σ x²]
    moments: [f64; 3],
}

impl Sums {
    fn new(side: usize) -> Self {
        Sums { power: vec![0.0; side / 2], histogram: PixelHistogram::default(), moments: [0.0; 3] }
    }

    fn add(&mut self, map: &[f32], spectrum: &mut SpectrumEstimator) {
        spectrum.add(map, &mut self.power);
        for &x in map {
            self.histogram.add(to_unit(x));
            self.moments[1] += f64::from(x);
            self.moments[2] += f64::from(x) * f64::from(x);
        }
        self.moments[0] += 1.0;
    }

    /// [moments, power by ring, histogram counts]
    fn row(&self) -> Vec<f64> {
        self.moments.iter().chain(&self.power).chain(self.histogram.counts()).copied().collect()
    }
}

/// Every file's [`Sums::row`] summed in file order, on every rank, so the
/// statistics are the same bytes on any number of ranks. Collective:
/// `rows` holds this rank's files' rows (zeros elsewhere); every slot has
/// one writer, so the reduction adds zeros only and is exact.
fn in_file_order(world: &World, rows: &[f64], len: usize) -> Vec<f64> {
    let mut all = vec![0f64; rows.len()];
    world.comm().all_reduce_into(rows, &mut all[..], SystemOperation::sum());
    let mut total = vec![0f64; len];
    for row in all.chunks_exact(len) {
        total.iter_mut().zip(row).for_each(|(t, v)| *t += v);
    }
    total
}

pub fn run(args: &MassMapsArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    let side = config.side;
    let needed = config.memory_bytes() + (args.per_file.min(args.maps) as usize * side * side * 4) as f64;
    let what =
        format!("a box of {}³ particles on a {side}³ grid with files of {} maps", config.particles, args.per_file);
    if let Some(reason) = cluster::memory::shortfall(needed, &what) {
        return Err(Usage(format!("{reason}: lower --particles, --size or --per-file")).into());
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let (out, out_dir) = args.output.claim(&world)?;
    let schema = Schema::massmaps(side);
    for split in ["train", "validation"] {
        std::fs::create_dir_all(out.join(split)).with_context(|| format!("creating {}", out.join(split).display()))?;
    }
    let files = args.maps.div_ceil(args.per_file);
    let per_box = config.maps_per_box() as u64;
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let map_bytes = (side * side * 4) as u64;
    let progress = Progress::start(&world, "generating", args.maps * map_bytes, args.maps);
    let started = Instant::now();
    let mut fft = Fft3::new(config.particles);
    let mut written = Vec::new();
    let mut spectrum = SpectrumEstimator::new(side);
    let row_len = Sums::new(side).row().len();
    let mut rows = vec![0f64; files as usize * row_len];
    // [boxes simulated, seconds simulating, seconds writing]
    let mut figures = [0f64; 3];
    // The last box simulated: a file's maps may start in the box the
    // previous file of this rank ended in.
    let mut current: Option<(u64, Vec<Vec<f32>>)> = None;
    for file in (0..files).filter(|f| f % size == rank) {
        let maps = (file * args.per_file)..((file + 1) * args.per_file).min(args.maps);
        let mut data = Vec::with_capacity((maps.end - maps.start) as usize * side * side);
        let mut sums = Sums::new(side);
        let t = Instant::now();
        for index in maps {
            let box_index = index / per_box;
            if current.as_ref().is_none_or(|(b, _)| *b != box_index) {
                current = Some((box_index, config.box_maps(box_index as usize, &mut fft)));
                figures[0] += 1.0;
            }
            let Some((_, box_maps)) = &current else { continue };
            let map = &box_maps[(index % per_box) as usize];
            sums.add(map, &mut spectrum);
            data.extend_from_slice(map);
            progress.counters().add_bytes(map_bytes);
            progress.counters().add_item();
        }
        rows[file as usize * row_len..(file as usize + 1) * row_len].copy_from_slice(&sums.row());
        figures[1] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let rel = file_path(file, args.val_fraction);
        if args.preview && file == 0 {
            match preview(&data, side, &out.join("preview.png"))
                .and_then(|()| Ok(out_dir.describe("preview.png", &schema)?))
            {
                Ok(entry) => written.push(entry),
                Err(e) => world.fail(format!("writing preview.png: {}", cluster::logging::chain(e.as_ref()))),
            }
        }
        let result = write_maps(&out.join(&rel), side, &data)
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(out_dir.describe(&rel, &schema)?));
        match result {
            Ok(entry) => written.push(entry),
            Err(e) => {
                world.fail(format!("writing {}: {}", out.join(&rel).display(), cluster::logging::chain(e.as_ref())))
            }
        }
        figures[2] += t.elapsed().as_secs_f64();
    }
    progress.finish();
    let all = in_file_order(&world, &rows, row_len);
    let statistics = statistics_json(&config, &all);
    if out_dir.is_leader(&world) {
        let text = serde_json::to_vec_pretty(&statistics)?;
        let path = out.join(STATISTICS_FILE);
        match formats::atomic::write_durably(&path, &text)
            .map_err(anyhow::Error::from)
            .and_then(|()| Ok(out_dir.describe(STATISTICS_FILE, &schema)?))
        {
            Ok(entry) => written.push(entry),
            Err(e) => world.fail(format!("writing {}: {}", path.display(), cluster::logging::chain(e.as_ref()))),
        }
    }
    out_dir.write_manifest(&world, schema, written)?;
    let Some(ranks) = super::RankFigures::gather(&world, &figures) else { return Ok(()) };
    let seconds = started.elapsed().as_secs_f64();
    let json = serde_json::json!({
        "ranks": world.size(),
        "maps": args.maps,
        "files": files,
        "map": [side, side],
        "maps_per_box": per_box,
        "boxes_simulated": ranks.sum(0),
        "physics": config,
        "pixel_mpc_per_h": config.pixel_size(),
        "slab_mpc_per_h": config.pixel_size() * config.depth as f64,
        "pixel_mean": statistics["pixel_mean"],
        "pixel_std": statistics["pixel_std"],
        "seconds": seconds,
        "maps_per_second": args.maps as f64 / seconds,
        "simulating_seconds": ranks.sum(1),
        "writing_seconds": ranks.sum(2),
    });
    args.output.write_report(&json)
}

/// The dataset's statistics from the sums over every file ([`in_file_order`]).
fn statistics_json(config: &MapsConfig, all: &[f64]) -> serde_json::Value {
    let rings = config.side / 2;
    let maps = all[0].max(1.0);
    let mean = all[1] / (maps * (config.side * config.side) as f64);
    let variance = all[2] / (maps * (config.side * config.side) as f64) - mean * mean;
    let pixel = config.pixel_size();
    let two_pi = 2.0 * std::f64::consts::PI;
    let spectrum: Vec<serde_json::Value> = (1..=rings)
        .map(|m| {
            let power = all[3 + m - 1] / maps;
            serde_json::json!({
                "ring": m,
                "k_h_per_mpc": two_pi * m as f64 / config.box_size,
                "power_pixels": power,
                "power_mpc2_per_h2": power * pixel * pixel,
            })
        })
        .collect();
    let counts = &all[3 + rings..];
    let total: f64 = counts.iter().sum::<f64>().max(1.0);
    let histogram: Vec<serde_json::Value> = PixelHistogram::edges()
        .iter()
        .zip(counts)
        .map(|(&(s, x), &c)| serde_json::json!({"s_from": s, "density_from": x, "fraction": c / total}))
        .collect();
    serde_json::json!({
        "maps": all[0],
        "side": config.side,
        "pixel_mpc_per_h": pixel,
        "pixel_mean": mean,
        "pixel_std": variance.max(0.0).sqrt(),
        "transform": "s = 2x/(x + 4) - 1",
        "power_spectrum": spectrum,
        "pixel_histogram": histogram,
    })
}

/// The first (up to) eight maps of `data` side by side, on a logarithmic
/// scale.
fn preview(data: &[f32], side: usize, path: &std::path::Path) -> anyhow::Result<()> {
    let shown = (data.len() / (side * side)).min(8);
    let mut wide = vec![0f32; side * shown * side];
    for m in 0..shown {
        for row in 0..side {
            let from = &data[(m * side + row) * side..(m * side + row + 1) * side];
            wide[row * shown * side + m * side..row * shown * side + (m + 1) * side].copy_from_slice(from);
        }
    }
    Heatmap {
        title: "mass maps: projected density over the mean",
        unit: "ρ/ρ̄",
        scale: Scale::Log { decades: 3 },
        axes: Some(Axes {
            x: Axis { label: "maps side by side", range: (0.0, shown as f64) },
            y: Axis { label: "pixels", range: (0.0, side as f64) },
        }),
        outlines: None,
    }
    .write(&wide, (side, shown * side), path)?;
    Ok(())
}
