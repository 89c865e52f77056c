//! `trainer`: data-parallel training over MPI, fed by the loader.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use cluster::World;
use trainer::engine::{DeviceChoice, ModelChoice, Origin, ScheduleSpec, TrainConfig};
use trainer::kernels::Precision;
use trainer::kernels::wait::WaitPolicy;
use trainer::loss_scale::LossScaleSpec;
use trainer::models::{self, Trainable};
use trainer::optim::{Rule, TrustRatio};
use trainer::scaling::Baseline;

/// mimalloc rather than glibc's malloc: a training step allocates and
/// frees many tensors of many sizes, and glibc's slow paths (consolidating
/// and unlinking free chunks) held a large share of the smaller models'
/// steps; what it gains and what it costs in memory is in
/// docs/benchmarks.md (Allocator).
#[global_allocator]
static ALLOCATOR: trainer::allocator::Allocator = mimalloc::MiMalloc;

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
    /// Train a model on a dataset (a directory, or what `stager stage` put
    /// on each node): `trainer train MODEL [OPTIONS]`; `--model MODEL`
    /// anywhere names it too, and cosmoflow is trained when none is named.
    /// `trainer train MODEL --help` lists the options of that model.
    Train,
    /// List the models, their configurations and parameter counts.
    Models,
    /// Importance sampling for held-out observations with a trained
    /// Etalumis network's proposals, against the prior as proposal.
    Infer(InferArgs),
    /// Draw the loss curves of one or several training reports (`trainer
    /// train --report`) into one PNG: each run's loss smoothed, the raw
    /// loss faint behind it, its validation loss per epoch, one colour per
    /// run with a legend.
    Plot(PlotArgs),
    /// Predict the gradient exchange's time, flat and hierarchical, from 1
    /// node to a machine of the seeds' size (Summit: 4,608 nodes of 6
    /// GPUs), with the alpha-beta model fed by the link between two ranks
    /// and the summing speed measured here (run under `mpirun -np 2`, or
    /// give the link with --intra-latency-us and --intra-gb-per-sec) and
    /// the link between nodes as given.
    ExchangeModel(ExchangeModelArgs),
}

#[derive(Args, Debug)]
struct ExchangeModelArgs {
    /// The model whose gradients are exchanged (`trainer models`).
    #[arg(long, default_value = "cosmoflow")]
    model: String,
    /// Its configuration (default: the first `trainer models` lists).
    #[arg(long)]
    config: Option<String>,
    /// Bytes exchanged instead of a model's gradients.
    #[arg(long, conflicts_with_all = ["model", "config"], value_parser = clap::value_parser!(u64).range(1..))]
    bytes: Option<u64>,
    /// Nodes of the largest machine.
    #[arg(long, default_value_t = 4608, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    nodes: u64,
    /// Ranks (GPUs) per node.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=1024))]
    ranks_per_node: u64,
    /// Latency between two nodes, µs (about an InfiniBand EDR MPI
    /// message's).
    #[arg(long, default_value_t = 1.0)]
    inter_latency_us: f64,
    /// Bandwidth out of a node, GB/s (Summit's node injection bandwidth,
    /// dual-rail EDR InfiniBand).
    #[arg(long, default_value_t = 23.0)]
    inter_gb_per_sec: f64,
    /// Latency between two ranks of a node, µs, instead of measuring it
    /// (with --intra-gb-per-sec; then one rank is enough).
    #[arg(long, requires = "intra_gb_per_sec")]
    intra_latency_us: Option<f64>,
    /// Bandwidth between two ranks of a node, GB/s, instead of measuring
    /// it (Summit's GPUs: NVLink 2, 50 GB/s each way between neighbours).
    #[arg(long, requires = "intra_latency_us")]
    intra_gb_per_sec: Option<f64>,
    /// Print the figures and predictions as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct PlotArgs {
    /// Training reports (JSON), one run each.
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// The picture to write.
    #[arg(long, default_value = "loss.png")]
    out: PathBuf,
    /// Each run's name in the legend, in the order of the reports
    /// (default: each report's file name without its extension).
    #[arg(long = "label")]
    labels: Vec<String>,
    /// Smoothing of the loss, as TensorBoard's slider: an exponential
    /// moving average of this weight, in [0, 1); 0 draws the raw loss only.
    #[arg(long, default_value_t = trainer::plot::DEFAULT_SMOOTHING)]
    smoothing: f32,
    /// The validation figure drawn per epoch (`loss` for the models that
    /// report one; CosmoFlow reports `relative_mae`, in other units).
    #[arg(long, default_value = "loss")]
    validation: String,
}

/// `trainer plot`.
fn plot(args: &PlotArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        (0.0..1.0).contains(&args.smoothing),
        "--smoothing {} is outside [0, 1): 0 draws the raw loss, 0.99 smooths it hard",
        args.smoothing
    );
    anyhow::ensure!(
        args.labels.is_empty() || args.labels.len() == args.reports.len(),
        "{} --label for {} reports: give one per report, or none",
        args.labels.len(),
        args.reports.len()
    );
    let mut curves = Vec::new();
    for (k, path) in args.reports.iter().enumerate() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let label = match args.labels.get(k) {
            Some(label) => label.clone(),
            None => path.file_stem().map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into()),
        };
        curves.push(trainer::plot::Curve::from_report(&text, path, label, &args.validation)?);
    }
    trainer::plot::draw(&curves, args.smoothing, &args.out)?;
    let missing: Vec<&str> = curves.iter().filter(|c| c.validation.is_empty()).map(|c| c.label.as_str()).collect();
    if !missing.is_empty() {
        eprintln!("no validation `{}` in: {} (drawn without)", args.validation, missing.join(", "));
    }
    eprintln!("wrote {}", args.out.display());
    Ok(())
}

/// `trainer infer`: for each held-out observation, --samples runs of the
/// simulator (`simgen traces`' tau decay) conditioned on it, with the
/// trained network proposing every latent choice, weighted by prior ×
/// likelihood / proposal; then the same with the prior as proposal. Or
/// (--engine rmh) chains of lightweight Metropolis-Hastings over the
/// simulator's traces, no network, with their R-hat and effective sample
/// sizes; or both, and how far each importance-sampled posterior lies from
/// the chains'. Prints the effective sample size and the posterior of the
/// decay channel and the tau's momentum against the values that made the
/// observation.
#[derive(Args, Debug)]
struct InferArgs {
    /// The trained model (only etalumis has proposals).
    #[arg(long, default_value = "etalumis")]
    model: String,
    /// is: importance sampling with the network (and with the prior);
    /// rmh: Metropolis-Hastings chains (no --checkpoint needed); both.
    #[arg(long, value_enum, default_value = "is")]
    engine: infer_engine::Engine,
    /// Checkpoint directory of `trainer train --model etalumis` (its latest
    /// checkpoint); --engine is and both need it.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Metropolis-Hastings chains per observation (R-hat needs two at least).
    #[arg(long, default_value_t = 4)]
    chains: usize,
    /// Steps of each chain, one candidate each.
    #[arg(long, default_value_t = 2000)]
    steps: usize,
    /// Steps discarded at the start of each chain.
    #[arg(long, default_value_t = 500)]
    burn_in: usize,
    /// Keep every N-th state of a chain after the burn-in.
    #[arg(long, default_value_t = 1)]
    thin: usize,
    /// Held-out traces: a `simgen traces --out` directory (manifest.json and trace stores).
    #[arg(long)]
    observations: PathBuf,
    /// Infer on a simulator that speaks PPX (pyprob's protocol) at this
    /// ZeroMQ address instead of the built-in tau simulator, conditioned on
    /// --observations recorded from it (`simgen traces --ppx`). Importance
    /// sampling takes a --checkpoint trained on that simulator's traces.
    /// Several ranks: put `{rank}` in the address, one
    /// simulator per rank.
    #[arg(long, value_name = "ADDRESS")]
    ppx: Option<String>,
    /// Seconds a PPX simulator may take to answer before inference fails.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    ppx_timeout: f64,
    /// With --ppx: the latents to report, by address (`mu__Normal__1`),
    /// comma-separated. Default: every controlled address the observations'
    /// traces share.
    #[arg(long, value_delimiter = ',', value_name = "ADDRESSES")]
    latents: Vec<String>,
    /// Importance samples per observation, for each proposal.
    #[arg(long, default_value_t = 100)]
    samples: usize,
    /// Observations to infer, spread evenly over the stores' traces (all if fewer).
    #[arg(long, default_value_t = 10)]
    count: usize,
    /// Seed of the simulator runs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The calorimeter's noise per voxel, GeV, the observations were
    /// simulated with (`simgen traces --noise`; default 0.002, simgen's).
    /// The likelihood scores them with it. A larger value than the data's
    /// gives an approximate (ABC-style) posterior; train on data with the
    /// noise you infer with, or the proposals will be too narrow for it.
    /// With --ppx: replaces the deviation the simulator states for its
    /// tensor observation (default: the simulator's own).
    #[arg(long)]
    noise: Option<f32>,
    /// Write the results as JSON here.
    #[arg(long)]
    report: Option<PathBuf>,
}

use trainer::models::etalumis::infer as infer_engine;
use trainer::models::etalumis::infer_ppx;

/// The Metropolis-Hastings chains `args` ask for.
fn rmh_settings(args: &InferArgs) -> trainer::models::etalumis::infer_rmh::RmhSettings {
    trainer::models::etalumis::infer_rmh::RmhSettings {
        chains: args.chains,
        chain: trainer::models::etalumis::rmh::ChainConfig {
            steps: args.steps,
            burn_in: args.burn_in,
            thin: args.thin,
        },
    }
}

/// `trainer infer`'s configuration, checked, with the network and the
/// observations loaded: everything that can fail on bad input, before MPI.
fn prepare_infer(args: &InferArgs) -> anyhow::Result<(infer_engine::InferConfig, infer_engine::Prepared)> {
    anyhow::ensure!(
        args.model == "etalumis",
        "--model {}: only etalumis proposes latents; infer takes etalumis",
        args.model
    );
    let config = infer_engine::InferConfig {
        engine: args.engine,
        checkpoint: args.checkpoint.clone(),
        rmh: rmh_settings(args),
        observations: args.observations.clone(),
        count: args.count,
        samples: args.samples,
        seed: args.seed,
        noise: args.noise.unwrap_or(simgen::traces::calorimeter::NOISE_GEV),
    };
    let prepared = infer_engine::Prepared::new(&config)?;
    Ok((config, prepared))
}

/// `trainer infer --ppx`'s configuration, checked, with the observations
/// read: before MPI, as [`prepare_infer`].
fn prepare_infer_ppx(args: &InferArgs) -> anyhow::Result<(infer_ppx::PpxInferConfig, infer_ppx::PpxPrepared)> {
    anyhow::ensure!(
        args.ppx_timeout.is_finite() && args.ppx_timeout > 0.0,
        "--ppx-timeout must be a positive number of seconds, got {}",
        args.ppx_timeout
    );
    if let Some(noise) = args.noise {
        anyhow::ensure!(noise.is_finite() && noise > 0.0, "--noise must be a positive number, got {noise}");
    }
    let config = infer_ppx::PpxInferConfig {
        engine: args.engine,
        checkpoint: args.checkpoint.clone(),
        samples: args.samples,
        observations: args.observations.clone(),
        count: args.count,
        latents: args.latents.clone(),
        rmh: rmh_settings(args),
        seed: args.seed,
        noise: args.noise,
    };
    let prepared = infer_ppx::PpxPrepared::new(&config)?;
    Ok((config, prepared))
}

/// `trainer infer --ppx` on this rank's share of the observations, gathered
/// on rank 0 as [`infer`] does.
fn infer_over_ppx(
    world: &World,
    args: &InferArgs,
    config: &infer_ppx::PpxInferConfig,
    prepared: &infer_ppx::PpxPrepared,
) -> anyhow::Result<()> {
    let (rank, size, n) = (world.rank(), world.size(), prepared.len());
    let template = args.ppx.as_deref().unwrap_or_default();
    let address = simgen::traces::remote::rank_address(template, rank, size).map_err(anyhow::Error::msg)?;
    let mut remote = simgen::traces::remote::RemoteSimulator::connect(
        &address,
        std::time::Duration::from_secs_f64(args.ppx_timeout),
    )
    .with_context(|| format!("--ppx {address}"))?;
    let mine = rank * n / size..(rank + 1) * n / size;
    let results = prepared.infer(config, &mut remote, mine, |i, r| {
        let on = if size > 1 { format!(" (rank {rank})") } else { String::new() };
        let mut done = Vec::new();
        if let Some(n) = &r.network {
            done.push(format!("importance sampling ESS {:.1}", n.ess));
        }
        if let Some(c) = &r.rmh {
            let worst = c.latents.iter().filter_map(|l| l.rhat).fold(f64::NAN, f64::max);
            done.push(format!("Metropolis-Hastings acceptance {:.3}, largest R-hat {worst:.3}", c.acceptance));
        }
        eprintln!("observation {}{on} over PPX: {}", i + 1, done.join("; "));
    })?;
    let Some(all) = gather_on_root(world, &results, |r, from| r.rank = from)? else { return Ok(()) };
    println!("simulator: {} ({}) at {template}", remote.model_name, remote.system_name);
    print!("{}", infer_ppx::table(&all));
    finish_infer(args, &all, n, size)
}

/// Every rank's `results` on rank 0 (`None` elsewhere), each stamped with
/// the rank that made it.
fn gather_on_root<T: serde::Serialize + serde::de::DeserializeOwned>(
    world: &World,
    results: &[T],
    stamp: impl Fn(&mut T, usize),
) -> anyhow::Result<Option<Vec<T>>> {
    let gathered = world.all_gather_bytes(&serde_json::to_vec(results)?);
    if world.rank() != 0 {
        return Ok(None);
    }
    let mut all = Vec::new();
    for (from, bytes) in gathered.iter().enumerate() {
        let mut theirs: Vec<T> =
            serde_json::from_slice(bytes).with_context(|| format!("the results rank {from} sent"))?;
        for r in &mut theirs {
            stamp(r, from);
        }
        all.extend(theirs);
    }
    Ok(Some(all))
}

/// What rank 0 ends `trainer infer` with: how the `n` observations were
/// split over `size` ranks, and the report.
fn finish_infer<T: serde::Serialize>(args: &InferArgs, all: &[T], n: usize, size: usize) -> anyhow::Result<()> {
    if size > 1 {
        let counts: Vec<String> = (0..size).map(|r| (r * n / size..(r + 1) * n / size).len().to_string()).collect();
        println!("observations per rank: {}", counts.join(", "));
    }
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(all)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Infer this rank's share of the observations (a contiguous block; the
/// results do not depend on the split), gather every rank's on rank 0, which
/// prints the table and writes the report.
fn infer(
    world: &World,
    args: &InferArgs,
    config: &infer_engine::InferConfig,
    prepared: &infer_engine::Prepared,
) -> anyhow::Result<()> {
    let (rank, size, n) = (world.rank(), world.size(), prepared.len());
    let mine = rank * n / size..(rank + 1) * n / size;
    let results = prepared.infer(config, mine, |i, r| {
        let mut line = format!("observation {}", i + 1);
        if size > 1 {
            line += &format!(" (rank {rank})");
        }
        line += ":";
        if let (Some(network), Some(prior)) = (&r.network, &r.prior) {
            line += &format!(" ESS {:.2} with the network, {:.2} with the prior", network.ess, prior.ess);
        }
        if let Some(rmh) = &r.rmh {
            let worst = rmh.rhat.iter().flatten().copied().fold(f64::NAN, f64::max);
            line += &format!(
                " Metropolis-Hastings ESS {:.1}, acceptance {:.3}, largest R-hat {worst:.3}",
                rmh.posterior.ess, rmh.acceptance
            );
        }
        eprintln!("{line}");
    })?;
    let Some(all) = gather_on_root(world, &results, |r, from| r.rank = from)? else { return Ok(()) };
    print!("{}", infer_engine::table(&all, args.samples));
    finish_infer(args, &all, n, size)
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum OptimizerKind {
    /// SGD with momentum (MLPerf CosmoFlow).
    Sgd,
    /// Adam (CosmoFlow SC18), epsilon 1e-8.
    Adam,
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

/// The options every model takes; each model adds its own
/// (`trainer train MODEL --help`).
#[derive(Args, Debug)]
struct TrainArgs {
    /// The model's configuration (default: the model's first; CosmoFlow: mlperf and
    /// sc18 take 128³ inputs, mlperf-small and sc18-small 32³, for tests and CPUs).
    #[arg(long)]
    config: Option<String>,
    /// Where to train: cpu, or gpu[:N] (a build with the `gpu` feature, on a
    /// node whose Vulkan driver lists a GPU).
    #[arg(long, default_value = "cpu")]
    device: DeviceChoice,
    /// Dataset directory with manifest.json (e.g. `simgen cosmo --out`), read by every rank.
    /// One of --data, --staged, --node-local, --synthetic-data (or etalumis' --online) is needed.
    #[arg(long, conflicts_with_all = ["staged", "node_local", "synthetic_data"])]
    data: Option<PathBuf>,
    /// Node-local copies made by `stager stage`: the same --dest template
    /// (`/tmp/bb/node{node}`). The placement record the stager wrote in
    /// each node's destination says which files and samples it holds.
    #[arg(long, conflicts_with = "node_local")]
    staged: Option<String>,
    /// Data each node generated for itself (`simgen ... --out` with the
    /// same node-local template, e.g. `/tmp/bb/node{node}/cbed`): each
    /// node's ranks train on its own samples, so the data grows with the
    /// nodes; without --val, --val-fraction of each node's samples validate.
    #[arg(long, conflicts_with = "synthetic_data")]
    node_local: Option<String>,
    /// Train on SAMPLES samples per epoch (over all ranks) of the model's
    /// shapes made in memory, reading no file: compute and the gradient
    /// exchange measured apart from I/O (Mathuriya et al. 2018's dummy
    /// data). No validation. Every model but Etalumis (whose layers come
    /// from the addresses of real traces); fields, maps and events at the
    /// configuration's size.
    #[arg(long, value_name = "SAMPLES", conflicts_with = "staged")]
    synthetic_data: Option<usize>,
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
    /// Adam's β1, the decay of its first moment (DCGAN and CosmoGAN: 0.5).
    #[arg(long, default_value_t = 0.9)]
    adam_beta1: f32,
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
    /// The warm-up's first rate (Laanait et al.: 1e-4, rising to --lr,
    /// which they set to the number of ranks times the base rate); default
    /// --lr divided by the warm-up steps.
    #[arg(long, requires = "warmup_epochs")]
    warmup_start: Option<f32>,
    /// L2 weight decay λ: λ·w added to every gradient (Laanait et al.: 1e-4).
    #[arg(long, default_value_t = 0.0)]
    weight_decay: f32,
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
    /// Reduce the gradients in groups of --fusion-mb as back-propagation completes each group, so the
    /// exchange runs under the rest of the backward pass (Kurth et al. 2018; Laanait et al. 2019); the
    /// optimiser step waits only for the groups not yet reduced. Give a --fusion-mb well below the
    /// model's gradients (the report's `parameters` times 4 bytes), or there is one group and nothing
    /// to overlap.
    #[arg(long, conflicts_with = "grad_lag")]
    reduce_during_backward: bool,
    /// How gradients are summed over the ranks: flat (one allreduce over every rank) or hierarchical
    /// (reduce inside each node, each of its ranks allreduces its part between nodes, gather inside the
    /// node; Kurth et al. 2018). Hierarchical needs the same number of ranks on every node.
    #[arg(long, value_enum, default_value_t = ExchangeArg::Flat)]
    exchange: ExchangeArg,
    /// How each rank's kernel threads wait between the parallel operations of a step: active (awake,
    /// looking for work and yielding the core between looks, as OpenMP's OMP_WAIT_POLICY=active),
    /// passive (asleep until woken), or auto: active when every thread of every rank on this machine
    /// has a core of its own (ranks x threads <= cores), passive when they share cores.
    #[arg(long, value_enum, default_value_t = WaitArg::Auto)]
    wait_policy: WaitArg,
    /// Fusion buffer size in MiB (0: one allreduce per tensor).
    #[arg(long, default_value_t = 64.0)]
    fusion_mb: f64,
    /// Seed of the initial parameters, the sample order, dropout and --augment.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Loader worker threads per rank.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Check every sample for NaN and infinity as it is decoded and stop
    /// at the first bad one, naming its file (one more pass over each
    /// decoded sample). Losses and gradients are checked
    /// at every step either way.
    #[arg(long)]
    check_finite: bool,
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
    /// Time how long the run takes to first reach this training loss (a
    /// step's loss, the mean over the ranks): the report's
    /// `time_to_target_secs`, counted from the start of this run. Training
    /// goes on; stop it with --epochs or --max-steps.
    #[arg(long, allow_negative_numbers = true)]
    target_loss: Option<f32>,
    /// What convolutions and dense layers compute in. bf16 and f16 as PyTorch's autocast runs them:
    /// inputs, weights and outputs rounded to the half type, products summed in f32; BatchNorm,
    /// activations, losses, the master weights, the optimiser and the gradient exchange stay f32, and
    /// so do checkpoints. bf16 needs a CPU with AVX512_BF16 (without one the run stops with one line,
    /// exit 2). f16 is emulated on the CPU: a GPU's half-precision numerics, at f32's speed or slower,
    /// to try --loss-scale before a GPU run.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Loss scaling for half precision: off; dynamic (start at 65536, halve after an overflow, double
    /// after 2000 clean steps: Micikevicius et al. 2018, PyTorch's GradScaler); or a fixed scale N.
    /// The loss is multiplied by the scale before back-propagation and the gradients divided by it in
    /// f32; a step whose gradients overflow on any rank is skipped on every rank and counted in the
    /// report (`loss_scale.skipped`).
    #[arg(long, default_value = "off")]
    loss_scale: LossScaleSpec,
    /// Also write the JSON report here.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Write the loss curve (log scale, epoch boundaries marked) as a PNG
    /// here; models whose outputs are pictures (inverse) also draw their
    /// predictions for a few validation samples beside the targets, in
    /// NAME-predictions.png next to it.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write TensorBoard event files into this directory (created if
    /// missing): the loss at every step, validation figures, samples/s,
    /// data wait, communication share and learning rate at each epoch's
    /// end. Open with `tensorboard --logdir DIR`.
    #[arg(long)]
    tensorboard: Option<PathBuf>,
    /// The --report of a 1-rank run of the same model, at the same --batch
    /// (weak scaling) or at this run's --batch times its ranks (strong
    /// scaling: the same global batch split over the ranks): the report
    /// then gives this run's parallel efficiency (samples/s over ranks x
    /// the 1-rank samples/s) and which scaling it measured.
    #[arg(long)]
    baseline: Option<PathBuf>,
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
fn prepare(
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

fn train(
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
fn list_models() -> anyhow::Result<()> {
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

/// The command line: the commands, and under `train` one command per model
/// with the options every model takes and its own.
fn cli() -> clap::Command {
    Cli::command().mut_subcommand("train", |train| {
        let train = train
            .subcommand_required(true)
            .subcommand_value_name("MODEL")
            .subcommand_help_heading("Models")
            .disable_help_subcommand(true);
        models::MODELS.iter().fold(train, |train, entry| {
            // The about last: deriving the options sets their struct's doc.
            train.subcommand(entry.command(TrainArgs::augment_args(clap::Command::new(entry.name))).about(entry.about))
        })
    })
}

/// `trainer train ... --model NAME ...` as `trainer train NAME ...`, and
/// `trainer train OPTIONS` without a model as `trainer train cosmoflow
/// OPTIONS`: how the command line named the model before each model had a
/// command of its own.
fn model_first(mut argv: Vec<OsString>) -> Vec<OsString> {
    if argv.len() < 3 || argv[1] != "train" {
        return argv;
    }
    let named = |arg: &OsString| models::MODELS.iter().any(|m| arg == m.name);
    if named(&argv[2]) || ["help", "-h", "--help"].iter().any(|h| argv[2] == *h) {
        return argv;
    }
    let flag = argv.iter().position(|a| a == "--model" || a.to_str().is_some_and(|a| a.starts_with("--model=")));
    let model = match flag {
        Some(i) if argv[i] == "--model" && i + 1 < argv.len() => {
            let model = argv.remove(i + 1);
            argv.remove(i);
            model
        }
        Some(i) => match argv[i].to_str().and_then(|a| a.strip_prefix("--model=")) {
            Some(model) => {
                let model = OsString::from(model);
                argv.remove(i);
                model
            }
            None => return argv,
        },
        None => OsString::from("cosmoflow"),
    };
    argv.insert(2, model);
    argv
}

/// Print a command-line error once for all ranks, as one line, and exit
/// with its code (2); `--help` and `--version` print in full and exit 0.
fn usage_error(e: clap::Error) -> ! {
    use clap::error::ErrorKind;
    let in_full = matches!(
        e.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    let code = e.exit_code();
    if in_full {
        cluster::logging::exit_after_usage(|| drop(e.print()), code)
    }
    let line = one_line(&e.render().to_string());
    cluster::logging::exit_after_usage(|| eprintln!("{line}"), code)
}

/// Clap's error text (the error, a tip, the usage) as one line: the
/// error, the tip in brackets, and the command whose `--help` explains.
fn one_line(rendered: &str) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut line = lines.next().unwrap_or("error: invalid command line").to_owned();
    for rest in lines {
        if let Some(tip) = rest.strip_prefix("tip: ") {
            line.push_str(&format!(" ({tip})"));
        } else if let Some(usage) = rest.strip_prefix("Usage: ") {
            let command: Vec<&str> = usage.split_whitespace().take_while(|w| !w.starts_with(['[', '<'])).collect();
            line.push_str(&format!("; see `{} --help`", command.join(" ")));
        }
    }
    line
}

/// `trainer exchange-model`'s bytes and what they are, its options checked.
fn exchanged_bytes(args: &ExchangeModelArgs) -> anyhow::Result<(f64, String)> {
    for (option, latency) in
        [("--inter-latency-us", Some(args.inter_latency_us)), ("--intra-latency-us", args.intra_latency_us)]
    {
        if let Some(latency) = latency {
            anyhow::ensure!(
                latency.is_finite() && latency >= 0.0,
                "{option} must be a number of microseconds, got {latency}"
            );
        }
    }
    for (option, bandwidth) in
        [("--inter-gb-per-sec", Some(args.inter_gb_per_sec)), ("--intra-gb-per-sec", args.intra_gb_per_sec)]
    {
        if let Some(bandwidth) = bandwidth {
            anyhow::ensure!(
                bandwidth.is_finite() && bandwidth > 0.0,
                "{option} must be a bandwidth above 0, got {bandwidth}"
            );
        }
    }
    Ok(match args.bytes {
        Some(bytes) => (bytes as f64, "given".to_owned()),
        None => {
            let entry = models::find(&args.model)?;
            let config = args.config.clone().unwrap_or_else(|| entry.configs[0].to_owned());
            let (parameters, _) = entry.build_default(&config)?.sizes()?;
            (4.0 * parameters as f64, format!("{}/{config} gradients, f32", args.model))
        }
    })
}

/// `trainer exchange-model`: measure the link between ranks 0 and 1 and
/// the summing speed, then print the predictions on rank 0. Collective.
fn exchange_model(world: &World, args: &ExchangeModelArgs, (bytes, what): (f64, String)) -> anyhow::Result<()> {
    use trainer::exchange_model::{Link, Machine, measure};
    let machine = Machine {
        nodes: args.nodes as usize,
        ranks_per_node: args.ranks_per_node as usize,
        intra: match (args.intra_latency_us, args.intra_gb_per_sec) {
            (Some(latency), Some(bandwidth)) => Link::new(latency * 1e-6, bandwidth * 1e9),
            _ => measure::link(world),
        },
        inter: Link::new(args.inter_latency_us * 1e-6, args.inter_gb_per_sec * 1e9),
        reduce_secs_per_byte: measure::reduce_secs_per_byte(world),
    };
    if world.is_root() {
        if args.json {
            let predictions: Vec<_> = trainer::exchange_model::scales(machine.nodes)
                .into_iter()
                .map(|nodes| Machine { nodes, ..machine }.predict(bytes))
                .collect();
            let json =
                serde_json::json!({ "bytes": bytes, "what": what, "machine": machine, "predictions": predictions });
            println!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            print!("{}", trainer::exchange_model::table(&machine, bytes, &what));
        }
    }
    Ok(())
}

/// A command's options or inputs refused before MPI starts: one line
/// (from one rank of an mpirun), exit 2.
fn exit_before_mpi(error: &anyhow::Error) -> ! {
    cluster::logging::print_error_once(format_args!("{}", cluster::logging::chain(error.as_ref())));
    std::process::exit(2)
}

/// MPI started, or one line and exit 1.
fn init_world() -> World {
    World::init().unwrap_or_else(|e| {
        cluster::logging::print_error(&e);
        std::process::exit(1)
    })
}

fn main() {
    // Before the pool's threads start (they keep the arena they first get).
    trainer::allocator::keep_freed_memory();
    trainer::kernels::on_pool(run);
}

fn run() {
    let matches =
        cli().try_get_matches_from(model_first(std::env::args_os().collect())).unwrap_or_else(|e| usage_error(e));
    let parsed = Cli::from_arg_matches(&matches).unwrap_or_else(|e| usage_error(e));
    match parsed.command {
        Command::Train => {}
        Command::Models => {
            if let Err(e) = list_models() {
                cluster::logging::print_error(format_args!("{}", cluster::logging::chain(e.as_ref())));
                std::process::exit(1);
            }
            return;
        }
        Command::Plot(args) => {
            if let Err(e) = plot(&args) {
                cluster::logging::print_error(format_args!("{}", cluster::logging::chain(e.as_ref())));
                std::process::exit(1);
            }
            return;
        }
        Command::ExchangeModel(args) => {
            let exchanged = exchanged_bytes(&args).unwrap_or_else(|e| exit_before_mpi(&e));
            let world = init_world();
            if world.size() < 2 && args.intra_latency_us.is_none() {
                let speaks = world.is_root();
                world.exit_agreed(
                    speaks,
                    "trainer exchange-model measures the link between two ranks: run it under `mpirun -np 2`",
                );
            }
            if let Err(e) = exchange_model(&world, &args, exchanged) {
                world.fail(cluster::logging::chain(e.as_ref()));
            }
            return;
        }
        Command::Infer(args) if args.ppx.is_some() => {
            let (config, prepared) = prepare_infer_ppx(&args).unwrap_or_else(|e| exit_before_mpi(&e));
            let world = init_world();
            if let Err(e) = infer_over_ppx(&world, &args, &config, &prepared) {
                world.fail(cluster::logging::chain(e.as_ref()));
            }
            return;
        }
        Command::Infer(args) => {
            // Bad arguments, checkpoints or data exit 2 before MPI; a
            // failure while sampling (the simulator, the network) exits 1.
            let (config, prepared) = prepare_infer(&args).unwrap_or_else(|e| exit_before_mpi(&e));
            let world = init_world();
            if let Err(e) = infer(&world, &args, &config, &prepared) {
                world.fail(cluster::logging::chain(e.as_ref()));
            }
            return;
        }
    }
    // `train` requires a model's command, so both are there.
    let Some((name, model_matches)) = matches.subcommand().and_then(|(_, train)| train.subcommand()) else {
        usage_error(cli().error(clap::error::ErrorKind::MissingSubcommand, "trainer train needs a MODEL"))
    };
    let args = TrainArgs::from_arg_matches(model_matches).unwrap_or_else(|e| usage_error(e));
    let entry = match models::find(name) {
        Ok(entry) => entry,
        Err(e) => usage_error(cli().error(clap::error::ErrorKind::InvalidSubcommand, e)),
    };
    // Check what can be checked before MPI starts, so a typo, a missing
    // GPU or a dataset of the wrong kind fails with one line and exit 2.
    let (model, mut config, baseline) = prepare(&args, entry, model_matches).unwrap_or_else(|e| exit_before_mpi(&e));
    let world = init_world();
    cluster::logging::init(world.topology(), Some("warn"));
    if args.wait_policy == WaitArg::Auto {
        config.wait = WaitPolicy::auto_here(world.ranks_on_machine());
    }
    // Before anything computes: the measurement switches the process's
    // kernel path while it times each. bf16 computes on the AVX-512
    // path's kernels alone, so other precisions keep the widest path.
    if config.precision == Precision::F32 && config.device == DeviceChoice::Cpu {
        trainer::kernels::calibrate::calibrate();
    }
    if let Err(e) = train(&world, model, &config, baseline, &args) {
        match e.downcast_ref::<trainer::engine::TrainError>() {
            // Every rank stopped at the same step and knows it: one prints,
            // all finalise MPI and exit non-zero.
            Some(agreed @ trainer::engine::TrainError::NonFinite(_)) => {
                world.exit_agreed(agreed.reported_here(), cluster::logging::chain(e.as_ref()))
            }
            // A failure on one rank is not seen by the others, which would
            // wait in the next allreduce: end the whole job.
            _ => world.fail(cluster::logging::chain(e.as_ref())),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn argv(line: &str) -> Vec<OsString> {
        line.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn the_model_flag_becomes_the_models_command_and_cosmoflow_is_the_default() {
        let cases = [
            ("trainer train --data d --model etalumis --batch 2", "trainer train etalumis --data d --batch 2"),
            ("trainer train --model=tiramisu --data d", "trainer train tiramisu --data d"),
            ("trainer train --data d", "trainer train cosmoflow --data d"),
            ("trainer train inverse --data d", "trainer train inverse --data d"),
            ("trainer train --help", "trainer train --help"),
            ("trainer train", "trainer train"),
            ("trainer models", "trainer models"),
        ];
        for (given, wanted) in cases {
            assert_eq!(model_first(argv(given)), argv(wanted), "{given}");
        }
    }

    #[test]
    fn a_flag_another_model_has_is_refused_by_the_command_line_in_one_line() {
        let error = cli()
            .try_get_matches_from(model_first(argv("trainer train --model cosmoflow --lstm-depth 3 --data d")))
            .unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(error.exit_code(), 2);
        let line = one_line(&error.render().to_string());
        assert_eq!(line, "error: unexpected argument '--lstm-depth' found; see `trainer train cosmoflow --help`");
        for (model, flag) in
            [("etalumis", "--dropout 0.1"), ("deeplabv3plus", "--dropout 0.1"), ("tiramisu", "--init he")]
        {
            let line = format!("trainer train {model} {flag} --data d");
            assert!(cli().try_get_matches_from(argv(&line)).is_err(), "{line}");
        }
        assert!(cli().try_get_matches_from(argv("trainer train etalumis --lstm-depth 3 --data d")).is_ok());
    }

    #[test]
    fn every_model_has_a_command_with_the_common_and_its_own_options() {
        let command = cli();
        let train = command.find_subcommand("train").unwrap();
        for entry in models::MODELS {
            let model = train.find_subcommand(entry.name).unwrap();
            assert!(model.get_arguments().any(|a| a.get_id() == "batch"), "{}", entry.name);
        }
        command.debug_assert();
    }
}

/// `--exchange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExchangeArg {
    Flat,
    Hierarchical,
}

/// `--wait-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum WaitArg {
    Auto,
    Active,
    Passive,
}
