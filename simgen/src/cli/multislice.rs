//! `simgen multislice`: scattering samples into LMDB sample stores.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use cluster::World;
use cluster::progress::Progress;
use formats::manifest::{Dtype, Schema};
use formats::scattering::{Compression, Precision};
use simgen::multislice::crystal::{Crystal, parse_zone_axis};
use simgen::multislice::generate::{DEFAULT_PHONON_SIGMA, Mode, MultisliceConfig, Plan};
use simgen::multislice::optics::{Aberrations, Beam};
use simgen::multislice::potential::Target;
use simgen::multislice::store::{self, StoreStats};
use simgen::multislice::units;
use simgen::multislice::wave::Probe;

#[derive(Args, Debug)]
pub struct MultisliceArgs {
    #[command(flatten)]
    output: super::OutputArgs,
    /// Number of samples; divided among the ranks.
    #[arg(long)]
    samples: u64,
    /// Built-in crystal: Si, GaAs, SrTiO3, MoS2, Au, Cu.
    #[arg(long, default_value = "Si")]
    structure: String,
    /// A crystal from a CIF file instead (cell, sites, symmetry operations; any cell shape).
    #[arg(long, conflicts_with = "structure")]
    cif: Option<PathBuf>,
    /// Zone axis along the beam: three digits (001, 110) or integers (1,-1,0).
    #[arg(long, default_value = "001")]
    zone_axis: String,
    /// Largest random specimen tilt (each sample draws one uniformly in the disc), e.g. 5mrad.
    #[arg(long, default_value = "0")]
    tilt_mrad: String,
    /// Specimen thickness, or a range each sample draws from uniformly: 200A, 20nm, 150A..250A.
    #[arg(long, default_value = "200A")]
    thickness: String,
    /// Lateral offset of the crystal: random (uniform over one cell, drawn
    /// per sample) or none (the probe grid always lands on the same atoms,
    /// as when the scan is registered to the lattice).
    #[arg(long, value_enum, default_value = "random")]
    offset: OffsetArg,
    /// Accelerating voltage: 100kV .. 3MV.
    #[arg(long, default_value = "200kV")]
    energy: String,
    /// Aperture semi-angle: of the probe (cbed) or of the objective lens (hrtem).
    #[arg(long, default_value = "20mrad")]
    semiangle: String,
    /// Defocus Δf, positive = underfocus (Kirkland's sign): 700A.
    #[arg(long, default_value = "0", allow_negative_numbers = true)]
    defocus: String,
    /// Spherical aberration Cs (C30): 1.3mm.
    #[arg(long, default_value = "0", allow_negative_numbers = true)]
    cs: String,
    /// Fifth-order spherical aberration C50.
    #[arg(long, default_value = "0", allow_negative_numbers = true)]
    c5: String,
    /// Pixels per side of every potential, wave and pattern.
    #[arg(long, default_value_t = 512)]
    grid: usize,
    /// Pixel size asked for; the field of view is fitted to whole cells, so
    /// the sampling used (in the report) can differ by up to 10 %.
    #[arg(long, default_value = "0.05A")]
    sampling: String,
    /// Slice thickness asked for; the specimen is cut into equal slices as close to it as a whole number allows.
    #[arg(long, default_value = "2A")]
    slice: String,
    /// Probe positions over one cell in the middle of the field: 32x32.
    #[arg(long, default_value = "32x32")]
    scan: String,
    /// Frozen-phonon configurations averaged per sample (0: atoms at rest).
    #[arg(long, default_value_t = 0)]
    phonons: usize,
    /// RMS thermal displacement per axis, of the frozen-phonon
    /// configurations and of the thermal average the target image is.
    /// `auto`: each element's own from the --cif file's refinement
    /// (`_atom_site_U_iso_or_equiv`, or `_B_iso_or_equiv` as B/8π²; √U per
    /// axis, averaged over the element's sites), and 0.076A (Si at 300 K)
    /// for elements it gives none and for built-in structures. A length
    /// (0: atoms at rest) sets every element's. The report lists each
    /// element's and where it came from.
    #[arg(long, default_value = "auto", value_name = "auto|LENGTH")]
    phonon_sigma: String,
    /// Target image stored with each sample.
    #[arg(long, value_enum, default_value = "density")]
    target: TargetArg,
    /// cbed: a scanned probe, one pattern per position; hrtem: one plane-wave image through the objective lens.
    #[arg(long, value_enum, default_value = "cbed")]
    mode: ModeArg,
    /// Stored precision of patterns and target.
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DtypeArg,
    /// zstd-compress each stored sample.
    #[arg(long)]
    zstd: bool,
    /// Master seed: the same seed gives the same sample bytes on any number of ranks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Threads per rank (default: the cores this rank may use).
    #[arg(long)]
    threads: Option<usize>,
    /// Write PNGs of the first sample (target, and a few patterns on a log scale) into the output directory.
    #[arg(long)]
    preview: bool,
}

/// `--offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum OffsetArg {
    /// Uniform over one cell, per sample.
    Random,
    /// None.
    None,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum TargetArg {
    Density,
    Potential,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum ModeArg {
    Cbed,
    Hrtem,
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum DtypeArg {
    F32,
    F16,
}

impl MultisliceArgs {
    /// The run's configuration; every value checked before MPI starts.
    fn config(&self) -> anyhow::Result<MultisliceConfig> {
        let crystal = match &self.cif {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("reading --cif {}", path.display()))?;
                simgen::multislice::cif::parse(&text, &path.display().to_string())?
            }
            None => Crystal::built_in(&self.structure)?,
        };
        Ok(MultisliceConfig {
            crystal,
            zone: parse_zone_axis(&self.zone_axis)?,
            max_tilt: units::angle(&self.tilt_mrad)?,
            random_offset: self.offset == OffsetArg::Random,
            thickness: units::length_range(&self.thickness)?,
            beam: Beam::new(units::voltage(&self.energy)?)?,
            lens: Probe {
                semiangle: units::angle(&self.semiangle)?,
                aberrations: Aberrations {
                    defocus: units::length(&self.defocus)?,
                    cs: units::length(&self.cs)?,
                    c5: units::length(&self.c5)?,
                },
            },
            grid: self.grid,
            sampling: units::length(&self.sampling)?,
            slice: units::length(&self.slice)?,
            scan: units::scan(&self.scan)?,
            phonons: self.phonons,
            phonon_sigma: match self.phonon_sigma.as_str() {
                "auto" => DEFAULT_PHONON_SIGMA,
                length => units::length(length)?,
            },
            crystal_thermal: self.phonon_sigma == "auto",
            target: match self.target {
                TargetArg::Density => Target::Density,
                TargetArg::Potential => Target::Potential,
            },
            mode: match self.mode {
                ModeArg::Cbed => Mode::Cbed,
                ModeArg::Hrtem => Mode::Hrtem,
            },
            seed: self.seed,
        })
    }
}

/// A usage error: the caller exits 2 with it, before anything is written.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

pub fn run(args: &MultisliceArgs) -> anyhow::Result<()> {
    let plan = args
        .config()
        .and_then(|c| c.plan().map_err(anyhow::Error::from))
        .map_err(|e| Usage(cluster::logging::chain(e.as_ref())))?;
    if args.samples == 0 {
        return Err(Usage("--samples must be at least 1".into()).into());
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let (out, out_dir) = args.output.claim(&world)?;
    let shape = store::shape(&plan);
    let (precision, dtype) = match args.dtype {
        DtypeArg::F32 => (Precision::F32, Dtype::F32),
        DtypeArg::F16 => (Precision::F16, Dtype::F16),
    };
    let compression = if args.zstd { Compression::Zstd(3) } else { Compression::None };
    let schema = Schema::scattering(shape, dtype);
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mine = (rank * args.samples / size)..((rank + 1) * args.samples / size);
    let threads = args.threads.unwrap_or_else(|| cores_per_rank(&world));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let raw_bytes = (shape.cbed_len() + shape.potential_len()) as u64 * 4;
    let progress = Progress::start(&world, "simulating", args.samples * raw_bytes, args.samples);
    let started = Instant::now();
    let store_name = format!("scattering-{rank:05}.lmdb");
    let mut stats = StoreStats::default();
    let mut written = Vec::new();
    if !mine.is_empty() {
        let store_path = out.join(&store_name);
        let on_sample = || {
            progress.counters().add_bytes(raw_bytes);
            progress.counters().add_item();
        };
        let result = store::write_store(&plan, mine.clone(), &store_path, (precision, compression), &pool, on_sample)
            .map_err(anyhow::Error::from)
            .and_then(|written| Ok((written, out_dir.describe(&format!("{store_name}/data.mdb"), &schema)?)));
        match result {
            Ok((written_stats, entry)) => {
                stats = written_stats;
                written.push(entry);
            }
            Err(e) => world.fail(format!("rank {rank}: {}", cluster::logging::chain(e.as_ref()))),
        }
    }
    progress.finish();
    if args.preview && mine.start == 0 {
        match pool.install(|| super::preview::write(&plan, &out)) {
            Ok(names) => {
                for name in names {
                    written.push(out_dir.describe(&name, &schema)?);
                }
            }
            Err(e) => {
                world.fail(format!("writing previews into {}: {}", out.display(), cluster::logging::chain(e.as_ref())))
            }
        }
    }
    out_dir.write_manifest(&world, schema, written)?;
    report(&world, &plan, args, &stats, threads, started.elapsed().as_secs_f64())
}

/// Cores for each of this node's ranks.
fn cores_per_rank(world: &World) -> usize {
    let cores = std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1);
    (cores / world.topology().local_size.max(1)).max(1)
}

fn report(
    world: &World,
    plan: &Plan,
    args: &MultisliceArgs,
    stats: &StoreStats,
    threads: usize,
    seconds: f64,
) -> anyhow::Result<()> {
    let mine = [
        stats.samples as f64,
        stats.stored_bytes as f64,
        stats.fft_seconds,
        stats.setup_seconds,
        stats.scan_seconds,
        stats.slices as f64,
        cluster::memory::peak_rss_bytes() as f64,
    ];
    let Some(figures) = super::RankFigures::gather(world, &mine) else { return Ok(()) };
    let (sum, max) = (|i| figures.sum(i), |i| figures.max(i));
    let samples = sum(0).max(1.0);
    let positions = plan.positions() as f64;
    let slices_per_sample = sum(5) / samples;
    let configurations = plan.config.phonons.max(1) as f64;
    let scan_seconds = sum(4);
    let position_slices = samples * configurations * positions * slices_per_sample;
    let c = &plan.config;
    let json = serde_json::json!({
        "ranks": world.size(),
        "threads_per_rank": threads,
        "samples": sum(0),
        "positions_per_sample": positions,
        "slices_per_sample": slices_per_sample,
        "seconds": seconds,
        "seconds_per_sample": (sum(3) + sum(4)) / samples,
        "setup_seconds_per_sample": sum(3) / samples,
        "ms_per_position_slice": 1e3 * scan_seconds * threads as f64 / position_slices,
        "positions_per_second": samples * configurations * positions / seconds,
        "fft_share_of_scan": sum(2) / (scan_seconds * threads as f64).max(1e-12),
        "stored_bytes_per_sample": sum(1) / samples,
        "raw_f32_bytes_per_sample": (plan.positions() + 1) as f64 * (plan.grid.n * plan.grid.n) as f64 * 4.0,
        "peak_rss_bytes_max_rank": max(6),
        "grid": {
            "n": plan.grid.n, "dx": plan.grid.dx, "dy": plan.grid.dy,
            "cells": plan.repeats, "cell_lengths": plan.cell.lengths,
            "max_angle_mrad": 1e3 * plan.grid.max_angle(c.beam.wavelength()),
        },
        "config": {
            "structure": c.crystal.name, "zone_axis": c.zone, "thickness": [c.thickness.0, c.thickness.1],
            "random_offset": c.random_offset,
            "volts": c.beam.volts(), "wavelength": c.beam.wavelength(), "semiangle": c.lens.semiangle,
            "defocus": c.lens.aberrations.defocus, "cs": c.lens.aberrations.cs, "c5": c.lens.aberrations.c5,
            "slice": c.slice, "scan": [c.scan.0, c.scan.1], "phonons": c.phonons,
            "phonon_sigma": plan.thermal.iter().map(|t| serde_json::json!({
                "element": t.element.symbol(),
                "sigma": t.sigma,
                "source": match (t.from_crystal, args.phonon_sigma.as_str()) {
                    (true, _) => "cif",
                    (false, "auto") => "default",
                    (false, _) => "--phonon-sigma",
                },
            })).collect::<Vec<_>>(),
            "max_tilt": c.max_tilt, "target": format!("{:?}", c.target).to_lowercase(),
            "mode": format!("{:?}", c.mode).to_lowercase(), "dtype": format!("{:?}", args.dtype).to_lowercase(),
            "zstd": args.zstd, "seed": c.seed,
        },
    });
    args.output.write_report(&json)
}
