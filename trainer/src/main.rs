//! `trainer`: data-parallel training over MPI, fed by the loader.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use cluster::World;
use formats::placement::Policy;
use trainer::model::cosmoflow::{CosmoflowConfig, LEAKY_SLOPE};
use trainer::optim::{Rule, TrustRatio};
use trainer::params::Init;
use trainer::scaling::Baseline;
use trainer::train::{self, DataSource, EpochReport, ScheduleSpec, TrainConfig};

/// Train scientific models data-parallel over MPI.
///
/// Run under mpirun or srun: rank 0's initial parameters go to every rank,
/// each rank trains on its share of every batch, gradients are averaged with
/// fused MPI allreduce, and at each epoch's end the ranks check that they
/// hold identical parameters. Rank 0 prints one line per epoch and, at the
/// end, a JSON report on stdout.
#[derive(Parser, Debug)]
#[command(version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train a model on a dataset (a directory, or what `stager stage` put on each node).
    Train(Box<TrainArgs>),
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum ModelKind {
    /// CosmoFlow: cosmological parameters from dark-matter volumes.
    Cosmoflow,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum OptimizerKind {
    /// SGD with momentum (MLPerf CosmoFlow).
    Sgd,
    /// Adam (CosmoFlow SC18), epsilon 1e-8.
    Adam,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum InitKind {
    /// Glorot uniform (Keras' default, the MLPerf reference's default).
    Glorot,
    /// He uniform scaled for LeakyReLU 0.3 (the MLPerf reference's `he_uniform_mod`).
    He,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum ScheduleKind {
    /// The base rate throughout.
    Constant,
    /// Polynomial decay to --poly-end × lr over --poly-epochs.
    Poly,
    /// × each of --decay-factors from each of --decay-epochs on.
    Step,
}

#[derive(Args, Debug)]
struct TrainArgs {
    /// The model.
    #[arg(long, value_enum, default_value = "cosmoflow")]
    model: ModelKind,
    /// Its configuration: mlperf (128³ inputs), sc18 (128³), mlperf-small or sc18-small (32³, for tests and CPUs).
    #[arg(long, default_value = "mlperf")]
    config: String,
    /// Dataset directory with manifest.json (e.g. `simgen cosmo --out`), read by every rank.
    #[arg(long, conflicts_with = "staged", required_unless_present = "staged")]
    data: Option<PathBuf>,
    /// Node-local copies made by `stager stage`: the same --dest template (`/tmp/bb/node{node}`).
    #[arg(long, requires_all = ["manifest", "policy"])]
    staged: Option<String>,
    /// With --staged: the source dataset's manifest.json.
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// With --staged: the stager's --policy (replicate, shard, per-node=N).
    #[arg(long)]
    policy: Option<Policy>,
    /// With --staged: the stager's --seed.
    #[arg(long, default_value_t = 0)]
    placement_seed: u64,
    /// Validation dataset directory (default: hold out --val-fraction of --data's files).
    #[arg(long)]
    val: Option<PathBuf>,
    /// Share of --data's sample files held out for validation (whole files).
    #[arg(long, default_value_t = 0.2)]
    val_fraction: f64,
    /// Epochs in total; with --checkpoint a rerun resumes and continues up to this.
    #[arg(long, default_value_t = 4)]
    epochs: u64,
    /// Samples per rank per step (global batch = batch × ranks).
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Base learning rate (MLPerf: 0.001 × global batch / 64).
    #[arg(long, default_value_t = 0.001)]
    lr: f32,
    /// Optimiser.
    #[arg(long, value_enum, default_value = "sgd")]
    optimizer: OptimizerKind,
    /// SGD momentum.
    #[arg(long, default_value_t = 0.9)]
    momentum: f32,
    /// LARC: scale each tensor's step by min(1, trust·‖w‖/(lr·‖g‖)) (CosmoFlow SC18).
    #[arg(long, conflicts_with = "lars")]
    larc: bool,
    /// LARS: scale each tensor's gradient by trust·‖w‖/‖g‖.
    #[arg(long)]
    lars: bool,
    /// Trust coefficient of LARC/LARS.
    #[arg(long, default_value_t = 0.002)]
    trust: f32,
    /// Learning-rate decay after the warm-up.
    #[arg(long, value_enum, default_value = "constant")]
    schedule: ScheduleKind,
    /// Linear warm-up epochs (MLPerf: 4).
    #[arg(long, default_value_t = 0.0)]
    warmup_epochs: f64,
    /// Poly: final rate as a fraction of --lr.
    #[arg(long, default_value_t = 0.01)]
    poly_end: f32,
    /// Poly: epochs to decay over (default: --epochs).
    #[arg(long)]
    poly_epochs: Option<f64>,
    /// Poly: exponent.
    #[arg(long, default_value_t = 1.0)]
    poly_power: f32,
    /// Step: boundary epochs (MLPerf: 32,64).
    #[arg(long, value_delimiter = ',', default_value = "32,64")]
    decay_epochs: Vec<f64>,
    /// Step: factor of --lr from each boundary on (MLPerf: 0.25,0.125).
    #[arg(long, value_delimiter = ',', default_value = "0.25,0.125")]
    decay_factors: Vec<f32>,
    /// 1: average step t's gradients on a communication thread during step t+1 and apply them then.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    grad_lag: u8,
    /// Fusion buffer size in MiB (0: one allreduce per tensor).
    #[arg(long, default_value_t = 64.0)]
    fusion_mb: f64,
    /// Dropout probability after the hidden dense layers (default: the configuration's, MLPerf 0.5).
    #[arg(long)]
    dropout: Option<f32>,
    /// How the initial weights are drawn (biases start at zero).
    #[arg(long, value_enum, default_value = "glorot")]
    init: InitKind,
    /// Turn each training sample by one of the cube's 48 rotations and
    /// reflections, drawn anew each step (the universe is isotropic, so
    /// the targets stay as they are).
    #[arg(long)]
    augment: bool,
    /// Shift and scale each input channel to mean 0 and deviation 1, with
    /// statistics of the training set (never per sample).
    #[arg(long)]
    standardize: bool,
    /// Seed of the initial parameters, the sample order, dropout and --augment.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Loader worker threads per rank.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Batches decoded ahead per rank.
    #[arg(long, default_value_t = 4)]
    prefetch: usize,
    /// Checkpoint directory: resume from its latest checkpoint, save one at every epoch's end.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Also save a checkpoint every N steps within an epoch (the loader's
    /// position is saved with it; with --grad-lag 1 the lag is drained there).
    #[arg(long, requires = "checkpoint", value_parser = clap::value_parser!(u64).range(1..))]
    checkpoint_every: Option<u64>,
    /// Stop after this many steps (benchmarks; the epoch is reported as it stands).
    #[arg(long)]
    max_steps: Option<u64>,
    /// Also write the JSON report here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write the loss curve (log scale, epoch boundaries marked) as a PNG here.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// The --report of a 1-rank run of the same model and --batch: the
    /// report then gives this run's parallel efficiency (samples/s over
    /// ranks x the 1-rank samples/s).
    #[arg(long)]
    baseline: Option<PathBuf>,
}

fn config_from(args: &TrainArgs) -> anyhow::Result<TrainConfig> {
    let ModelKind::Cosmoflow = args.model;
    let mut model = CosmoflowConfig::by_name(&args.config)?;
    if let Some(p) = args.dropout {
        anyhow::ensure!((0.0..1.0).contains(&p), "--dropout must be in [0, 1)");
        model.dropout = p;
    }
    let source = match (&args.data, &args.staged) {
        (Some(dir), _) => DataSource::Dir(dir.clone()),
        (None, Some(dest)) => DataSource::Staged {
            dest: dest.clone(),
            manifest: args.manifest.clone().context("--staged needs --manifest")?,
            policy: args.policy.context("--staged needs --policy")?,
            seed: args.placement_seed,
        },
        (None, None) => anyhow::bail!("give --data DIR or --staged TEMPLATE"),
    };
    anyhow::ensure!((0.0..1.0).contains(&args.val_fraction), "--val-fraction must be in [0, 1)");
    anyhow::ensure!(args.fusion_mb >= 0.0, "--fusion-mb must not be negative");
    let rule = match args.optimizer {
        OptimizerKind::Sgd => Rule::Sgd { momentum: args.momentum },
        OptimizerKind::Adam => Rule::ADAM,
    };
    let trust = (args.larc || args.lars).then_some(TrustRatio { trust: args.trust, clip: args.larc });
    let schedule = match args.schedule {
        ScheduleKind::Constant => ScheduleSpec::Constant,
        ScheduleKind::Poly => ScheduleSpec::Poly {
            end_factor: args.poly_end,
            epochs: args.poly_epochs.unwrap_or(args.epochs as f64),
            power: args.poly_power,
        },
        ScheduleKind::Step => {
            anyhow::ensure!(
                args.decay_epochs.len() == args.decay_factors.len(),
                "--decay-epochs and --decay-factors need as many values each"
            );
            ScheduleSpec::Step { boundaries: args.decay_epochs.clone(), factors: args.decay_factors.clone() }
        }
    };
    Ok(TrainConfig {
        model,
        source,
        val: args.val.clone(),
        val_fraction: args.val_fraction,
        epochs: args.epochs,
        batch: args.batch,
        lr: args.lr,
        rule,
        trust,
        schedule,
        warmup_epochs: args.warmup_epochs,
        grad_lag: args.grad_lag == 1,
        fusion_bytes: (args.fusion_mb * (1 << 20) as f64) as usize,
        init: match args.init {
            InitKind::Glorot => Init::GlorotUniform,
            InitKind::He => Init::HeUniformLeaky { slope: LEAKY_SLOPE as f32 },
        },
        augment: args.augment,
        standardize: args.standardize,
        seed: args.seed,
        workers: args.workers,
        prefetch: args.prefetch,
        checkpoint: args.checkpoint.clone(),
        checkpoint_every: args.checkpoint_every,
        max_steps: args.max_steps,
    })
}

fn epoch_line(e: &EpochReport) -> String {
    let t = &e.times;
    let total = t.total().max(f64::MIN_POSITIVE);
    let val = e.validation.as_ref().map_or(String::new(), |v| {
        let mae: Vec<String> = v.mae.iter().map(|m| format!("{m:.3}")).collect();
        format!(", val MAE [{}] = {:.0}% of predicting the mean", mae.join(" "), 100.0 * v.relative_mae)
    });
    format!(
        "epoch {}: {} steps, loss {:.4}{val}, {:.1} samples/s, data wait {:.1}% compute {:.1}% comm {:.1}%, {:.1} s",
        e.epoch,
        e.steps,
        e.train_loss,
        e.samples_per_sec,
        100.0 * t.data_wait / total,
        100.0 * t.compute / total,
        100.0 * t.communication / total,
        e.seconds
    )
}

/// The 1-rank report to compare with, checked against this run's model and batch.
fn baseline(args: &TrainArgs, config: &TrainConfig) -> anyhow::Result<Option<Baseline>> {
    let Some(path) = &args.baseline else { return Ok(None) };
    Ok(Some(Baseline::load(path, &config.model, config.batch)?))
}

fn train(world: &World, args: &TrainArgs) -> anyhow::Result<()> {
    let config = config_from(args)?;
    let baseline = baseline(args, &config)?;
    let root = world.is_root();
    let mut report = train::run(world, &config, |e| {
        if root {
            eprintln!("{}", epoch_line(e));
        }
    })?;
    if let Some(baseline) = baseline {
        let efficiency = baseline.efficiency(report.samples_per_sec, report.ranks);
        report.parallel_efficiency = Some(efficiency);
        if root {
            eprintln!(
                "{:.1} samples/s on {} ranks, {:.1} on 1: parallel efficiency {:.0}%",
                report.samples_per_sec,
                report.ranks,
                baseline.samples_per_sec,
                100.0 * efficiency
            );
        }
    }
    if root {
        let json = serde_json::to_string_pretty(&report)?;
        println!("{json}");
        if let Some(path) = &args.report {
            std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(path) = &args.plot {
            trainer::plot::loss_curve(&report.losses, report.steps_per_epoch as usize, path)
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

fn main() {
    trainer::memory::keep_freed_memory();
    let cli = Cli::parse();
    let Command::Train(args) = cli.command;
    // Check the arguments before MPI starts, so a typo fails with one line.
    if let Err(e) = config_from(&args).and_then(|config| baseline(&args, &config)) {
        cluster::logging::print_error(format_args!("{e:#}"));
        std::process::exit(2);
    }
    let world = match World::init() {
        Ok(world) => world,
        Err(e) => {
            cluster::logging::print_error(&e);
            std::process::exit(1);
        }
    };
    cluster::logging::init(world.topology(), Some("warn"));
    if let Err(e) = train(&world, &args) {
        // A failure on one rank is not seen by the others, which would wait
        // in the next allreduce: end the whole job.
        world.fail(format!("{e:#}"));
    }
}
