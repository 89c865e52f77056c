//! The data-parallel training loop: batches from the loader, forward and
//! backward through a burn model, gradients averaged over the ranks with
//! fused MPI allreduce (blocking, or lagged one step so the exchange
//! overlaps the next step's compute), the same optimiser step on every
//! rank, a check at each epoch's end that all ranks hold identical
//! parameters, validation, checkpoints.

pub mod augment;
pub mod data;
mod eval;
mod standardize;

use std::path::PathBuf;
use std::time::Instant;

use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use loader::pipeline::{Loader, LoaderConfig};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use serde::Serialize;

use crate::checkpoint::{self, Checkpoint, TrainState};
use crate::exchange::{GradientExchange, LaggedExchange};
use crate::model::cosmoflow::{ConfigError, Cosmoflow, CosmoflowConfig, DropoutMasks, mse};
use crate::optim::{Optimizer, Rule, TrustRatio};
use crate::params::{self, Init};
use crate::schedule::Schedule;
pub use data::DataSource;
pub use eval::Validation;

/// Why training stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// The model configuration does not fit.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The data could not be opened or read.
    #[error("{0}")]
    Data(String),
    /// A checkpoint could not be read or written.
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
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
}

/// Training samples (the first a rank holds) whose statistics set `--standardize`'s shift and scale.
const STANDARDIZE_SAMPLES: usize = 32;

/// The learning-rate schedule in epochs, turned into steps once the
/// number of steps per epoch is known.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ScheduleSpec {
    /// The base rate throughout.
    Constant,
    /// Polynomial decay to `end_factor × lr` over `epochs` (SC18: power 1).
    Poly {
        /// Final rate as a fraction of the base.
        end_factor: f32,
        /// Epochs to decay over.
        epochs: f64,
        /// Exponent.
        power: f32,
    },
    /// × `factor` at each boundary epoch (MLPerf: 0.25 at 32, 0.125 at 64).
    Step {
        /// Boundary epochs.
        boundaries: Vec<f64>,
        /// Factors, cumulative (one per boundary).
        factors: Vec<f32>,
    },
}

/// Everything a training run needs.
#[derive(Debug, Clone)]
pub struct TrainConfig {
    /// The network.
    pub model: CosmoflowConfig,
    /// Training data.
    pub source: DataSource,
    /// A separate validation dataset directory.
    pub val: Option<PathBuf>,
    /// Share of sample files held out for validation when `val` is absent.
    pub val_fraction: f64,
    /// Epochs in total (a resumed run continues up to this).
    pub epochs: u64,
    /// Samples per rank per step.
    pub batch: usize,
    /// Base learning rate.
    pub lr: f32,
    /// Optimiser rule.
    pub rule: Rule,
    /// LARC/LARS trust ratio.
    pub trust: Option<TrustRatio>,
    /// Decay after the warm-up.
    pub schedule: ScheduleSpec,
    /// Linear warm-up epochs.
    pub warmup_epochs: f64,
    /// Apply each step's averaged gradient one step later.
    pub grad_lag: bool,
    /// Fusion buffer size in bytes (0: one allreduce per tensor).
    pub fusion_bytes: usize,
    /// How the initial weights are drawn.
    pub init: Init,
    /// Turn each training sample by a random symmetry of the cube.
    pub augment: bool,
    /// Shift and scale each input channel to mean 0, deviation 1 (training-set statistics).
    pub standardize: bool,
    /// Seed of the initial parameters, the sample order, dropout and augmentation.
    pub seed: u64,
    /// Loader worker threads per rank.
    pub workers: usize,
    /// Batches decoded ahead per rank.
    pub prefetch: usize,
    /// Checkpoint directory: resume from it, save at every epoch's end.
    pub checkpoint: Option<PathBuf>,
    /// Also save a checkpoint every this many steps within an epoch.
    pub checkpoint_every: Option<u64>,
    /// Stop after this many steps of this run (benchmarks).
    pub max_steps: Option<u64>,
}

impl TrainConfig {
    /// Learning rate by optimiser step.
    pub fn schedule(&self, steps_per_epoch: u64) -> Schedule {
        let steps = |epochs: f64| (epochs * steps_per_epoch as f64).round() as u64;
        let decay = match &self.schedule {
            ScheduleSpec::Constant => Schedule::Constant(self.lr),
            ScheduleSpec::Poly { end_factor, epochs, power } => {
                Schedule::Poly { lr0: self.lr, end: self.lr * end_factor, steps: steps(*epochs).max(1), power: *power }
            }
            ScheduleSpec::Step { boundaries, factors } => Schedule::Piecewise {
                lr0: self.lr,
                boundaries: boundaries.iter().map(|&b| steps(b)).collect(),
                factors: factors.clone(),
            },
        };
        match steps(self.warmup_epochs) {
            0 => decay,
            warmup => Schedule::Warmup { steps: warmup, then: Box::new(decay) },
        }
    }
}

/// Seconds spent per part of the steps, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepTimes {
    /// Waiting for the loader.
    pub data_wait: f64,
    /// Forward, backward, reading gradients out, writing parameters back.
    pub compute: f64,
    /// Allreduce (blocking) or waiting for the lagged one.
    pub communication: f64,
    /// The optimiser update.
    pub optimizer: f64,
}

impl StepTimes {
    fn add(&mut self, other: &StepTimes) {
        self.data_wait += other.data_wait;
        self.compute += other.compute;
        self.communication += other.communication;
        self.optimizer += other.optimizer;
    }

    /// All four.
    pub fn total(&self) -> f64 {
        self.data_wait + self.compute + self.communication + self.optimizer
    }
}

/// One epoch, as rank 0 reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochReport {
    /// Epoch number (1-based).
    pub epoch: u64,
    /// Steps in it.
    pub steps: u64,
    /// Mean training loss over its steps and the ranks.
    pub train_loss: f32,
    /// Validation, when there is validation data.
    pub validation: Option<Validation>,
    /// Wall seconds.
    pub seconds: f64,
    /// Training samples per second, all ranks.
    pub samples_per_sec: f64,
    /// Rank 0's step time split.
    pub times: StepTimes,
    /// Learning rate at the epoch's end.
    pub lr: f32,
    /// Parameter checksum, equal on every rank.
    pub checksum: String,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainReport {
    /// Model configuration.
    pub model: CosmoflowConfig,
    /// How the initial weights were drawn.
    pub init: Init,
    /// Trainable values.
    pub parameters: usize,
    /// Ranks.
    pub ranks: usize,
    /// Samples per rank per step.
    pub batch_per_rank: usize,
    /// Allreduce calls per step (fusion buffers).
    pub fusion_buffers: usize,
    /// One-step gradient lag.
    pub grad_lag: bool,
    /// Samples turned by random symmetries of the cube.
    pub augment: bool,
    /// Inputs standardised per channel.
    pub standardize: bool,
    /// Steps per epoch.
    pub steps_per_epoch: u64,
    /// Epoch this run started from (0 unless resumed).
    pub resumed_from_epoch: u64,
    /// The epochs this run trained.
    pub epochs: Vec<EpochReport>,
    /// Every step's loss from the start of training (resumed runs included).
    pub losses: Vec<f32>,
    /// Step time split of this run, rank 0, seconds.
    pub times: StepTimes,
    /// Fractions of step time (data wait, compute, communication, optimizer).
    pub fractions: [f64; 4],
    /// Samples per second over this run, all ranks.
    pub samples_per_sec: f64,
    /// Against a 1-rank run's report (`--baseline`): samples/s over ranks
    /// times the 1-rank samples/s. The caller fills it in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_efficiency: Option<f64>,
    /// Final parameters (for comparing runs); only with `keep_params`.
    #[serde(skip)]
    pub params: Vec<Vec<f32>>,
}

/// The gradient exchange of a run.
enum Exchange {
    Blocking(GradientExchange),
    Lagged { exchange: LaggedExchange, local: Vec<Vec<f32>>, pending: Vec<Vec<f32>> },
}

/// A rank that kills itself at a given step (`STAGEHAND_TRAINER_ABORT_AT=rank:step`),
/// so tests can check that a dead rank ends the job instead of hanging it.
fn abort_point(world: &World) -> Option<u64> {
    let value = std::env::var("STAGEHAND_TRAINER_ABORT_AT").ok()?;
    let (rank, step) = value.split_once(':')?;
    (rank.parse::<usize>().ok()? == world.rank()).then(|| step.parse().ok()).flatten()
}

/// One optimiser step of every parameter tensor with `grads`.
fn apply(optimizer: &mut Optimizer, lr: f32, values: &mut [Vec<f32>], grads: &[&[f32]]) {
    optimizer.step(lr, &mut values.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>(), grads);
}

/// Apply the gradient still in flight in a lagged exchange (at an epoch's
/// end or before a checkpoint, so nothing is in flight across either).
/// Returns whether the parameters changed.
fn drain_lag(
    exchange: &mut Exchange,
    optimizer: &mut Optimizer,
    schedule: &Schedule,
    values: &mut [Vec<f32>],
    times: &mut StepTimes,
) -> bool {
    let Exchange::Lagged { exchange: ex, pending, .. } = exchange else { return false };
    let t = Instant::now();
    let had = ex.take(&mut pending.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
    times.communication += t.elapsed().as_secs_f64();
    if had {
        let lr = schedule.at(optimizer.steps);
        apply(optimizer, lr, values, &pending.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }
    had
}

/// Each step's loss averaged over the ranks.
fn mean_over_ranks(world: &World, step_losses: &[f32]) -> Vec<f32> {
    let mut mean = vec![0f32; step_losses.len()];
    world.comm().all_reduce_into(step_losses, &mut mean[..], SystemOperation::sum());
    mean.iter_mut().for_each(|l| *l /= world.size() as f32);
    mean
}

/// The parameters' checksum, checked to be the same on every rank.
fn agreed_checksum(world: &World, values: &[Vec<f32>], epoch: u64) -> Result<u64, TrainError> {
    let sum = params::checksum(values);
    let (mut min, mut max) = (0u64, 0u64);
    world.comm().all_reduce_into(&sum, &mut min, SystemOperation::min());
    world.comm().all_reduce_into(&sum, &mut max, SystemOperation::max());
    if min != max {
        return Err(TrainError::Diverged { epoch: epoch + 1, min, max });
    }
    Ok(sum)
}

/// A checkpoint at (epochs done, steps into the next epoch, checksum).
fn snapshot(
    config: &TrainConfig,
    lengths: &[usize],
    (epochs_done, steps_into_epoch, checksum): (u64, u64, u64),
    optimizer: &Optimizer,
    losses: Vec<f32>,
    values: &[Vec<f32>],
) -> Checkpoint {
    let state = TrainState {
        format: 1,
        model: config.model.name.clone(),
        lengths: lengths.to_vec(),
        epochs_done,
        steps_into_epoch,
        steps: optimizer.steps,
        seed: config.seed,
        losses,
        checksum,
    };
    Checkpoint { state, params: values.to_vec(), first: optimizer.first.clone(), second: optimizer.second.clone() }
}

fn scalar(loss: Tensor<1>) -> f32 {
    loss.into_data().try_into_vec_as::<f32>().ok().and_then(|v| v.first().copied()).unwrap_or(f32::NAN)
}

/// Train. Collective: every rank calls it with the same configuration.
/// `on_epoch` sees each epoch's report on every rank (rank 0 prints it).
pub fn run(
    world: &World,
    config: &TrainConfig,
    mut on_epoch: impl FnMut(&EpochReport),
) -> Result<TrainReport, TrainError> {
    if config.batch == 0 {
        return Err(TrainError::Invalid("--batch must be at least 1".into()));
    }
    let device = Device::flex().autodiff();
    let model = config.model.init(&device)?;
    let shapes = params::shapes(&model);
    let lengths = params::lengths(&shapes);
    let (train, val) = data::open(world, &config.source, config.val.as_deref(), config.val_fraction, config.seed)?;
    let (d, c) = (config.model.input, config.model.channels);
    if train.shape.size != d || train.shape.channels != c {
        return Err(TrainError::Invalid(format!(
            "the data holds {}³×{} samples; model '{}' takes {d}³×{c}",
            train.shape.size, train.shape.channels, config.model.name
        )));
    }
    let standardize = if config.standardize {
        let (samples, same_everywhere) = train.dataset.first_samples(STANDARDIZE_SAMPLES);
        Some(standardize::Standardize::fit(world, &*train.dataset, &samples, same_everywhere, c)?)
    } else {
        None
    };
    let steps_per_epoch = ((train.order)(0).len() / config.batch) as u64;
    if steps_per_epoch == 0 {
        return Err(TrainError::Invalid(format!(
            "{} training samples over {} ranks do not fill one batch of {} per rank",
            train.samples,
            world.size(),
            config.batch
        )));
    }

    let resumed = match &config.checkpoint {
        Some(dir) => checkpoint::load_latest(dir)?,
        None => None,
    };
    let mut optimizer = Optimizer::new(config.rule, config.trust, &lengths);
    let mut resume_skip = 0u64;
    let (mut values, start_epoch, mut losses) = match resumed {
        Some(cp) => {
            if cp.state.lengths != lengths || cp.state.model != config.model.name {
                return Err(TrainError::Invalid(format!(
                    "the checkpoint holds model '{}' with {} tensors; this run is '{}' with {}",
                    cp.state.model,
                    cp.state.lengths.len(),
                    config.model.name,
                    lengths.len()
                )));
            }
            optimizer.first = cp.first;
            if !cp.second.is_empty() {
                optimizer.second = cp.second;
            }
            optimizer.steps = cp.state.steps;
            resume_skip = cp.state.steps_into_epoch;
            (cp.params, cp.state.epochs_done, cp.state.losses)
        }
        None => (params::initial(&shapes, config.init, config.seed), 0, Vec::new()),
    };
    if resume_skip >= steps_per_epoch {
        return Err(TrainError::Invalid(format!(
            "the checkpoint is {resume_skip} steps into an epoch, but this run has {steps_per_epoch} steps per epoch"
        )));
    }
    // Rank 0's parameters are everyone's, whatever each rank read or drew.
    for tensor in &mut values {
        world.comm().process_at_rank(0).broadcast_into(&mut tensor[..]);
    }
    let mut model: Cosmoflow = params::with_values(model, &values, &device);

    let mut exchange = if config.grad_lag {
        let exchange = LaggedExchange::new(world, &lengths, config.fusion_bytes).ok_or_else(|| {
            TrainError::Invalid("--grad-lag 1 needs MPI_THREAD_MULTIPLE, which this MPI did not grant".into())
        })?;
        let zeros = || lengths.iter().map(|&n| vec![0.0f32; n]).collect::<Vec<_>>();
        Exchange::Lagged { exchange, local: zeros(), pending: zeros() }
    } else {
        Exchange::Blocking(GradientExchange::new(world, &lengths, config.fusion_bytes))
    };
    let fusion_buffers = crate::fusion::FusionPlan::new(&lengths, config.fusion_bytes).buffers();
    let schedule = config.schedule(steps_per_epoch);
    let abort_at = abort_point(world);
    let loader_config =
        LoaderConfig { batch: config.batch, workers: config.workers, prefetch: config.prefetch, skip_corrupt: false };

    let mut loader: Option<Loader> = None;
    let mut epochs = Vec::new();
    let mut run_times = StepTimes::default();
    let mut run_steps = 0u64;
    let run_started = Instant::now();
    'epochs: for epoch in start_epoch..config.epochs {
        let started = Instant::now();
        let mut order = (train.order)(epoch);
        order.truncate(steps_per_epoch as usize * config.batch);
        // A run resumed from a mid-epoch checkpoint skips what it trained on.
        let skip = if epoch == start_epoch { resume_skip } else { 0 };
        order.drain(..skip as usize * config.batch);
        let mut batches = match loader.take() {
            None => Loader::new(train.dataset.clone(), order, loader_config),
            Some(previous) => previous.next_epoch(order),
        };
        let mut times = StepTimes::default();
        let mut epoch_losses = Vec::with_capacity(steps_per_epoch as usize);
        loop {
            if config.max_steps.is_some_and(|max| run_steps >= max) {
                break;
            }
            let t = Instant::now();
            let Some(batch) = batches.next() else { break };
            let batch = batch.map_err(|e| TrainError::Data(e.to_string()))?;
            times.data_wait += t.elapsed().as_secs_f64();

            let t = Instant::now();
            let n = batch.len();
            let mut x = if config.augment {
                augment::augment_batch(&batch.x, d, c, (config.seed, epoch), &batch.indices)
            } else {
                batch.x.clone()
            };
            if let Some(s) = &standardize {
                s.apply(&mut x);
            }
            let x = Tensor::<5>::from_data(TensorData::new(x, [n, d, d, d, c]), &device);
            let y = Tensor::<2>::from_data(TensorData::new(batch.y.clone(), [n, config.model.outputs]), &device);
            batches.recycle(batch);
            let mut masks = DropoutMasks::for_step(config.seed, optimizer.steps, world.rank());
            let loss = mse(model.forward(x, Some(&mut masks)), y);
            let grads = loss.backward();
            epoch_losses.push(scalar(loss));
            if abort_at == Some(optimizer.steps) {
                eprintln!("rank {}: aborting at step {} (STAGEHAND_TRAINER_ABORT_AT)", world.rank(), optimizer.steps);
                std::process::abort();
            }
            let lr = schedule.at(optimizer.steps);
            match &mut exchange {
                Exchange::Blocking(ex) => {
                    params::gradients(&model, &grads, |i, g| ex.put(i, g));
                    times.compute += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    ex.average_slots();
                    times.communication += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    let averaged: Vec<&[f32]> = (0..lengths.len()).map(|i| ex.averaged(i)).collect();
                    apply(&mut optimizer, lr, &mut values, &averaged);
                    times.optimizer += t.elapsed().as_secs_f64();
                }
                Exchange::Lagged { exchange: ex, local, pending } => {
                    params::gradients(&model, &grads, |i, g| local[i].copy_from_slice(g));
                    times.compute += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    let had = ex.take(&mut pending.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>());
                    ex.submit(&local.iter().map(Vec::as_slice).collect::<Vec<_>>());
                    times.communication += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    if had {
                        apply(&mut optimizer, lr, &mut values, &pending.iter().map(Vec::as_slice).collect::<Vec<_>>());
                    }
                    times.optimizer += t.elapsed().as_secs_f64();
                }
            }
            let t = Instant::now();
            model = params::with_values(model, &values, &device);
            times.compute += t.elapsed().as_secs_f64();
            run_steps += 1;

            let into_epoch = skip + epoch_losses.len() as u64;
            let global_step = epoch * steps_per_epoch + into_epoch;
            if let (Some(dir), Some(every)) = (&config.checkpoint, config.checkpoint_every)
                && global_step.is_multiple_of(every.max(1))
                && into_epoch < steps_per_epoch
            {
                if drain_lag(&mut exchange, &mut optimizer, &schedule, &mut values, &mut times) {
                    model = params::with_values(model, &values, &device);
                }
                let sum = agreed_checksum(world, &values, epoch)?;
                let mut so_far = losses.clone();
                so_far.extend(mean_over_ranks(world, &epoch_losses));
                if world.is_root() {
                    let position = (epoch, into_epoch, sum);
                    checkpoint::save(dir, &snapshot(config, &lengths, position, &optimizer, so_far, &values))?;
                }
            }
        }
        // The lagged gradient of the epoch's last step is applied here, so
        // nothing is in flight across an epoch boundary (or a checkpoint).
        if drain_lag(&mut exchange, &mut optimizer, &schedule, &mut values, &mut times) {
            model = params::with_values(model, &values, &device);
        }
        loader = Some(batches);
        let stopped_early = (epoch_losses.len() as u64) < steps_per_epoch - skip;

        // Losses averaged over the ranks, once per epoch.
        let mean_losses = mean_over_ranks(world, &epoch_losses);
        losses.extend_from_slice(&mean_losses);

        let sum = agreed_checksum(world, &values, epoch)?;
        let validation = match &val {
            Some(v) => Some(eval::validate(world, &model, v, &loader_config, standardize.as_ref(), &device)?),
            None => None,
        };
        let seconds = started.elapsed().as_secs_f64();
        let steps = mean_losses.len() as u64;
        let report = EpochReport {
            epoch: epoch + 1,
            steps,
            train_loss: mean_losses.iter().sum::<f32>() / steps.max(1) as f32,
            validation,
            seconds,
            samples_per_sec: (steps as usize * config.batch * world.size()) as f64 / seconds,
            times,
            lr: schedule.at(optimizer.steps),
            checksum: format!("{sum:016x}"),
        };
        on_epoch(&report);
        run_times.add(&times);
        epochs.push(report);
        if stopped_early {
            break 'epochs;
        }
        if let Some(dir) = &config.checkpoint
            && world.is_root()
        {
            checkpoint::save(
                dir,
                &snapshot(config, &lengths, (epoch + 1, 0, sum), &optimizer, losses.clone(), &values),
            )?;
        }
    }
    let total = run_times.total().max(f64::MIN_POSITIVE);
    let seconds = run_started.elapsed().as_secs_f64();
    Ok(TrainReport {
        model: config.model.clone(),
        init: config.init,
        parameters: lengths.iter().sum(),
        ranks: world.size(),
        batch_per_rank: config.batch,
        fusion_buffers,
        grad_lag: config.grad_lag,
        augment: config.augment,
        standardize: config.standardize,
        steps_per_epoch,
        resumed_from_epoch: start_epoch,
        epochs,
        losses,
        times: run_times,
        fractions: [
            run_times.data_wait / total,
            run_times.compute / total,
            run_times.communication / total,
            run_times.optimizer / total,
        ],
        samples_per_sec: (run_steps as usize * config.batch * world.size()) as f64 / seconds,
        parallel_efficiency: None,
        params: values,
    })
}
