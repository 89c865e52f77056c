//! `simgen`: generate physics training data straight into (node-local) storage.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use cluster::World;
use cluster::progress::Progress;
use formats::cosmoflow::{CosmoSample, CosmoShape};
use formats::manifest::Schema;
use formats::tfrecord::TfRecordFile;
use mpi::traits::*;
use simgen::cosmo::assign::Assignment;
use simgen::cosmo::cosmology::EARLIEST_REDSHIFT;
use simgen::cosmo::fft3::Fft3;
use simgen::cosmo::generate::{
    CosmoConfig, PARAMETER_NAMES, Priors, WriteStats, cosmology_of, generate_box, write_files,
};
use simgen::cosmo::halofit::Halofit;
use simgen::cosmo::pk::{density_contrast, modes_of, power_spectrum};
use simgen::cosmo::transfer::Transfer;
use simgen::image;

mod cli;

/// Generate physics training data, on one rank or under mpirun/srun.
#[derive(Parser, Debug)]
#[command(version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Dark-matter volumes for CosmoFlow (Lagrangian perturbation theory) as TFRecords plus a manifest.
    Cosmo(CosmoArgs),
    /// Climate fields (16 CAM5 channels) with cyclone and atmospheric-river masks, in the DeepCAM HDF5 layout.
    Climate(Box<cli::climate::ClimateArgs>),
    /// Electron scattering by multislice: CBED stacks (or HRTEM images) of crystals and their projected density, into LMDB.
    Multislice(Box<cli::multislice::MultisliceArgs>),
    /// Execution traces of a tau-decay simulator observed by a calorimeter, sorted by trace type into LMDB (Etalumis).
    Traces(Box<cli::traces::TracesArgs>),
    /// Collision events (gluino pairs against QCD multi-jet, with pile-up) as ECAL/HCAL/track images, in the HEP-CNN HDF5 layout.
    Jets(Box<cli::jets::JetsArgs>),
    /// Projected matter-density maps cut from simulated boxes at one cosmology, as CosmoGAN's .npy training maps.
    Massmaps(Box<cli::massmaps::MassMapsArgs>),
    /// Serve the tau simulator over PPX (pyprob's protocol), so pyprob or `--ppx` clients can put it under inference.
    PpxServe(cli::ppx_serve::PpxServeArgs),
    /// Measure P(k) of one channel of one sample of a CosmoFlow TFRecord file and compare with linear theory.
    Pk(PkArgs),
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum Scheme {
    /// Nearest grid point (CosmoFlow's histograms).
    Ngp,
    /// Cloud in cell.
    Cic,
}

impl From<Scheme> for Assignment {
    fn from(s: Scheme) -> Self {
        match s {
            Scheme::Ngp => Assignment::Ngp,
            Scheme::Cic => Assignment::Cic,
        }
    }
}

#[derive(ValueEnum, Debug, Clone, Copy)]
enum PriorChoice {
    /// CosmoFlow's narrow ranges: Ω_m 0.25-0.35, σ8 0.78-0.95, n_s 0.9-1.0, h 0.65-0.75.
    Cosmoflow,
    /// The Quijote Latin hypercube: Ω_m 0.1-0.5, σ8 0.6-1.0, n_s 0.8-1.2, h 0.5-0.9.
    Quijote,
}

impl From<PriorChoice> for Priors {
    fn from(p: PriorChoice) -> Self {
        match p {
            PriorChoice::Cosmoflow => Priors::CosmoFlow,
            PriorChoice::Quijote => Priors::Quijote,
        }
    }
}

#[derive(Args, Debug)]
struct CosmoArgs {
    #[command(flatten)]
    output: cli::OutputArgs,
    /// Number of boxes (each gives split³ samples); divided among the ranks.
    #[arg(long)]
    boxes: usize,
    /// Count grid per side of a box.
    #[arg(long, default_value_t = 256)]
    grid: usize,
    /// Particles per side of a box.
    #[arg(long, default_value_t = 256)]
    particles: usize,
    /// Box side in Mpc/h.
    #[arg(long, default_value_t = 512.0)]
    box_size: f64,
    /// Sub-volumes per side: a box becomes split³ samples of (grid/split)³.
    #[arg(long, default_value_t = 2)]
    split: usize,
    /// Redshifts, one channel each.
    #[arg(long, value_delimiter = ',', default_value = "0,0.5,1.5,3")]
    redshifts: Vec<f64>,
    /// 1 = Zel'dovich, 2 = second-order LPT.
    #[arg(long, default_value_t = 2)]
    lpt: u8,
    /// Particle-mesh N-body steps after the LPT initial conditions (0: the
    /// boxes are LPT's). Steps are even in the scale factor from
    /// --start-redshift to the latest redshift, with FastPM's kick and
    /// drift factors (Feng et al. 2016); ten take the halo scales most of
    /// the way from 2LPT to the nonlinear spectrum. Each costs about four
    /// FFTs of --particles³ and two passes over the particles.
    #[arg(long, default_value_t = 0)]
    steps: usize,
    /// Redshift of the LPT initial conditions the steps start from;
    /// channels at this redshift or earlier are LPT's.
    #[arg(long, default_value_t = simgen::cosmo::generate::DEFAULT_START_REDSHIFT, allow_negative_numbers = true)]
    start_redshift: f64,
    /// Master seed: the same seed gives byte-identical files on any number of ranks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Samples per TFRecord file.
    #[arg(long, default_value_t = 8)]
    samples_per_file: usize,
    /// GZIP-compress the files (`.tfrecord.gz`).
    #[arg(long)]
    gzip: bool,
    /// Mass assignment. Only `ngp` is written: CosmoFlow's samples hold
    /// int16 counts, which CIC's fractional counts would be rounded to
    /// (losing mass), so `cic` is refused.
    #[arg(long, value_enum, default_value = "ngp")]
    assignment: Scheme,
    /// Ranges the target parameters are drawn from (uniformly); `y` maps them to [-1, 1].
    #[arg(long, value_enum, default_value = "cosmoflow")]
    priors: PriorChoice,
    /// Matter transfer function: `eisenstein-hu` (Eisenstein & Hu 1998
    /// with baryon acoustic oscillations), `no-wiggle` (their smooth form),
    /// or the path of a table from CAMB (`transfer_filename`, column 7
    /// `total`) or CLASS (`format = class`, column `d_m`). A table was
    /// computed for one cosmology: every box takes its shape, with its own
    /// σ8, n_s and growth.
    #[arg(long, default_value = "eisenstein-hu", value_name = "eisenstein-hu|no-wiggle|FILE")]
    transfer: String,
    /// Write PNG slices of the first box (log counts, axes in Mpc/h), one per redshift, into the output directory.
    #[arg(long)]
    preview: bool,
}

#[derive(Args, Debug)]
struct PkArgs {
    /// A CosmoFlow TFRecord file (plain or GZIP).
    #[arg(long)]
    input: PathBuf,
    /// Sample (record) in the file.
    #[arg(long, default_value_t = 0)]
    sample: usize,
    /// Channel (redshift index).
    #[arg(long, default_value_t = 0)]
    channel: usize,
    /// Redshift of that channel (for the theory curve).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    redshift: f64,
    /// Side of the sample's volume in Mpc/h (box size / split).
    #[arg(long, default_value_t = 256.0, allow_negative_numbers = true)]
    size: f64,
    /// Divide by the mass-assignment window of this scheme.
    #[arg(long, value_enum)]
    compensate: Option<Scheme>,
    /// The priors the file was generated with (to read its parameters back from `y`).
    #[arg(long, value_enum, default_value = "cosmoflow")]
    priors: PriorChoice,
    /// The transfer function of the theory curve (as `simgen cosmo --transfer`).
    #[arg(long, default_value = "eisenstein-hu", value_name = "eisenstein-hu|no-wiggle|FILE")]
    transfer: String,
    /// Write a log-log PNG of the measured P(k) against linear theory, with the shot-noise level.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn main() {
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        cluster::logging::exit_on_usage(&e.render().to_string(), e.exit_code(), || drop(e.print()))
    });
    let result = match cli.command {
        Command::Cosmo(args) => cosmo(&args),
        Command::Pk(args) => pk(&args),
        Command::Multislice(args) => cli::multislice::run(&args),
        Command::Climate(args) => cli::climate::run(&args),
        Command::Traces(args) => cli::traces::run(&args),
        Command::Jets(args) => cli::jets::run(&args),
        Command::Massmaps(args) => cli::massmaps::run(&args),
        Command::PpxServe(args) => cli::ppx_serve::run(&args),
    };
    if let Err(e) = result {
        // Bad arguments exit 2, as clap's own usage errors do, and are
        // printed once: every rank found the same.
        let usage = e.downcast_ref::<cli::multislice::Usage>().is_some();
        let line = cluster::logging::chain(e.as_ref());
        if usage {
            cluster::logging::print_error_once(line);
        } else {
            cluster::logging::print_error(line);
        }
        std::process::exit(if usage { 2 } else { 1 });
    }
}

fn cosmo(args: &CosmoArgs) -> anyhow::Result<()> {
    let config = CosmoConfig {
        boxes: args.boxes,
        grid: args.grid,
        particles: args.particles,
        box_size: args.box_size,
        split: args.split,
        redshifts: args.redshifts.clone(),
        lpt: args.lpt,
        seed: args.seed,
        assignment: args.assignment.into(),
        samples_per_file: args.samples_per_file,
        gzip: args.gzip,
        priors: args.priors.into(),
        transfer: Transfer::from_argument(&args.transfer)?,
        steps: args.steps,
        start_redshift: args.start_redshift,
    };
    config.check().map_err(cli::multislice::Usage)?;
    // Before MPI starts, so a size the machine cannot hold fails with one
    // line instead of an allocation failure on every rank.
    let what = format!("--particles {} with --grid {}", config.particles, config.grid);
    if let Some(reason) = cluster::memory::shortfall(config.memory_bytes(), &what) {
        bail!(reason);
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let (out, out_dir) = args.output.claim(&world)?;
    let schema = Schema::cosmoflow(config.shape());
    let mut written = Vec::new();
    let started = Instant::now();
    let (rank, size) = (world.rank(), world.size());
    let files = config.files();
    // Contiguous runs of files per rank, so a box shared by two files is
    // usually generated once.
    let mine = (rank * files / size)..((rank + 1) * files / size);
    let sample_bytes = config.shape().x_bytes() as u64;
    let progress = Progress::start(&world, "generating", config.samples() as u64 * sample_bytes, files as u64);
    let described = write_files(&config, &out, mine, |_, names| -> anyhow::Result<()> {
        // The file and its index sidecar (`<file>.idx`), which the loader uses.
        for rel in &names {
            written.push(out_dir.describe(rel, &schema)?);
        }
        progress.counters().add_bytes(config.samples_per_file as u64 * sample_bytes);
        progress.counters().add_item();
        Ok(())
    });
    let stats = match described {
        Ok(stats) => stats,
        Err(e) => world.fail(format!("writing into {}: {}", out.display(), cluster::logging::chain(e.as_ref()))),
    };
    progress.finish();
    let mut fft = Fft3::new(config.particles);
    if args.preview && rank == 0 {
        let generated = generate_box(&config, 0, &mut fft, true);
        for (grid, z) in generated.grids.iter().zip(&config.redshifts) {
            let name = format!("preview_box0_z{z}.png");
            let path = out.join(&name);
            let title = format!("box 0 at z = {z}: middle slice of {}³ cells", config.grid);
            let described = image::slice_preview(grid, config.grid, config.box_size, &title, &path)
                .map_err(|e| e.to_string())
                .and_then(|()| out_dir.describe(&name, &schema).map_err(|e| e.to_string()));
            match described {
                Ok(entry) => written.push(entry),
                Err(e) => world.fail(format!("writing {}: {e}", path.display())),
            }
        }
    }
    out_dir.write_manifest(&world, schema, written)?;
    report(&world, &config, &stats, started.elapsed().as_secs_f64(), &args.output)
}

fn report(
    world: &World,
    config: &CosmoConfig,
    stats: &WriteStats,
    seconds: f64,
    output: &cli::OutputArgs,
) -> anyhow::Result<()> {
    let mine = [
        stats.boxes as f64,
        stats.files as f64,
        stats.bytes as f64,
        stats.saturated as f64,
        stats.fft_seconds,
        stats.box_seconds,
    ];
    let mut all = vec![0f64; 6 * world.size()];
    world.comm().all_gather_into(&mine[..], &mut all[..]);
    if !world.is_root() {
        return Ok(());
    }
    let sum = |i: usize| all.iter().skip(i).step_by(6).sum::<f64>();
    let boxes = sum(0);
    let json = serde_json::json!({
        "ranks": world.size(),
        "boxes": config.boxes,
        "boxes_generated": boxes,
        "samples": config.samples(),
        "files": sum(1),
        "bytes": sum(2),
        "saturated_voxels": sum(3),
        "seconds": seconds,
        "seconds_per_box": if boxes > 0.0 { sum(5) / boxes } else { 0.0 },
        "fft_seconds_per_box": if boxes > 0.0 { sum(4) / boxes } else { 0.0 },
        "peak_rss_bytes": cluster::memory::peak_rss_bytes(),
        "config": {
            "grid": config.grid, "particles": config.particles, "box_size": config.box_size, "split": config.split,
            "redshifts": config.redshifts, "lpt": config.lpt, "seed": config.seed,
            "steps": config.steps, "start_redshift": config.start_redshift,
            "samples_per_file": config.samples_per_file, "gzip": config.gzip,
            "priors": config.priors.name(),
            "transfer": config.transfer.name(),
            "parameters": PARAMETER_NAMES.iter().zip(config.priors.ranges())
                .map(|(name, (lo, hi))| serde_json::json!({ "name": name, "low": lo, "high": hi }))
                .collect::<Vec<_>>(),
        },
    });
    output.write_report(&json)
}

fn pk(args: &PkArgs) -> anyhow::Result<()> {
    // The same redshifts `simgen cosmo` accepts; a negative one used to give
    // a NaN growth factor and a theory column of NaN.
    if !(args.redshift >= 0.0 && args.redshift <= EARLIEST_REDSHIFT) {
        bail!("--redshift {} must be a number from 0 to {EARLIEST_REDSHIFT}", args.redshift);
    }
    if !(args.size > 0.0 && args.size.is_finite()) {
        bail!("--size {} must be the sample's side in Mpc/h, a finite number > 0", args.size);
    }
    let file = TfRecordFile::open(&args.input).with_context(|| format!("opening {}", args.input.display()))?;
    let Some(record) = file.records().nth(args.sample) else {
        bail!("{} has no sample {}", args.input.display(), args.sample);
    };
    let record = record?;
    let shape = sniff_shape(record.data)?;
    if args.channel >= shape.channels {
        bail!("sample has {} channels; --channel {} is out of range", shape.channels, args.channel);
    }
    let sample = CosmoSample::from_example_bytes(record.data, shape)?;
    let n = shape.size;
    let counts: Vec<f32> =
        sample.x().iter().skip(args.channel).step_by(shape.channels).map(|&v| f32::from(v)).collect();
    let particles: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    if particles <= 0.0 {
        bail!("channel {} of sample {} holds no particles: it has no power spectrum", args.channel, args.sample);
    }
    let mut fft = Fft3::new(n);
    let modes = modes_of(&density_contrast(&counts), &mut fft);
    let bins = power_spectrum(&modes, n, args.size, args.compensate.map(Assignment::from));
    // Parameters back from y in [-1, 1].
    let y = sample.y();
    let p = Priors::from(args.priors).from_unit(y);
    let cosmology = cosmology_of(p);
    let power = cosmology.linear_power_with(Transfer::from_argument(&args.transfer)?);
    let (d1, _) = cosmology.growth(1.0 / (1.0 + args.redshift));
    let shot = args.size.powi(3) / particles;
    let mut text = format!(
        "# {} sample {} channel {} (z = {}): Ω_m {:.4} σ8 {:.4} n_s {:.4} h {:.4}; {} particles, shot noise {:.2} (Mpc/h)^3\n",
        args.input.display(),
        args.sample,
        args.channel,
        args.redshift,
        p[0],
        p[1],
        p[2],
        p[3],
        particles,
        shot
    );
    // Halofit's nonlinear spectrum (Takahashi et al. 2012), what boxes
    // made with --steps approach on small scales; linear where the field
    // is nowhere nonlinear (very high redshift).
    let halofit = Halofit::new(&power, 1.0 / (1.0 + args.redshift));
    text.push_str("# k [h/Mpc]  P_measured  P_linear  ratio  modes  P_halofit\n");
    let mut measured = Vec::new();
    let mut theory = Vec::new();
    let mut nonlinear_curve = Vec::new();
    for b in &bins {
        let lin = power.at(b.k) * d1 * d1;
        let nonlinear = halofit.as_ref().map_or(lin, |h| h.at(b.k));
        text.push_str(&format!(
            "{:.5} {:.4e} {:.4e} {:.3} {} {:.4e}\n",
            b.k,
            b.power,
            lin,
            b.power / lin,
            b.modes,
            nonlinear
        ));
        measured.push((b.k, b.power));
        theory.push((b.k, lin));
        if halofit.is_some() {
            nonlinear_curve.push((b.k, nonlinear));
        }
    }
    if let Some(plot) = &args.plot {
        let title = format!(
            "sample {} at z = {}: Ωm {:.3}, σ8 {:.3}, ns {:.3}, h {:.3}",
            args.sample, args.redshift, p[0], p[1], p[2], p[3]
        );
        let figure = image::PowerSpectrumPlot {
            title: &title,
            measured: &measured,
            theory: &theory,
            nonlinear: &nonlinear_curve,
            shot_noise: shot,
        };
        image::power_spectrum_plot(&figure, plot).with_context(|| format!("writing {}", plot.display()))?;
        text.push_str(&format!("# plot: {}\n", plot.display()));
    }
    print_quietly(&text)
}

/// Print to stdout; a closed pipe (`simgen pk ... | head`) is not an error.
fn print_quietly(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The CosmoFlow shape of a record: channels from the x byte count and the
/// cube side, trying the channel counts simgen writes (4, then 1..=16).
fn sniff_shape(record: &[u8]) -> anyhow::Result<CosmoShape> {
    for channels in [4usize].into_iter().chain(1..=16) {
        for size in [128usize, 64, 32, 16, 8, 256, 4] {
            let shape = CosmoShape { size, channels };
            if formats::cosmoflow::CosmoSampleView::parse(record, shape).is_ok() {
                return Ok(shape);
            }
        }
    }
    bail!("the record is not a CosmoFlow sample of a shape simgen writes")
}
