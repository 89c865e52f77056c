//! The training engine, the same for every model: batches from the loader,
//! forward and backward through the model's network, gradients averaged
//! over the ranks with fused MPI allreduce (blocking, or lagged one step so
//! the exchange overlaps the next step's compute), the same optimiser step
//! on every rank, the model's state averaged and every rank's tensors
//! checked to agree at each epoch's end, validation, checkpoints.
//!
//! A model plugs in through [`TrainModel`]; the loop never names one.

pub mod collective;
pub mod config;
pub mod data;
pub mod device;
pub mod elastic;
pub mod guard;
pub mod model;
pub mod report;
pub mod resume;
pub mod segments;
pub mod steps;

use std::time::Instant;

use burn::tensor::{Device, Tensor};
use cluster::World;
use loader::pipeline::{Batch, Loader, LoaderConfig};
use loader::source::{RankData, ValSet};
use mpi::traits::*;

use crate::checkpoint::{self, Checkpoint, RunShape, TrainState};
use crate::exchange::{GradientExchange, LaggedExchange};
use crate::loss_scale::LossScaler;
use crate::optim::Optimizer;
use crate::overlap::OverlapExchange;
use crate::params::{self, TensorInfo};
use crate::schedule::Schedule;
pub use config::{ScheduleSpec, TrainConfig};
pub use device::{DeviceChoice, DeviceError};
pub use loader::source::Origin;
pub use model::{
    InitChoice, ModelChoice, ModelSummary, Sampling, Split, StepContext, TrainModel, Validation, dropout_probability,
    norm_group,
};
pub use report::{EpochReport, StepTimes, TrainReport};
pub use segments::Cuts;
pub use steps::StepStats;

/// Why training stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// The model or its configuration does not exist or does not fit.
    #[error("{0}")]
    Model(String),
    /// The data could not be opened or read, or is not what the model takes.
    #[error("{0}")]
    Data(String),
    /// A sample could not be opened, read or decoded.
    #[error(transparent)]
    Dataset(#[from] loader::dataset::DatasetError),
    /// A dataset's manifest could not be read or is invalid.
    #[error(transparent)]
    Manifest(#[from] formats::manifest::ManifestError),
    /// The training or validation data cannot be opened for this rank
    /// (a template, a staged destination and its placement record, held-out files).
    #[error(transparent)]
    Source(#[from] loader::source::SourceError),
    /// An LMDB store could not be read.
    #[error(transparent)]
    Lmdb(#[from] formats::lmdb::LmdbError),
    /// A climate sample or statistics file could not be read.
    #[error(transparent)]
    Climate(#[from] formats::climate::ClimateError),
    /// A checkpoint could not be read or written.
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
    /// The device cannot be used.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The ranks' parameters differ (a bug, or a bad node).
    #[error("parameters differ between ranks after epoch {epoch} (checksums {min:016x} .. {max:016x})")]
    Diverged {
        /// Epoch (1-based).
        epoch: u64,
        /// Smallest checksum.
        min: u64,
        /// Largest checksum.
        max: u64,
    },
    /// Anything else about the arguments.
    #[error("{0}")]
    Invalid(String),
    /// A model's options on the command line or in a registry entry.
    #[error(transparent)]
    Options(#[from] clap::Error),
    /// A model's own typed error: its configuration, its network, its
    /// simulator ([`TrainError::of_model`]).
    #[error(transparent)]
    OfModel(Box<dyn std::error::Error + Send + Sync>),
    /// A typed error and what was being done when it happened
    /// ([`TrainError::context`]); `logging::chain` prints both.
    #[error("{context}")]
    Context {
        /// What was being done, or on what (`--checkpoint DIR`).
        context: String,
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A loss, gradient or parameter is not a finite number.
    #[error("{0}")]
    NonFinite(guard::NonFinite),
}

impl TrainError {
    /// A model's own typed error, its causes kept.
    pub fn of_model(error: impl std::error::Error + Send + Sync + 'static) -> TrainError {
        TrainError::OfModel(Box::new(error))
    }

    /// `error`, caused while doing `context`, its causes kept.
    pub fn context(context: impl Into<String>, error: impl std::error::Error + Send + Sync + 'static) -> TrainError {
        TrainError::Context { context: context.into(), source: Box::new(error) }
    }

    /// Whether this rank prints the error. Errors every rank meets alike
    /// at the same point are printed by one rank only (see
    /// [`guard::NonFinite::reports`]); every other error by the rank that
    /// met it.
    pub fn reported_here(&self) -> bool {
        match self {
            TrainError::NonFinite(e) => e.reports,
            _ => true,
        }
    }
}

impl From<params::UnknownTensor> for TrainError {
    fn from(e: params::UnknownTensor) -> Self {
        TrainError::of_model(e)
    }
}

/// Training samples (the first a rank holds) a model fits its input
/// statistics on.
const FIT_SAMPLES: usize = 32;

/// The gradient exchange of a run.
enum Exchange {
    Blocking(GradientExchange),
    Lagged {
        exchange: LaggedExchange,
        local: Vec<Vec<f32>>,
        pending: Vec<Vec<f32>>,
    },
    /// Groups reduced as back-propagation completes them.
    DuringBackward(OverlapExchange),
}

/// A rank that fails at a given step, so tests can check that a failing
/// rank ends the job instead of hanging it: `STAGEHAND_TRAINER_ABORT_AT=rank:step`
/// kills the process, `STAGEHAND_TRAINER_PANIC_AT=rank:step` panics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Abort,
    Panic,
}

fn fault_at(world: &World) -> Option<(Fault, u64)> {
    [("STAGEHAND_TRAINER_ABORT_AT", Fault::Abort), ("STAGEHAND_TRAINER_PANIC_AT", Fault::Panic)].into_iter().find_map(
        |(variable, fault)| {
            let value = std::env::var(variable).ok()?;
            let (rank, step) = value.split_once(':')?;
            (rank.parse::<usize>().ok()? == world.rank()).then(|| step.parse().ok().map(|s| (fault, s))).flatten()
        },
    )
}

/// `gradient`, with an infinity in its first value when `poison`
/// ([`OVERFLOW_AT`]).
fn overflowed(gradient: &[f32], poison: bool) -> std::borrow::Cow<'_, [f32]> {
    if !poison {
        return std::borrow::Cow::Borrowed(gradient);
    }
    let mut poisoned = gradient.to_vec();
    if let Some(first) = poisoned.first_mut() {
        *first = f32::INFINITY;
    }
    std::borrow::Cow::Owned(poisoned)
}

/// Testing aid: `STAGEHAND_TRAINER_OVERFLOW_AT=RANK:STEP` makes RANK's
/// gradients at optimiser step STEP hold an infinity, once: what an f16
/// overflow does, for the loss scale to skip.
pub const OVERFLOW_AT: &str = "STAGEHAND_TRAINER_OVERFLOW_AT";

fn overflow_at(world: &World) -> Option<u64> {
    let value = std::env::var(OVERFLOW_AT).ok()?;
    let (rank, step) = value.split_once(':')?;
    (rank.parse::<usize>().ok()? == world.rank()).then(|| step.parse().ok()).flatten()
}

/// The lock of a checkpoint directory: a second job training into it
/// would read the first's checkpoints mid-write and remove them as stale.
fn lock_checkpoints(dir: &std::path::Path) -> Result<formats::lock::DirLock, TrainError> {
    let context = || format!("--checkpoint {}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| TrainError::context(context(), e))?;
    formats::lock::DirLock::acquire(&dir.join(checkpoint::LOCK_FILE)).map_err(|e| match e {
        formats::lock::LockError::Held { holder, .. } => TrainError::Invalid(format!(
            "--checkpoint {} is in use by another training job ({holder}); wait for it to end, or use another directory",
            dir.display()
        )),
        other => TrainError::context(context(), other),
    })
}

/// The optimiser's name as a checkpoint records it.
fn optimizer_name(config: &TrainConfig) -> &'static str {
    match config.rule {
        crate::optim::Rule::Sgd { .. } => "sgd",
        crate::optim::Rule::Adam { .. } => "adam",
    }
}

/// One optimiser step of every parameter tensor with `grads`.
fn apply(optimizer: &mut Optimizer, lr: f32, values: &mut [Vec<f32>], grads: &[&[f32]]) {
    optimizer.step(lr, &mut values.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>(), grads);
}

/// The one value of a scalar tensor (a loss, a metric's sum), for models
/// and the loop alike.
pub fn scalar(t: Tensor<1>) -> Result<f32, TrainError> {
    t.into_data()
        .try_into_vec_as::<f32>()
        .ok()
        .and_then(|v| v.first().copied())
        .ok_or_else(|| TrainError::Model("a loss or metric is not a scalar f32 tensor".into()))
}

/// Where a run starts: fresh, or from a checkpoint.
struct Start {
    values: Vec<Vec<f32>>,
    state: Vec<Vec<f32>>,
    epoch: u64,
    skip: u64,
    /// The checkpoint's epoch dealt to this run's ranks (saved on another
    /// number of them, or within such a deal).
    deal: Option<elastic::Deal>,
    losses: Vec<f32>,
    /// Where the loss scale stood (resumed runs with `--loss-scale`).
    loss_scale: Option<crate::loss_scale::LossScaleState>,
}

/// A run in progress: everything the epochs share.
struct Run<'a, M: TrainModel> {
    world: &'a World,
    config: &'a TrainConfig,
    model: &'a M,
    device: Device,
    summary: ModelSummary,
    lengths: Vec<usize>,
    state_lengths: Vec<usize>,
    values: Vec<Vec<f32>>,
    state: Vec<Vec<f32>>,
    optimizer: Optimizer,
    exchange: Exchange,
    schedule: Schedule,
    steps_per_epoch: u64,
    /// What a mid-epoch checkpoint of this run may be resumed with.
    shape: RunShape,
    losses: Vec<f32>,
    loader_config: LoaderConfig,
    fault: Option<(Fault, u64)>,
    /// The step at which this rank's gradients are made to overflow
    /// (`STAGEHAND_TRAINER_OVERFLOW_AT`), until it has happened once.
    overflow_at: Option<u64>,
    /// The loss scale (`--loss-scale`; inactive without it).
    scaler: LossScaler,
    /// Whether the model's gradients may be sparse ([`TrainModel::sparse_gradients`]).
    sparse: bool,
    /// When [`run`] began: the clock of the time to the first batch.
    entered: Instant,
}

/// Where a step stands in its epoch: what a mid-epoch checkpoint records.
#[derive(Debug, Clone, Copy)]
struct EpochAt {
    epoch: u64,
    /// Steps of the epoch taken (of the deal, in a dealt epoch).
    into_epoch: u64,
    /// Steps the epoch has (the deal's, in a dealt epoch).
    steps: u64,
    /// Where a dealt epoch began.
    begun: Option<loader::elastic::EpochStart>,
}

/// An error unless this host computes `--precision` as asked: bf16 on
/// the CPU needs AVX512_BF16 (a run without it would be emulated at a
/// fraction of f32's speed, which nobody asks for by choosing bf16).
pub fn precision_available(config: &TrainConfig) -> Result<(), TrainError> {
    use crate::kernels::Precision;
    if config.precision == Precision::Bf16 && config.device == DeviceChoice::Cpu && !Precision::Bf16.native() {
        return Err(TrainError::Invalid(
            "--precision bf16 needs a CPU with AVX512_BF16 (Intel Sapphire Rapids or later, AMD Zen 4 or later); \
             this one has none: train with --precision f32"
                .into(),
        ));
    }
    Ok(())
}

/// Validation samples `--plot` pictures the predictions of.
const PICTURED_SAMPLES: usize = 4;

/// Train `model`. Collective: every rank calls it with the same
/// configuration. `on_epoch` sees each epoch's report on every rank.
pub fn run<M: TrainModel>(
    world: &World,
    mut model: M,
    config: &TrainConfig,
    on_epoch: &mut dyn FnMut(&EpochReport),
) -> Result<TrainReport, TrainError> {
    let entered = Instant::now();
    config.validate().map_err(TrainError::Invalid)?;
    // Rank 0 writes the checkpoints and holds their directory for the run.
    let _checkpoints_held = match (&config.checkpoint, world.is_root()) {
        (Some(dir), true) => Some(lock_checkpoints(dir)?),
        _ => None,
    };
    let device = config.device.device()?;
    precision_available(config)?;
    crate::kernels::precision::set_process(config.precision);
    if config.grad_lag && model.sparse_gradients() {
        return Err(TrainError::Invalid(format!(
            "--grad-lag 1 reduces every tensor each step; model '{}' has layers a batch may not use, whose gradients \
             the ranks must first agree on (run it without --grad-lag)",
            model.summary().name
        )));
    }
    // The data first: a model may shape its network by it (Etalumis makes
    // layers for the addresses the traces visit).
    let loader_config = config.loader();
    let data = data::open(world, &model, config, &loader_config)?;
    if let loader::source::TrainSet::Global(share) = &*data.train {
        global_shuffle_fits(share, config)?;
    }
    let net = model.build(&device)?;
    let tensors = params::inventory(&net)?;
    let (first, same_everywhere) = data.train.first_samples(FIT_SAMPLES);
    model.fit(world, &*data.train, &first, same_everywhere)?;
    let steps_per_epoch = loader_config.steps(&*data.sampler) as u64;
    let summary = model.summary();
    let lengths: Vec<usize> = tensors.iter().filter(|t| t.role.trainable()).map(TensorInfo::len).collect();
    let state_lengths: Vec<usize> = tensors.iter().filter(|t| !t.role.trainable()).map(TensorInfo::len).collect();
    let mut optimizer = Optimizer::new(config.rule, config.trust, &lengths).with_weight_decay(config.weight_decay);
    let shape = RunShape {
        batch: config.batch as u64,
        ranks: world.size() as u64,
        steps_per_epoch,
        optimizer: optimizer_name(config).into(),
    };
    let mut start = start(
        config,
        &model,
        &summary,
        &tensors,
        (&lengths, &state_lengths),
        (&mut optimizer, &shape),
        (&*data.sampler, &loader_config),
    )?;
    // A run that only finishes a dealt epoch takes none of its own.
    let only_dealt = start.deal.is_some() && start.epoch + 1 >= config.epochs;
    if steps_per_epoch == 0 && !only_dealt {
        return Err(TrainError::Invalid(format!(
            "{} training samples over {} ranks do not fill one batch of {} per rank",
            loader_config.per_rank(&*data.sampler) * world.size(),
            world.size(),
            config.batch
        )));
    }
    if start.deal.is_none() && start.skip >= steps_per_epoch {
        return Err(TrainError::Invalid(format!(
            "the checkpoint was saved {} steps into an epoch; this run's epochs have only {steps_per_epoch} steps",
            start.skip
        )));
    }
    // Rank 0's tensors are everyone's, whatever each rank read or drew.
    for tensor in start.values.iter_mut().chain(start.state.iter_mut()) {
        world.comm().process_at_rank(0).broadcast_into(&mut tensor[..]);
    }
    let net = params::with_values(net, &start.values, &device);
    let net = params::with_state(net, &start.state, &device);
    let invalid = |e: cluster::allreduce::AllreduceError| TrainError::Invalid(e.to_string());
    let exchange = if config.grad_lag {
        let exchange = LaggedExchange::new(world, &lengths, config.fusion_bytes, config.exchange).ok_or_else(|| {
            TrainError::Invalid("--grad-lag 1 needs MPI_THREAD_MULTIPLE, which this MPI did not grant".into())
        })?;
        let zeros = || lengths.iter().map(|&n| vec![0.0f32; n]).collect::<Vec<_>>();
        Exchange::Lagged { exchange: exchange.map_err(invalid)?, local: zeros(), pending: zeros() }
    } else if config.reduce_during_backward {
        let exchange =
            OverlapExchange::new(world, &lengths, config.fusion_bytes, config.exchange).ok_or_else(|| {
                TrainError::Invalid(
                    "--reduce-during-backward needs MPI_THREAD_MULTIPLE, which this MPI did not grant".into(),
                )
            })?;
        Exchange::DuringBackward(exchange.map_err(invalid)?)
    } else {
        Exchange::Blocking(
            GradientExchange::new(world, &lengths, config.fusion_bytes, config.exchange).map_err(invalid)?,
        )
    };
    let mut scaler = LossScaler::new(config.loss_scale);
    if let Some(state) = start.loss_scale.filter(|_| scaler.active()) {
        scaler.resume(state);
    }
    let mut run = Run {
        world,
        config,
        model: &model,
        device,
        summary,
        values: std::mem::take(&mut start.values),
        state: std::mem::take(&mut start.state),
        lengths,
        state_lengths,
        optimizer,
        exchange,
        schedule: config.schedule(steps_per_epoch),
        steps_per_epoch,
        shape,
        losses: std::mem::take(&mut start.losses),
        loader_config,
        fault: fault_at(world),
        overflow_at: overflow_at(world),
        scaler,
        sparse: model.sparse_gradients(),
        entered,
    };
    run.epochs(net, &data, (start.epoch, start.skip, start.deal), on_epoch)
}

/// A run reading a served global shuffle reads what the service fetches
/// for: its batches, as many epochs or fewer, from the first read on (the
/// service fetches ahead from there, so a resumed run would wait for
/// reads it never makes).
fn global_shuffle_fits(share: &loader::global::GlobalShare, config: &TrainConfig) -> Result<(), TrainError> {
    if config.batch != share.batch() {
        return Err(TrainError::Invalid(format!(
            "the staging service serves a global shuffle in batches of {} per rank; this run's --batch is {}",
            share.batch(),
            config.batch
        )));
    }
    if config.epochs > share.epochs() {
        return Err(TrainError::Invalid(format!(
            "the staging service fetches a global shuffle for {} epochs; this run trains {} (give `stager serve` \
             --epochs {})",
            share.epochs(),
            config.epochs,
            config.epochs
        )));
    }
    if let Some(dir) = &config.checkpoint
        && checkpoint::load_latest(dir)?.is_some()
    {
        return Err(TrainError::Invalid(format!(
            "{} holds a checkpoint: resuming a served global shuffle is not supported (its service fetches \
             from the first read on); start the service and the run afresh",
            dir.display()
        )));
    }
    Ok(())
}

/// Fresh tensors, or the latest checkpoint's (checked against this run).
fn start<M: TrainModel>(
    config: &TrainConfig,
    model: &M,
    summary: &ModelSummary,
    tensors: &[TensorInfo],
    (lengths, state_lengths): (&[usize], &[usize]),
    (optimizer, shape): (&mut Optimizer, &RunShape),
    (sampler, loader_config): (&dyn loader::sampler::Sampler, &LoaderConfig),
) -> Result<Start, TrainError> {
    let resumed = match &config.checkpoint {
        Some(dir) => checkpoint::load_latest(dir)?,
        None => None,
    };
    let Some(cp) = resumed else {
        let (values, state) = params::initial(tensors, model.weight_init(), config.seed);
        return Ok(Start { values, state, epoch: 0, skip: 0, deal: None, losses: Vec::new(), loss_scale: None });
    };
    same_layout(&cp.state.layout, &model.layout())?;
    let steps_at = |ranks| elastic::steps_at(sampler, loader_config, ranks);
    resume::check_resumable(&cp.state, shape, config.seed, &steps_at).map_err(TrainError::Invalid)?;
    let deal = elastic::deal(&cp.state, sampler, loader_config, shape.ranks)?;
    if cp.state.lengths != lengths || cp.state.model != summary.config || cp.state.state_lengths != state_lengths {
        return Err(TrainError::Invalid(format!(
            "the checkpoint holds model '{}' with {} tensors and {} state tensors; this run is '{}' with {} and {}",
            cp.state.model,
            cp.state.lengths.len(),
            cp.state.state_lengths.len(),
            summary.config,
            lengths.len(),
            state_lengths.len()
        )));
    }
    optimizer.first = cp.first;
    if !cp.second.is_empty() {
        optimizer.second = cp.second;
    }
    optimizer.steps = cp.state.steps;
    Ok(Start {
        values: cp.params,
        state: cp.model_state,
        epoch: cp.state.epochs_done,
        skip: cp.state.steps_into_epoch,
        deal,
        losses: cp.state.losses,
        loss_scale: cp.state.loss_scale,
    })
}

impl<M: TrainModel> Run<'_, M> {
    /// The epochs from `start_epoch` (`skip` steps into it) to the end.
    fn epochs(
        &mut self,
        mut net: M::Net,
        data: &RankData,
        (start_epoch, resume_skip, mut deal): (u64, u64, Option<elastic::Deal>),
        on_epoch: &mut dyn FnMut(&EpochReport),
    ) -> Result<TrainReport, TrainError> {
        let mut loader: Option<Loader> = None;
        // The next epoch's loader, started when this epoch's last batch is
        // taken, so that its workers open files and decode the next epoch's
        // first batches during the last step and the epoch's end. Started
        // at the next epoch's first step instead, that step waited for all
        // of it, a visible share of short epochs (`docs/benchmarks.md`,
        // CosmoFlow).
        let mut early: Option<Loader> = None;
        let mut epochs = Vec::new();
        let mut run_times = StepTimes::default();
        let mut run_steps = 0u64;
        let run_started = Instant::now();
        let mut first_batch_secs = None;
        // Every rank's step measurements of this run, on every rank.
        let mut run_measured = vec![steps::RankSteps::default(); self.world.size()];
        let mut time_to_target = None;
        for epoch in start_epoch..self.config.epochs {
            let started = Instant::now();
            // A run resumed from a mid-epoch checkpoint starts at the batch
            // it had reached, of its own order or of the deal of the rest.
            let dealt = deal.take().filter(|_| epoch == start_epoch);
            let (mut batches, epoch_steps, skip, begun) = match (dealt, loader.take()) {
                (Some(d), previous) => {
                    let buffers = previous.map(|l| l.recycler()).unwrap_or_default();
                    let steps = d.batches.len() as u64;
                    let batches =
                        Loader::of_batches(data.train.clone(), d.batches, self.loader_config, d.skip, buffers);
                    (batches, steps, d.skip as u64, Some(d.start))
                }
                (None, previous) => {
                    let skip = if epoch == start_epoch { resume_skip } else { 0 };
                    let batches = match (early.take(), previous) {
                        // Only ever started for a later epoch, from its start.
                        (Some(started), _) => started,
                        (None, None) => Loader::resume(
                            data.train.clone(),
                            self.loader_config.order(&*data.sampler, epoch),
                            self.loader_config,
                            skip as usize,
                        ),
                        (None, Some(previous)) => {
                            previous.next_epoch_at(self.loader_config.order(&*data.sampler, epoch), skip as usize)
                        }
                    };
                    (batches, self.steps_per_epoch, skip, None)
                }
            };
            let remaining = epoch_steps.saturating_sub(skip);
            let mut taken = 0u64;
            let mut times = StepTimes::default();
            let mut epoch_losses = Vec::with_capacity(epoch_steps as usize);
            let mut epoch_samples = 0u64;
            let mut measured = steps::RankSteps::default();
            // When each step ended, from the start of this run.
            let mut step_ends = Vec::with_capacity(epoch_steps as usize);
            loop {
                if self.config.max_steps.is_some_and(|max| run_steps >= max) {
                    break;
                }
                let t = Instant::now();
                let communication_before = times.communication;
                let Some(batch) = batches.next() else { break };
                let batch = batch.map_err(TrainError::from)?;
                times.data_wait += t.elapsed().as_secs_f64();
                taken += 1;
                // The next epoch's loader starts at this one's last batch: on
                // ranks whose cores all compute, starting it a prefetch window
                // earlier (as the Python package does for its consumers)
                // raised the data wait (docs/benchmarks.md, CosmoFlow).
                if early.is_none() && epoch + 1 < self.config.epochs && taken >= remaining {
                    let order = self.loader_config.order(&*data.sampler, epoch + 1);
                    early = Some(batches.start_next_epoch(order));
                }
                first_batch_secs.get_or_insert_with(|| self.entered.elapsed().as_secs_f64());
                // A dealt step's batches differ in size between ranks.
                let share = begun.map(|_| elastic::share_of_step(self.world, batch.len()));
                epoch_samples += batch.len() as u64;
                let flops = self.model.training_flops(&batch)?;
                let stepped =
                    crate::kernels::wait::busy(self.config.wait, || self.step(net, &batch, (epoch, share), &mut times));
                let (next, loss) = match stepped {
                    Ok(stepped) => stepped,
                    Err(TrainError::NonFinite(mut e)) if e.reports => {
                        e.detail = guard::diagnose(&batch, &*data.train, e.loss);
                        return Err(TrainError::NonFinite(e));
                    }
                    Err(e) => return Err(e),
                };
                net = next;
                batches.recycle(batch);
                let seconds = t.elapsed().as_secs_f64();
                measured.push(seconds, seconds - (times.communication - communication_before), flops);
                step_ends.push(run_started.elapsed().as_secs_f64());
                epoch_losses.push(loss);
                run_steps += 1;
                let into_epoch = skip + epoch_losses.len() as u64;
                let at = EpochAt { epoch, into_epoch, steps: epoch_steps, begun };
                net = self.maybe_checkpoint_mid_epoch(net, at, &epoch_losses, &mut times)?;
            }
            loader = Some(batches);
            let stopped_early = (epoch_losses.len() as u64) < epoch_steps - skip;
            let gathered = steps::gather(self.world, &measured);
            let (next, report) = self.end_epoch(
                net,
                data.validation.as_ref(),
                (epoch, stopped_early),
                (&epoch_losses, epoch_samples, &gathered),
                times,
                started,
            )?;
            net = next;
            run_measured.iter_mut().zip(&gathered).for_each(|(run, epoch)| run.extend(epoch));
            if time_to_target.is_none()
                && let Some(target) = self.config.target_loss
            {
                time_to_target = report.step_losses.iter().position(|&l| l <= target).map(|k| step_ends[k]);
            }
            on_epoch(&report);
            run_times.add(&times);
            epochs.push(report);
            if stopped_early {
                break;
            }
        }
        self.picture(&net, data.validation.as_ref())?;
        let seconds = run_started.elapsed().as_secs_f64();
        let run_samples: u64 = epochs.iter().map(|e| e.samples).sum();
        Ok(TrainReport {
            model: self.summary.clone(),
            device: self.config.device.to_string(),
            init: self.model.weight_init(),
            parameters: self.lengths.iter().sum(),
            state_values: self.state_lengths.iter().sum(),
            ranks: self.world.size(),
            batch_per_rank: self.config.batch,
            fusion_buffers: crate::fusion::FusionPlan::new(&self.lengths, self.config.fusion_bytes).buffers(),
            reduced_gradient_share: match &self.exchange {
                Exchange::Blocking(ex) => {
                    let (reduced, dense) = ex.reduced_values();
                    (dense > 0).then(|| reduced as f64 / dense as f64)
                }
                Exchange::Lagged { .. } | Exchange::DuringBackward(_) => None,
            },
            reduce_during_backward: self.config.reduce_during_backward,
            gradient_groups: match &self.exchange {
                Exchange::DuringBackward(ex) => Some(ex.counts()),
                _ => None,
            },
            grad_lag: self.config.grad_lag,
            precision: self.config.precision,
            kernels: crate::kernels::calibrate::choice(),
            loss_scale: self.scaler.active().then(|| self.scaler.state()),
            exchange: self.config.exchange.resolved(self.world),
            wait_policy: self.config.wait,
            augment: model_flag(&self.summary, "augment"),
            standardize: model_flag(&self.summary, "standardize"),
            steps_per_epoch: self.steps_per_epoch,
            resumed_from_epoch: start_epoch,
            epochs,
            losses: std::mem::take(&mut self.losses),
            times: run_times,
            fractions: run_times.fractions(),
            samples_per_sec: run_samples as f64 / seconds,
            step_time: StepStats::of(&run_measured),
            flops_per_sec: steps::flops_per_sec(&run_measured, seconds),
            target_loss: self.config.target_loss,
            time_to_target_secs: time_to_target,
            first_batch_secs,
            staging_wait_secs: loader::dataset::Dataset::staging_wait_secs(&*data.train),
            parallel_efficiency: None,
            scaling: None,
            params: std::mem::take(&mut self.values),
            state: std::mem::take(&mut self.state),
        })
    }

    /// One training step: forward, backward, exchange, update, write back.
    /// `share` is this rank's share of the step's samples in a dealt step
    /// (ranks' batches of different sizes; [`elastic`]), `None` in an
    /// ordinary one. Returns the network with the new parameters and the
    /// step's loss (weighted by `share` so the mean over ranks is the mean
    /// over the step's samples).
    fn step(
        &mut self,
        net: M::Net,
        batch: &Batch,
        (epoch, share): (u64, Option<f32>),
        times: &mut StepTimes,
    ) -> Result<(M::Net, f32), TrainError> {
        let t = Instant::now();
        let context =
            StepContext { seed: self.config.seed, epoch, step: self.optimizer.steps, rank: self.world.rank() };
        let ranks = self.world.size() as f32;
        let weight = share.map_or(1.0 / ranks, |share| share);
        if let Exchange::DuringBackward(_) = self.exchange {
            return self.step_reducing_during_backward(net, batch, (epoch, share), &context, times);
        }
        // The loss is scaled for back-propagation (`--loss-scale`); the
        // gradients are unscaled, in f32, on their way into the exchange.
        let unscale = 1.0 / self.scaler.scale();
        let poison = self.overflow_at == Some(self.optimizer.steps);
        // A rank with no sample in a dealt step adds nothing but zeros.
        let computed = if batch.is_empty() {
            None
        } else {
            let loss = self.model.loss(&net, batch, &context, &self.device)?;
            let grads =
                if self.scaler.active() { (loss.clone() * self.scaler.scale()).backward() } else { loss.backward() };
            Some((scalar(loss)?, grads))
        };
        let loss = computed.as_ref().map_or(0.0, |(loss, _)| *loss);
        let mut finite = true;
        self.inject_fault();
        let lr = self.schedule.at(self.optimizer.steps);
        let (world, step) = (self.world, self.optimizer.steps);
        match &mut self.exchange {
            Exchange::Blocking(ex) => {
                let present = match &computed {
                    Some((_, grads)) => params::gradients(&net, grads, |i, g| {
                        let g = overflowed(g, poison && i == 0);
                        finite &= ex.put_weighted(i, &g, weight * unscale);
                    }),
                    None => {
                        (0..self.lengths.len()).for_each(|i| ex.put_zeros(i));
                        vec![false; self.lengths.len()]
                    }
                };
                times.compute += t.elapsed().as_secs_f64();
                if !guard::finite_or_skipped(world, &mut self.scaler, (finite, loss), (step, epoch))
                    .map_err(TrainError::NonFinite)?
                {
                    self.overflow_at = self.overflow_at.filter(|_| !poison);
                    return Ok((net, share.map_or(loss, |share| loss * share * ranks)));
                }
                let t = Instant::now();
                let averaged = if self.sparse {
                    ex.average_present(&present)
                } else {
                    ex.average_slots();
                    vec![true; present.len()]
                };
                times.communication += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let gradients: Vec<&[f32]> = (0..self.lengths.len()).map(|i| ex.averaged(i)).collect();
                let mut values: Vec<&mut [f32]> = self.values.iter_mut().map(Vec::as_mut_slice).collect();
                self.optimizer.step_where(lr, &mut values, &gradients, &averaged);
                times.optimizer += t.elapsed().as_secs_f64();
            }
            Exchange::Lagged { exchange: ex, local, pending } => {
                // The lagged exchange averages what it is given over the ranks.
                let scale = weight * ranks * unscale;
                match &computed {
                    Some((_, grads)) => {
                        params::gradients(&net, grads, |i, g| {
                            let g = overflowed(g, poison && i == 0);
                            finite &= loader::finite::all_finite(&g);
                            local[i].iter_mut().zip(g.iter()).for_each(|(l, g)| *l = g * scale);
                        });
                    }
                    None => local.iter_mut().for_each(|l| l.fill(0.0)),
                }
                times.compute += t.elapsed().as_secs_f64();
                if !guard::finite_or_skipped(world, &mut self.scaler, (finite, loss), (step, epoch))
                    .map_err(TrainError::NonFinite)?
                {
                    // Nothing is submitted: what is in flight stays so.
                    self.overflow_at = self.overflow_at.filter(|_| !poison);
                    return Ok((net, share.map_or(loss, |share| loss * share * ranks)));
                }
                let t = Instant::now();
                let had = ex.take(&mut pending.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
                ex.submit(&local.iter().map(Vec::as_slice).collect::<Vec<_>>());
                times.communication += t.elapsed().as_secs_f64();
                let t = Instant::now();
                if had {
                    let pending: Vec<&[f32]> = pending.iter().map(Vec::as_slice).collect();
                    apply(&mut self.optimizer, lr, &mut self.values, &pending);
                }
                times.optimizer += t.elapsed().as_secs_f64();
            }
            Exchange::DuringBackward(_) => {
                return Err(TrainError::Invalid(
                    "a step reducing during back-propagation went the blocking way".into(),
                ));
            }
        }
        let t = Instant::now();
        let net = params::with_values(net, &self.values, &self.device);
        times.compute += t.elapsed().as_secs_f64();
        Ok((net, share.map_or(loss, |share| loss * share * ranks)))
    }

    /// The failure `STAGEHAND_TRAINER_ABORT_AT` or `STAGEHAND_TRAINER_PANIC_AT`
    /// asks for at this step, if any.
    fn inject_fault(&self) {
        match self.fault {
            Some((Fault::Abort, at)) if at == self.optimizer.steps => {
                eprintln!("rank {}: aborting at step {at} (STAGEHAND_TRAINER_ABORT_AT)", self.world.rank());
                std::process::abort();
            }
            Some((Fault::Panic, at)) if at == self.optimizer.steps => {
                panic!("injected panic at step {at} (STAGEHAND_TRAINER_PANIC_AT)");
            }
            _ => {}
        }
    }

    /// [`step`](Self::step) with `--reduce-during-backward`: back-propagation
    /// runs segment by segment ([`segments`]), each segment's gradients go
    /// into their groups as soon as it ends, and full groups are reduced on
    /// the communication thread while the earlier segments back-propagate;
    /// the optimiser waits only for what is left.
    fn step_reducing_during_backward(
        &mut self,
        net: M::Net,
        batch: &Batch,
        (epoch, share): (u64, Option<f32>),
        context: &StepContext,
        times: &mut StepTimes,
    ) -> Result<(M::Net, f32), TrainError> {
        self.inject_fault();
        let t = Instant::now();
        let ranks = self.world.size() as f32;
        let weight = share.map_or(1.0 / ranks, |share| share);
        let Exchange::DuringBackward(ex) = &mut self.exchange else {
            return Err(TrainError::Invalid("no exchange during back-propagation was set up".into()));
        };
        let overlap = |e: crate::overlap::OverlapError| TrainError::Invalid(e.to_string());
        let mut present = vec![false; self.lengths.len()];
        let mut finite = true;
        let (scale, poison) = (self.scaler.scale(), self.overflow_at == Some(self.optimizer.steps));
        let scaled = self.scaler.active();
        // A rank with no sample in a dealt step adds nothing but zeros.
        let loss = if batch.is_empty() {
            ex.backward_ended();
            0.0
        } else {
            let mut cuts = Cuts::on();
            let loss = self.model.loss_with_cuts(&net, batch, context, &self.device, &mut cuts)?;
            let value = scalar(loss.clone())?;
            let loss = if scaled { loss * scale } else { loss };
            segments::backward_in_segments(&loss, cuts, |grads, last| {
                if last {
                    ex.backward_ended();
                }
                params::present_gradients(&net, grads, |i, g| {
                    let g = overflowed(g, poison && i == 0);
                    finite &= loader::finite::all_finite(&g);
                    present[i] = true;
                    ex.put_weighted(i, &g, weight / scale)
                })
            })
            .map_err(overlap)?;
            value
        };
        times.compute += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let averaged = if self.sparse {
            ex.finish_present(&present).map_err(overlap)?
        } else {
            ex.finish().map_err(overlap)?;
            vec![true; present.len()]
        };
        times.communication += t.elapsed().as_secs_f64();
        let (world, step) = (self.world, self.optimizer.steps);
        if !guard::finite_or_skipped(world, &mut self.scaler, (finite, loss), (step, epoch))
            .map_err(TrainError::NonFinite)?
        {
            self.overflow_at = self.overflow_at.filter(|_| !poison);
            return Ok((net, share.map_or(loss, |share| loss * share * ranks)));
        }
        let t = Instant::now();
        let lr = self.schedule.at(self.optimizer.steps);
        let gradients = (0..self.lengths.len())
            .map(|i| ex.averaged(i).ok_or_else(|| overlap(crate::overlap::OverlapError::ThreadGone)))
            .collect::<Result<Vec<&[f32]>, TrainError>>()?;
        let mut values: Vec<&mut [f32]> = self.values.iter_mut().map(Vec::as_mut_slice).collect();
        self.optimizer.step_where(lr, &mut values, &gradients, &averaged);
        times.optimizer += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let net = params::with_values(net, &self.values, &self.device);
        times.compute += t.elapsed().as_secs_f64();
        Ok((net, share.map_or(loss, |share| loss * share * ranks)))
    }

    /// Apply the gradient still in flight in a lagged exchange (at an
    /// epoch's end or before a checkpoint, so nothing is in flight across
    /// either), writing the new parameters into `net`.
    fn drain_lag(&mut self, net: M::Net, times: &mut StepTimes) -> M::Net {
        let Exchange::Lagged { exchange: ex, pending, .. } = &mut self.exchange else { return net };
        let t = Instant::now();
        let had = ex.take(&mut pending.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
        times.communication += t.elapsed().as_secs_f64();
        if !had {
            return net;
        }
        let lr = self.schedule.at(self.optimizer.steps);
        let pending: Vec<&[f32]> = pending.iter().map(Vec::as_slice).collect();
        apply(&mut self.optimizer, lr, &mut self.values, &pending);
        params::with_values(net, &self.values, &self.device)
    }

    /// The model's state averaged over the ranks and written back, then
    /// the checksum every rank must agree on. Collective.
    fn agree(&mut self, net: M::Net, epoch: u64) -> Result<(M::Net, u64), TrainError> {
        let net = if self.state_lengths.is_empty() {
            net
        } else {
            let mut state = params::state_values(&net);
            collective::average_state(self.world, &mut state);
            self.state = state;
            params::with_state(net, &self.state, &self.device)
        };
        let sum = collective::agreed_checksum(self.world, &self.values, &self.state, epoch)?;
        guard::check_values(self.world, &self.values, &self.state, (self.optimizer.steps, epoch + 1))
            .map_err(TrainError::NonFinite)?;
        Ok((net, sum))
    }

    /// With `--checkpoint-every`, save a checkpoint when the global step
    /// is a multiple of it (not at an epoch's end, which saves its own).
    fn maybe_checkpoint_mid_epoch(
        &mut self,
        net: M::Net,
        EpochAt { epoch, into_epoch, steps, begun }: EpochAt,
        epoch_losses: &[f32],
        times: &mut StepTimes,
    ) -> Result<M::Net, TrainError> {
        let (Some(dir), Some(every)) = (&self.config.checkpoint, self.config.checkpoint_every) else { return Ok(net) };
        let global_step = epoch * self.steps_per_epoch + into_epoch;
        if !global_step.is_multiple_of(every.max(1)) || into_epoch >= steps {
            return Ok(net);
        }
        let net = self.drain_lag(net, times);
        let (net, sum) = self.agree(net, epoch)?;
        let mut so_far = self.losses.clone();
        so_far.extend(collective::mean_over_ranks(self.world, epoch_losses));
        if self.world.is_root() {
            checkpoint::save(dir, &self.snapshot((epoch, into_epoch, sum), so_far, begun))?;
        }
        Ok(net)
    }

    /// An epoch's end: drain the lag, agree on state and checksum, validate,
    /// report, checkpoint.
    fn end_epoch(
        &mut self,
        net: M::Net,
        val: Option<&ValSet>,
        (epoch, stopped_early): (u64, bool),
        (epoch_losses, epoch_samples, measured): (&[f32], u64, &[steps::RankSteps]),
        times: StepTimes,
        started: Instant,
    ) -> Result<(M::Net, EpochReport), TrainError> {
        let mut times = times;
        // The lagged gradient of the epoch's last step is applied here, so
        // nothing is in flight across an epoch boundary (or a checkpoint).
        let net = self.drain_lag(net, &mut times);
        let mean_losses = collective::mean_over_ranks(self.world, epoch_losses);
        let first_step = self.losses.len() as u64;
        self.losses.extend_from_slice(&mean_losses);
        let (net, sum) = self.agree(net, epoch)?;
        let validation = match val {
            Some(v) => Some(self.validate(&net, v)?),
            None => None,
        };
        let seconds = started.elapsed().as_secs_f64();
        let steps = mean_losses.len() as u64;
        let samples = collective::sum_over_ranks(self.world, epoch_samples);
        let report = EpochReport {
            epoch: epoch + 1,
            steps,
            train_loss: mean_losses.iter().sum::<f32>() / steps.max(1) as f32,
            validation,
            seconds,
            samples,
            samples_per_sec: samples as f64 / seconds,
            step_time: StepStats::of(measured),
            flops_per_sec: steps::flops_per_sec(measured, seconds),
            times,
            lr: self.schedule.at(self.optimizer.steps),
            checksum: format!("{sum:016x}"),
            first_step,
            step_losses: mean_losses,
        };
        // An epoch cut short by --max-steps is not an epoch's end to resume from.
        if let Some(dir) = &self.config.checkpoint
            && self.world.is_root()
            && !stopped_early
        {
            checkpoint::save(dir, &self.snapshot((epoch + 1, 0, sum), self.losses.clone(), None))?;
        }
        Ok((net, report))
    }

    /// Validation on this rank's strided share of `val`, with the network
    /// in inference mode (BatchNorm uses its running statistics).
    fn validate(&self, net: &M::Net, val: &ValSet) -> Result<Validation, TrainError> {
        use burn::module::Module as _;
        // Every validation sample counts, the last short batch too.
        let config = LoaderConfig { drop_last: false, ..self.loader_config };
        let mut batches = Loader::new(val.dataset.clone(), val.mine(), config);
        let net = net.valid();
        self.model.validate(self.world, &net, &mut batches, &self.device)
    }

    /// With `--plot`, rank 0's picture of the trained network's
    /// predictions for the first validation samples it reads.
    fn picture(&self, net: &M::Net, val: Option<&ValSet>) -> Result<(), TrainError> {
        use burn::module::Module as _;
        let (Some(path), Some(val), true) = (&self.config.predictions, val, self.world.is_root()) else {
            return Ok(());
        };
        let mine: Vec<usize> = val.mine().into_iter().take(PICTURED_SAMPLES).collect();
        let config = LoaderConfig {
            batch: mine.len().max(1),
            workers: 1,
            prefetch: 1,
            skip_corrupt: false,
            check_finite: false,
            drop_last: false,
        };
        let Some(batch) = Loader::new(val.dataset.clone(), mine, config).next() else { return Ok(()) };
        let batch = batch.map_err(TrainError::from)?;
        self.model.picture(&net.valid(), &batch, &self.device, path)?;
        Ok(())
    }

    /// A checkpoint at (epochs done, steps into the next epoch, checksum);
    /// `begun` when those steps are of a deal ([`elastic`]).
    fn snapshot(
        &self,
        (epochs_done, steps_into_epoch, checksum): (u64, u64, u64),
        losses: Vec<f32>,
        begun: Option<loader::elastic::EpochStart>,
    ) -> Checkpoint {
        let state = TrainState {
            format: checkpoint::FORMAT,
            model: self.summary.config.clone(),
            lengths: self.lengths.clone(),
            state_lengths: self.state_lengths.clone(),
            epochs_done,
            steps_into_epoch,
            steps: self.optimizer.steps,
            seed: self.config.seed,
            losses,
            checksum,
            files: Default::default(),
            layout: self.model.layout(),
            run: Some(self.shape.clone()),
            epoch_begun: begun.map(elastic::begun),
            loss_scale: self.scaler.active().then(|| self.scaler.state()),
        };
        Checkpoint {
            state,
            params: self.values.clone(),
            model_state: self.state.clone(),
            first: self.optimizer.first.clone(),
            second: self.optimizer.second.clone(),
        }
    }
}

/// Whether the latest checkpoint in `--checkpoint`, if there is one, was
/// made for a network of this model's layout (what `trainer train` checks
/// before MPI starts).
pub fn check_resumable<M: TrainModel>(model: &M, config: &TrainConfig) -> Result<(), TrainError> {
    let Some(dir) = &config.checkpoint else { return Ok(()) };
    // A directory that does not exist yet holds no checkpoint; one that
    // cannot be made is reported by the writability check, naming --checkpoint.
    if !dir.is_dir() {
        return Ok(());
    }
    match checkpoint::latest_state(dir)? {
        Some(state) => same_layout(&state.layout, &model.layout()),
        None => Ok(()),
    }
}

fn same_layout(saved: &serde_json::Value, now: &serde_json::Value) -> Result<(), TrainError> {
    if saved == now {
        return Ok(());
    }
    Err(TrainError::Invalid(format!(
        "the checkpoint's network was laid out for other data: {}",
        layout_difference(saved, now)
    )))
}

/// Where two layouts first differ, for an error message: the path to the
/// first differing entry (`layout.addresses[3].address`) with both values
/// there, and the lengths of lists that differ in length.
fn layout_difference(saved: &serde_json::Value, now: &serde_json::Value) -> String {
    use serde_json::Value;
    let mut path = String::new();
    let (mut a, mut b) = (saved, now);
    let mut lengths = String::new();
    loop {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let Some(key) = x.keys().chain(y.keys()).find(|k| x.get(*k) != y.get(*k)) else { break };
                path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => (a, b) = (p, q),
                    (p, q) => return format!("{path}: {} in the checkpoint, {} for the data", brief(p), brief(q)),
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    lengths = format!(" ({path} has {} entries in the checkpoint, {} for the data)", x.len(), y.len());
                }
                let Some(i) = (0..x.len().max(y.len())).find(|&i| x.get(i) != y.get(i)) else { break };
                path = format!("{path}[{i}]");
                match (x.get(i), y.get(i)) {
                    (Some(p), Some(q)) => (a, b) = (p, q),
                    (p, q) => {
                        return format!("{path}: {} in the checkpoint, {} for the data{lengths}", brief(p), brief(q));
                    }
                }
            }
            _ => break,
        }
    }
    format!("{path}: {} in the checkpoint, {} for the data{lengths}", brief(Some(a)), brief(Some(b)))
}

fn brief(v: Option<&serde_json::Value>) -> String {
    v.map_or("nothing".to_owned(), |v| v.to_string())
}

/// A boolean of the model's details (`augment`, `standardize`), false if absent.
fn model_flag(summary: &ModelSummary, name: &str) -> bool {
    summary.details.get(name).and_then(serde_json::Value::as_bool).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_layout_difference_names_the_first_entry_that_differs() {
        let saved = json!({"layout": {"addresses": [{"address": "a"}, {"address": "b"}]}, "observation": [20, 35, 35]});
        let now = json!({"layout": {"addresses": [{"address": "a"}, {"address": "c"}, {"address": "d"}]}, "observation": [20, 35, 35]});
        let text = super::layout_difference(&saved, &now);
        assert_eq!(
            text,
            "layout.addresses[1].address: \"b\" in the checkpoint, \"c\" for the data (layout.addresses has 2 entries \
             in the checkpoint, 3 for the data)"
        );
        assert!(super::layout_difference(&json!(null), &json!({"x": 1})).contains("null in the checkpoint"));
    }
}
