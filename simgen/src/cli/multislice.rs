//! `simgen multislice`: scattering samples into LMDB sample stores.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use cluster::World;
use cluster::progress::Progress;
use formats::manifest::{Dtype, Schema};
use formats::scattering::{Compression, Precision};
use simgen::multislice::crystal::{Crystal, parse_zone_axis};
use simgen::multislice::generate::{DEFAULT_PHONON_SIGMA, Mode, MultisliceConfig, Plan, Thermal, ThermalSource};
use simgen::multislice::optics::{Aberrations, Beam};
use simgen::multislice::potential::Target;
use simgen::multislice::specimen::SAMPLING_TOLERANCE;
use simgen::multislice::store::{self, StoreStats, StoreWriter};
use simgen::multislice::structure_list::{self, ListedStructure};
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
    /// One dataset over many structures and zone axes: a text file with a
    /// line per structure, a CIF path (relative to the list) or a built-in
    /// name, then the zone axes to see it along (none: --zone-axis), e.g.
    /// `cifs/mp-5229.cif 001 110`. Each (structure, axis) pair gets an equal
    /// contiguous block of the --samples; `structures.json` in the output
    /// says which samples are which.
    #[arg(long, value_name = "LIST", conflicts_with_all = ["structure", "cif"])]
    structures: Option<PathBuf>,
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
    /// the sampling used (in the report) can differ by up to
    /// --sampling-tolerance.
    #[arg(long, default_value = "0.05A")]
    sampling: String,
    /// How far the sampling fitted to whole cells may stray from --sampling,
    /// a fraction. A --structures list of many cells needs more than the
    /// default: with 0.34 every cell up to 3/4 of the field of view fits.
    #[arg(long, default_value_t = SAMPLING_TOLERANCE, value_name = "FRACTION")]
    sampling_tolerance: f64,
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
    /// axis, averaged over the element's sites); else, for a crystal of one
    /// element, that element's from Peng et al., Acta Cryst. A52 (1996) 456,
    /// Table 1 at 280 K (Si, Cu, Au among the built-ins); else 0.076A (Si's).
    /// A length (0: atoms at rest) sets every element's. The report lists
    /// each element's and where it came from.
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

/// One (structure, zone axis) pair of the run and its block of samples.
struct Pair {
    config: MultisliceConfig,
    /// The CIF path or built-in name.
    source: String,
    samples: Range<u64>,
}

impl MultisliceArgs {
    /// The run's pairs (one without --structures); every value, and every
    /// pair's layout on the grid, checked before MPI starts.
    fn pairs(&self) -> anyhow::Result<Vec<Pair>> {
        let Some(list) = &self.structures else {
            let (crystal, source) = match &self.cif {
                Some(path) => {
                    let text =
                        std::fs::read_to_string(path).with_context(|| format!("reading --cif {}", path.display()))?;
                    (simgen::multislice::cif::parse(&text, &path.display().to_string())?, path.display().to_string())
                }
                None => (Crystal::built_in(&self.structure)?, self.structure.clone()),
            };
            let config = self.config(crystal, parse_zone_axis(&self.zone_axis)?)?;
            return Ok(vec![Pair { config, source, samples: 0..self.samples }]);
        };
        let listed = structure_list::load(list, parse_zone_axis(&self.zone_axis)?)?;
        let Some(blocks) = structure_list::sample_blocks(self.samples, listed.len()) else {
            bail!(
                "--samples {} is fewer than the {} structure and zone-axis pairs of --structures {}: each needs a sample",
                self.samples,
                listed.len(),
                list.display()
            );
        };
        let mut pairs = Vec::with_capacity(listed.len());
        for (ListedStructure { crystal, source, zone }, samples) in listed.into_iter().zip(blocks) {
            let config = self.config(crystal, zone)?;
            config.layout().with_context(|| format!("--structures {}: {source} along {zone:?}", list.display()))?;
            pairs.push(Pair { config, source, samples });
        }
        Ok(pairs)
    }

    /// The configuration of one crystal along one zone axis.
    fn config(&self, crystal: Crystal, zone: [i32; 3]) -> anyhow::Result<MultisliceConfig> {
        Ok(MultisliceConfig {
            crystal,
            zone,
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
            sampling_tolerance: self.sampling_tolerance,
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
    if args.samples == 0 {
        return Err(Usage("--samples must be at least 1".into()).into());
    }
    let usage = |e: anyhow::Error| Usage(cluster::logging::chain(e.as_ref()));
    let pairs = args.pairs().map_err(usage)?;
    // The first pair's plan sets the samples' shape (every pair shares the
    // grid and scan), the previews and the report's figures.
    let first = pairs.first().ok_or_else(|| Usage("no structure to simulate".into()))?;
    let plan = first.config.clone().plan().map_err(|e| usage(e.into()))?;
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
        let mut on_sample = || {
            progress.counters().add_bytes(raw_bytes);
            progress.counters().add_item();
        };
        let mut write = || -> anyhow::Result<StoreStats> {
            let mut writer = StoreWriter::create(&out.join(&store_name), shape, (precision, compression))?;
            for (index, pair) in pairs.iter().enumerate() {
                let block = pair.samples.start.max(mine.start)..pair.samples.end.min(mine.end);
                if block.is_empty() {
                    continue;
                }
                if index == 0 {
                    writer.write(&plan, block, &pool, &mut on_sample)?;
                } else {
                    let pair_plan = pair.config.clone().plan()?;
                    writer.write(&pair_plan, block, &pool, &mut on_sample)?;
                }
            }
            Ok(writer.finish()?)
        };
        let result = write().and_then(|s| Ok((s, out_dir.describe(&format!("{store_name}/data.mdb"), &schema)?)));
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
    if args.structures.is_some() && out_dir.is_leader(&world) {
        let index: Vec<_> = pairs.iter().map(|pair| pair_json(pair, args)).collect::<anyhow::Result<_>>()?;
        let text = serde_json::to_string_pretty(&index)?;
        std::fs::write(out.join(STRUCTURE_INDEX), text)
            .with_context(|| format!("writing {}", out.join(STRUCTURE_INDEX).display()))?;
        written.push(out_dir.describe(STRUCTURE_INDEX, &schema)?);
    }
    out_dir.write_manifest(&world, schema, written)?;
    report(&world, &plan, &pairs, args, &stats, threads, started.elapsed().as_secs_f64())
}

/// With --structures: which samples are which structure, in the output.
const STRUCTURE_INDEX: &str = "structures.json";

/// What the index and the report say of one pair: where its samples are
/// and how it was laid out.
fn pair_json(pair: &Pair, args: &MultisliceArgs) -> anyhow::Result<serde_json::Value> {
    let layout = pair.config.layout()?;
    Ok(serde_json::json!({
        "structure": pair.config.crystal.name, "source": pair.source, "zone_axis": pair.config.zone,
        "samples": [pair.samples.start, pair.samples.end],
        "dx": layout.grid.dx, "dy": layout.grid.dy, "cells": layout.repeats, "cell_lengths": layout.cell.lengths,
        "phonon_sigma": thermal_json(&layout.thermal, args),
    }))
}

fn thermal_json(thermal: &[Thermal], args: &MultisliceArgs) -> serde_json::Value {
    thermal
        .iter()
        .map(|t| {
            serde_json::json!({
                "element": t.element.symbol(),
                "sigma": t.sigma,
                "source": match (t.source, args.phonon_sigma.as_str()) {
                    (ThermalSource::Crystal, _) => "cif",
                    (ThermalSource::ElementalTable, _) => "Peng et al. 1996, 280 K",
                    (ThermalSource::Given, "auto") => "default",
                    (ThermalSource::Given, _) => "--phonon-sigma",
                },
            })
        })
        .collect()
}

/// Cores for each of this node's ranks.
fn cores_per_rank(world: &World) -> usize {
    let cores = std::thread::available_parallelism().map(|c| c.get()).unwrap_or(1);
    (cores / world.topology().local_size.max(1)).max(1)
}

fn report(
    world: &World,
    plan: &Plan,
    pairs: &[Pair],
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
            // With --structures, each pair's are in the index.
            "structure": args.structures.is_none().then_some(&c.crystal.name),
            "zone_axis": args.structures.is_none().then_some(c.zone),
            "thickness": [c.thickness.0, c.thickness.1],
            "random_offset": c.random_offset,
            "volts": c.beam.volts(), "wavelength": c.beam.wavelength(), "semiangle": c.lens.semiangle,
            "defocus": c.lens.aberrations.defocus, "cs": c.lens.aberrations.cs, "c5": c.lens.aberrations.c5,
            "slice": c.slice, "scan": [c.scan.0, c.scan.1], "phonons": c.phonons,
            "phonon_sigma": thermal_json(&plan.thermal, args),
            "structures": args.structures.as_ref().map(|list| serde_json::json!({
                "list": list, "pairs": pairs.len(), "index": STRUCTURE_INDEX,
            })),
            "max_tilt": c.max_tilt, "target": format!("{:?}", c.target).to_lowercase(),
            "mode": format!("{:?}", c.mode).to_lowercase(), "dtype": format!("{:?}", args.dtype).to_lowercase(),
            "zstd": args.zstd, "seed": c.seed,
        },
    });
    args.output.write_report(&json)
}
