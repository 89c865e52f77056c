//! `trainer train` and `trainer models`: the options every model takes,
//! checked before MPI, and the run.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use cluster::World;
use trainer::engine::{DeviceChoice, ModelChoice, Origin, ScheduleSpec, TrainConfig};
use trainer::kernels::Precision;
use trainer::kernels::wait::WaitPolicy;
use trainer::loss_scale::LossScaleSpec;
use trainer::models::{self, Trainable};
use trainer::optim::{Rule, TrustRatio};
use trainer::scaling::Baseline;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OptimizerKind {
    /// SGD with momentum (MLPerf CosmoFlow).
    Sgd,
    /// Adam (CosmoFlow SC18), epsilon 1e-8.
    Adam,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScheduleKind {
    /// The base rate throughout.
    Constant,
    /// Polynomial decay to --poly-end × lr over --poly-epochs.
    Poly,
    /// × each of --decay-factors from each of --decay-epochs on.
    Step,
}

/// The options every model takes; each model adds its own
/// (`trainer train MODEL --help`).
#[derive(Args, Debug)]
pub(crate) struct TrainArgs {
    /// The model's configuration (default: the model's first; CosmoFlow: mlperf and
    /// sc18 take 128³ inputs, mlperf-small and sc18-small 32³, for tests and CPUs).
    #[arg(long)]
    pub(crate) config: Option<String>,
    /// Where to train: cpu, or gpu[:N] (a build with the `gpu` feature, on a
    /// node whose Vulkan driver lists a GPU).
    #[arg(long, default_value = "cpu")]
    pub(crate) device: DeviceChoice,
    /// Dataset directory with manifest.json (e.g. `simgen cosmo --out`), read by every rank.
    /// One of --data, --staged, --node-local, --synthetic-data (or etalumis' --online) is needed.
    #[arg(long, conflicts_with_all = ["staged", "node_local", "synthetic_data"])]
    pub(crate) data: Option<PathBuf>,
    /// Node-local copies made by `stager stage`: the same --dest template
    /// (`/tmp/bb/node{node}`). The placement record the stager wrote in
    /// each node's destination says which files and samples it holds.
    #[arg(long, conflicts_with = "node_local")]
    pub(crate) staged: Option<String>,
    /// Data each node generated for itself (`simgen ... --out` with the
    /// same node-local template, e.g. `/tmp/bb/node{node}/cbed`): each
    /// node's ranks train on its own samples, so the data grows with the
    /// nodes; without --val, --val-fraction of each node's samples validate.
    #[arg(long, conflicts_with = "synthetic_data")]
    pub(crate) node_local: Option<String>,
    /// Train on SAMPLES samples per epoch (over all ranks) of the model's
    /// shapes made in memory, reading no file: compute and the gradient
    /// exchange measured apart from I/O (Mathuriya et al. 2018's dummy
    /// data). No validation. Every model but Etalumis (whose layers come
    /// from the addresses of real traces); fields, maps and events at the
    /// configuration's size.
    #[arg(long, value_name = "SAMPLES", conflicts_with = "staged")]
    pub(crate) synthetic_data: Option<usize>,
    /// Validation dataset directory (default: hold out --val-fraction of --data's files).
    #[arg(long)]
    pub(crate) val: Option<PathBuf>,
    /// Share of --data's sample files held out for validation (whole files).
    #[arg(long, default_value_t = 0.2)]
    pub(crate) val_fraction: f64,
    /// Epochs in total; with --checkpoint a rerun resumes and continues up to this.
    #[arg(long, default_value_t = 4)]
    pub(crate) epochs: u64,
    /// Samples per rank per step (global batch = batch × ranks).
    #[arg(long, default_value_t = 8)]
    pub(crate) batch: usize,
    /// Base learning rate (MLPerf: 0.001 × global batch / 64).
    #[arg(long, default_value_t = 0.001)]
    pub(crate) lr: f32,
    /// Optimiser.
    #[arg(long, value_enum, default_value = "sgd")]
    pub(crate) optimizer: OptimizerKind,
    /// SGD momentum.
    #[arg(long, default_value_t = 0.9)]
    pub(crate) momentum: f32,
    /// Adam's β1, the decay of its first moment (DCGAN and CosmoGAN: 0.5).
    #[arg(long, default_value_t = 0.9)]
    adam_beta1: f32,
    /// LARC: scale each tensor's step by min(1, trust·‖w‖/(lr·‖g‖)) (CosmoFlow SC18).
    #[arg(long, conflicts_with = "lars")]
    pub(crate) larc: bool,
    /// LARS: scale each tensor's gradient by trust·‖w‖/‖g‖.
    #[arg(long)]
    pub(crate) lars: bool,
    /// Trust coefficient of LARC/LARS.
    #[arg(long, default_value_t = 0.002)]
    pub(crate) trust: f32,
    /// Learning-rate decay after the warm-up.
    #[arg(long, value_enum, default_value = "constant")]
    pub(crate) schedule: ScheduleKind,
    /// Linear warm-up epochs (MLPerf: 4).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) warmup_epochs: f64,
    /// The warm-up's first rate (Laanait et al.: 1e-4, rising to --lr,
    /// which they set to the number of ranks times the base rate); default
    /// --lr divided by the warm-up steps.
    #[arg(long, requires = "warmup_epochs")]
    pub(crate) warmup_start: Option<f32>,
    /// L2 weight decay λ: λ·w added to every gradient (Laanait et al.: 1e-4).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) weight_decay: f32,
    /// Poly: final rate as a fraction of --lr.
    #[arg(long, default_value_t = 0.01)]
    pub(crate) poly_end: f32,
    /// Poly: epochs to decay over (default: --epochs).
    #[arg(long)]
    pub(crate) poly_epochs: Option<f64>,
    /// Poly: exponent.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) poly_power: f32,
    /// Step: boundary epochs (MLPerf: 32,64).
    #[arg(long, value_delimiter = ',', default_value = "32,64")]
    pub(crate) decay_epochs: Vec<f64>,
    /// Step: factor of --lr from each boundary on (MLPerf: 0.25,0.125).
    #[arg(long, value_delimiter = ',', default_value = "0.25,0.125")]
    pub(crate) decay_factors: Vec<f32>,
    /// 1: average step t's gradients on a communication thread during step t+1 and apply them then.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub(crate) grad_lag: u8,
    /// Reduce the gradients in groups of --fusion-mb as back-propagation completes each group, so the
    /// exchange runs under the rest of the backward pass (Kurth et al. 2018; Laanait et al. 2019); the
    /// optimiser step waits only for the groups not yet reduced. Give a --fusion-mb well below the
    /// model's gradients (the report's `parameters` times 4 bytes), or there is one group and nothing
    /// to overlap.
    #[arg(long, conflicts_with = "grad_lag")]
    pub(crate) reduce_during_backward: bool,
    /// How gradients are summed over the ranks: flat (one allreduce over every rank), hierarchical
    /// (reduce inside each node, each of its ranks allreduces its part between nodes, gather inside the
    /// node; Kurth et al. 2018; needs the same number of ranks on every node) or auto: hierarchical
    /// where the nodes hold the same number of ranks, flat where they do not (the faster where both
    /// apply: docs/trainer.md).
    #[arg(long, value_enum, default_value_t = ExchangeArg::Auto)]
    pub(crate) exchange: ExchangeArg,
    /// How each rank's kernel threads wait between the parallel operations of a step: active (awake,
    /// looking for work and yielding the core between looks, as OpenMP's OMP_WAIT_POLICY=active),
    /// passive (asleep until woken), or auto: active when every thread of every rank on this machine
    /// has a core of its own (ranks x threads <= cores), passive when they share cores.
    #[arg(long, value_enum, default_value_t = WaitArg::Auto)]
    pub(crate) wait_policy: WaitArg,
    /// Fusion buffer size in MiB (0: one allreduce per tensor).
    #[arg(long, default_value_t = 64.0)]
    pub(crate) fusion_mb: f64,
    /// Seed of the initial parameters, the sample order, dropout and --augment.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Loader worker threads per rank.
    #[arg(long, default_value_t = 2)]
    pub(crate) workers: usize,
    /// Check every sample for NaN and infinity as it is decoded and stop
    /// at the first bad one, naming its file (one more pass over each
    /// decoded sample). Losses and gradients are checked
    /// at every step either way.
    #[arg(long)]
    pub(crate) check_finite: bool,
    /// Batches decoded ahead per rank.
    #[arg(long, default_value_t = 4)]
    pub(crate) prefetch: usize,
    /// Checkpoint directory: resume from its latest checkpoint, save one at every epoch's end.
    #[arg(long)]
    pub(crate) checkpoint: Option<PathBuf>,
    /// Also save a checkpoint every N steps within an epoch (the loader's
    /// position is saved with it; with --grad-lag 1 the lag is drained there).
    #[arg(long, requires = "checkpoint", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) checkpoint_every: Option<u64>,
    /// Stop after this many steps (benchmarks; the epoch is reported as it stands).
    #[arg(long)]
    pub(crate) max_steps: Option<u64>,
    /// Time how long the run takes to first reach this training loss (a
    /// step's loss, the mean over the ranks): the report's
    /// `time_to_target_secs`, counted from the start of this run. Training
    /// goes on; stop it with --epochs or --max-steps.
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) target_loss: Option<f32>,
    /// What convolutions and dense layers compute in. bf16 and f16 as PyTorch's autocast runs them:
    /// inputs, weights and outputs rounded to the half type, products summed in f32; BatchNorm,
    /// activations, losses, the master weights, the optimiser and the gradient exchange stay f32, and
    /// so do checkpoints. bf16 needs a CPU with AVX512_BF16 (without one the run stops with one line,
    /// exit 2). f16 is emulated on the CPU: a GPU's half-precision numerics, at f32's speed or slower,
    /// to try --loss-scale before a GPU run.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    pub(crate) precision: Precision,
    /// Loss scaling for half precision: off; dynamic (start at 65536, halve after an overflow, double
    /// after 2000 clean steps: Micikevicius et al. 2018, PyTorch's GradScaler); or a fixed scale N.
    /// The loss is multiplied by the scale before back-propagation and the gradients divided by it in
    /// f32; a step whose gradients overflow on any rank is skipped on every rank and counted in the
    /// report (`loss_scale.skipped`).
    #[arg(long, default_value = "off")]
    pub(crate) loss_scale: LossScaleSpec,
    /// Also write the JSON report here.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// Write the loss curve (log scale, epoch boundaries marked) as a PNG
    /// here; models whose outputs are pictures (inverse) also draw their
    /// predictions for a few validation samples beside the targets, in
    /// NAME-predictions.png next to it.
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// Write TensorBoard event files into this directory (created if
    /// missing): the loss at every step, validation figures, samples/s,
    /// data wait, communication share and learning rate at each epoch's
    /// end. Open with `tensorboard --logdir DIR`.
    #[arg(long)]
    pub(crate) tensorboard: Option<PathBuf>,
    /// The --report of a 1-rank run of the same model, at the same --batch
    /// (weak scaling) or at this run's --batch times its ranks (strong
    /// scaling: the same global batch split over the ranks): the report
    /// then gives this run's parallel efficiency (samples/s over ranks x
    /// the 1-rank samples/s) and which scaling it measured.
    #[arg(long)]
    pub(crate) baseline: Option<PathBuf>,
}

/// The model `entry` with the options parsed into `matches`, and the run's
/// configuration.
fn config_from(
    args: &TrainArgs,
    entry: &models::ModelEntry,
    matches: &clap::ArgMatches,
) -> anyhow::Result<(Box<dyn Trainable>, TrainConfig)> {
    let choice =
        ModelChoice { config: args.config.clone().unwrap_or_else(|| entry.configs[0].to_owned()), batch: args.batch };
    let model = entry.build(&choice, matches)?;
    // A model's own `--online TRACES` (etalumis) simulates its samples.
    let online = matches.try_get_one::<u64>("online").ok().flatten().map(|&n| n as usize);
    let source = match (online, &args.data, &args.staged, &args.node_local, args.synthetic_data) {
        (Some(samples), None, None, None, None) => Origin::Simulated { samples },
        (Some(_), ..) => anyhow::bail!(
            "--online simulates the training traces; give no --data, --staged, --node-local or --synthetic-data"
        ),
        (None, Some(dir), ..) => Origin::Dir(dir.clone()),
        (None, None, Some(dest), ..) => Origin::Staged { dest: dest.clone() },
        (None, None, None, Some(template), _) => Origin::NodeLocal { template: template.clone() },
        (None, None, None, None, Some(samples)) => Origin::Synthetic { samples },
        (None, None, None, None, None) => {
            anyhow::bail!("give --data DIR, --staged TEMPLATE, --node-local TEMPLATE or --synthetic-data SAMPLES")
        }
    };
    anyhow::ensure!(
        args.fusion_mb.is_finite() && args.fusion_mb >= 0.0 && args.fusion_mb <= (1u64 << 20) as f64,
        "--fusion-mb must be a size in MiB from 0 to 1048576, got {}",
        args.fusion_mb
    );
    let rule = match args.optimizer {
        OptimizerKind::Sgd => Rule::Sgd { momentum: args.momentum },
        OptimizerKind::Adam => match Rule::ADAM {
            Rule::Adam { beta2, epsilon, .. } => Rule::Adam { beta1: args.adam_beta1, beta2, epsilon },
            other => other,
        },
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
    let config = TrainConfig {
        device: args.device,
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
        warmup_start: args.warmup_start,
        weight_decay: args.weight_decay,
        grad_lag: args.grad_lag == 1,
        reduce_during_backward: args.reduce_during_backward,
        exchange: match args.exchange {
            ExchangeArg::Auto => cluster::allreduce::Exchange::Auto,
            ExchangeArg::Flat => cluster::allreduce::Exchange::Flat,
            ExchangeArg::Hierarchical => cluster::allreduce::Exchange::Hierarchical,
        },
        // `auto` is settled once MPI has said how many ranks share the machine.
        wait: match args.wait_policy {
            WaitArg::Active => WaitPolicy::Active,
            WaitArg::Passive | WaitArg::Auto => WaitPolicy::Passive,
        },
        fusion_bytes: (args.fusion_mb * (1 << 20) as f64) as usize,
        seed: args.seed,
        workers: args.workers,
        prefetch: args.prefetch,
        checkpoint: args.checkpoint.clone(),
        checkpoint_every: args.checkpoint_every,
        max_steps: args.max_steps,
        target_loss: args.target_loss,
        predictions: args.plot.as_ref().map(|p| p.with_file_name(predictions_name(p))),
        check_finite: args.check_finite,
        precision: args.precision,
        loss_scale: args.loss_scale,
    };
    config.validate().map_err(anyhow::Error::msg)?;
    Ok((model, config))
}

/// `loss.png` → `loss-predictions.png`: where `--plot`'s picture of the
/// predictions goes, beside the loss curve.
fn predictions_name(plot: &std::path::Path) -> String {
    let stem = plot.file_stem().map_or_else(|| "plot".into(), |s| s.to_string_lossy());
    format!("{stem}-predictions.png")
}

/// The 1-rank report to compare with, checked against this run's model and batch.
fn baseline(args: &TrainArgs, model: &dyn Trainable, config: &TrainConfig) -> anyhow::Result<Option<Baseline>> {
    let Some(path) = &args.baseline else { return Ok(None) };
    Ok(Some(Baseline::load(path, &model.summary(), config.batch)?))
}

/// Create `dir` if needed and check that a file can be written in it, so
/// an unwritable checkpoint directory fails before training, not after an
/// epoch.
fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// Everything that can be checked before MPI starts: the arguments, the
/// model, the device, the datasets' manifests, the baseline report.
pub(crate) fn prepare(
    args: &TrainArgs,
    entry: &models::ModelEntry,
    matches: &clap::ArgMatches,
) -> anyhow::Result<(Box<dyn Trainable>, TrainConfig, Option<Baseline>)> {
    let (model, config) = config_from(args, entry, matches)?;
    config.device.check()?;
    trainer::engine::precision_available(&config)?;
    model.check_data(&config)?;
    if let Some(dir) = &config.checkpoint {
        writable(dir).with_context(|| format!("--checkpoint {}", dir.display()))?;
    }
    let baseline = baseline(args, &*model, &config)?;
    Ok((model, config, baseline))
}

pub(crate) fn train(
    world: &World,
    model: Box<dyn Trainable>,
    config: &TrainConfig,
    baseline: Option<Baseline>,
    args: &TrainArgs,
) -> anyhow::Result<()> {
    let root = world.is_root();
    let scaling = baseline.as_ref().map(|b| b.scaling(world.size(), config.batch)).transpose()?;
    let mut board = match (&args.tensorboard, root) {
        (Some(dir), true) => Some(
            trainer::tensorboard::TensorBoard::create(dir)
                .with_context(|| format!("creating a TensorBoard event file in {}", dir.display()))?,
        ),
        _ => None,
    };
    // A failed event write does not stop training; the run fails once its
    // report is out.
    let mut board_error = None;
    // Said with the first epoch's line, so that a run failing before it
    // still fails with one line.
    let mut kernels_said = false;
    let mut report = model.train(world, config, &mut |e| {
        if root {
            if !kernels_said {
                let choice = trainer::kernels::calibrate::choice().line();
                eprintln!("kernels: {choice}; idle threads wait {}", config.wait.name());
                kernels_said = true;
            }
            eprintln!("{}", e.line());
        }
        if let Some(b) = board.as_mut()
            && board_error.is_none()
            && let Err(error) = b.epoch(e)
        {
            eprintln!("error: writing {}: {error}; no more TensorBoard events this run", b.path().display());
            board_error = Some(anyhow::Error::new(error).context(format!("writing {}", b.path().display())));
        }
    })?;
    if let (Some(baseline), Some(scaling)) = (baseline, scaling) {
        let efficiency = baseline.efficiency(report.samples_per_sec, report.ranks);
        report.parallel_efficiency = Some(efficiency);
        report.scaling = Some(scaling);
        if root {
            eprintln!(
                "{:.1} samples/s on {} ranks, {:.1} on 1: {} scaling efficiency {:.0}%",
                report.samples_per_sec,
                report.ranks,
                baseline.samples_per_sec,
                match scaling {
                    trainer::scaling::Scaling::Weak => "weak",
                    trainer::scaling::Scaling::Strong => "strong",
                },
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
            let curve = trainer::plot::Curve::from_report(&json, path, "training".into(), "loss")?;
            trainer::plot::draw(&[curve], trainer::plot::DEFAULT_SMOOTHING, path)?;
        }
    }
    board_error.map_or(Ok(()), Err)
}

/// `trainer models`: every model and configuration with its sizes.
/// A reader that stops early (`trainer models | head`) closes the pipe:
/// that ends the listing quietly instead of as an error.
pub(crate) fn list_models() -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let mut listed = || -> anyhow::Result<()> {
        writeln!(out, "{:<14} {:<10} {:>12} {:>8}  about", "model", "config", "parameters", "state")?;
        for entry in models::MODELS {
            for config in entry.configs {
                let (parameters, state) = entry.build_default(config)?.sizes()?;
                writeln!(out, "{:<14} {:<10} {parameters:>12} {state:>8}  {}", entry.name, config, entry.about)?;
            }
        }
        Ok(())
    };
    match listed() {
        Err(e) if e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) => {
            Ok(())
        }
        other => other,
    }
}

/// `--exchange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExchangeArg {
    Auto,
    Flat,
    Hierarchical,
}

/// `--wait-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum WaitArg {
    Auto,
    Active,
    Passive,
}
