//! What a run reports: the step-time split, each epoch, the whole run.

use serde::Serialize;

use super::model::{ModelSummary, Validation};
use super::steps::StepStats;
use crate::params::Init;

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
    pub(super) fn add(&mut self, other: &StepTimes) {
        self.data_wait += other.data_wait;
        self.compute += other.compute;
        self.communication += other.communication;
        self.optimizer += other.optimizer;
    }

    /// All four.
    pub fn total(&self) -> f64 {
        self.data_wait + self.compute + self.communication + self.optimizer
    }

    /// Each part as a share of the total (data wait, compute,
    /// communication, optimizer); zeros when nothing was timed.
    pub fn fractions(&self) -> [f64; 4] {
        let total = self.total();
        if total <= 0.0 {
            return [0.0; 4];
        }
        [self.data_wait / total, self.compute / total, self.communication / total, self.optimizer / total]
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
    /// Training samples this run trained in the epoch, all ranks.
    pub samples: u64,
    /// Training samples per second, all ranks.
    pub samples_per_sec: f64,
    /// Step times over every rank's steps of the epoch (none when it took
    /// no step).
    pub step_time: Option<StepStats>,
    /// Sustained floating-point operations per second, all ranks: the
    /// analytic count of the epoch's training steps over its wall seconds
    /// (validation included, as in `samples_per_sec`).
    pub flops_per_sec: f64,
    /// Rank 0's step time split.
    pub times: StepTimes,
    /// Learning rate at the epoch's end.
    pub lr: f32,
    /// Checksum of the parameters and the model's state, equal on every rank.
    pub checksum: String,
    /// The run's steps before this epoch's first (a resumed run's count
    /// included): step `first_step + k + 1` had loss `step_losses[k]`.
    #[serde(skip)]
    pub first_step: u64,
    /// Each step's loss, the mean over the ranks (the run's report keeps
    /// them all in `losses`).
    #[serde(skip)]
    pub step_losses: Vec<f32>,
}

impl EpochReport {
    /// The line rank 0 prints for the epoch.
    pub fn line(&self) -> String {
        let t = &self.times;
        let [wait, compute, comm, _] = t.fractions();
        let val = self.validation.as_ref().map_or(String::new(), |v| format!(", {}", v.line));
        let steps = self.step_time.map_or(String::new(), |s| {
            format!(
                ", step {} (68% {}-{}, imbalance {:.2})",
                seconds(s.median_secs),
                seconds(s.low_secs),
                seconds(s.high_secs),
                s.imbalance
            )
        });
        format!(
            "epoch {}: {} steps, loss {:.4}{val}, {:.1} samples/s, {:.2} GFlop/s, data wait {:.1}% compute {:.1}% comm {:.1}%{steps}, {:.1} s",
            self.epoch,
            self.steps,
            self.train_loss,
            self.samples_per_sec,
            self.flops_per_sec / 1e9,
            100.0 * wait,
            100.0 * compute,
            100.0 * comm,
            self.seconds
        )
    }
}

/// A duration for the epoch line: milliseconds below a second.
fn seconds(s: f64) -> String {
    if s < 1.0 { format!("{:.1} ms", 1e3 * s) } else { format!("{s:.2} s") }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrainReport {
    /// The model and its configuration.
    pub model: ModelSummary,
    /// The device it trained on.
    pub device: String,
    /// How the initial weights were drawn.
    pub init: Init,
    /// Trainable values.
    pub parameters: usize,
    /// Values of the model's state (BatchNorm running statistics).
    pub state_values: usize,
    /// Ranks.
    pub ranks: usize,
    /// Samples per rank per step.
    pub batch_per_rank: usize,
    /// Allreduce calls per step (fusion buffers).
    pub fusion_buffers: usize,
    /// Of the gradient values a reduction of every tensor at every step
    /// would have moved, the share that was reduced (below 1 when a model's
    /// batches leave layers unused and the ranks agree to skip them); None
    /// with the lagged exchange and the exchange during back-propagation,
    /// which reduce everything.
    pub reduced_gradient_share: Option<f64>,
    /// Gradient groups were reduced as back-propagation completed them
    /// (`--reduce-during-backward`).
    pub reduce_during_backward: bool,
    /// With `--reduce-during-backward`: the groups reduced over the run,
    /// and how many of them left for the exchange before back-propagation
    /// had ended (what ran under the backward pass).
    pub gradient_groups: Option<crate::overlap::GroupCounts>,
    /// One-step gradient lag.
    pub grad_lag: bool,
    /// What convolutions and dense layers computed in (`--precision`).
    pub precision: crate::kernels::Precision,
    /// Which compiled kernels ran on the CPU and how they were chosen
    /// (measured at start-up by `trainer train`, [`crate::kernels::calibrate`]).
    pub kernels: crate::kernels::calibrate::KernelChoice,
    /// Where the loss scale ended and the steps it skipped
    /// (`--loss-scale`); none without one.
    pub loss_scale: Option<crate::loss_scale::LossScaleState>,
    /// How gradients were summed over the ranks ("flat", "hierarchical";
    /// `auto` as it was settled).
    pub exchange: cluster::allreduce::Exchange,
    /// How the pool's idle threads waited during steps (`--wait-policy`,
    /// [`crate::kernels::wait`]).
    pub wait_policy: crate::kernels::wait::WaitPolicy,
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
    /// Step times over every rank's steps of this run.
    pub step_time: Option<StepStats>,
    /// Sustained floating-point operations per second over this run, all
    /// ranks (see [`EpochReport::flops_per_sec`]).
    pub flops_per_sec: f64,
    /// `--target-loss`.
    pub target_loss: Option<f32>,
    /// Seconds from the start of this run to the end of the first step
    /// whose loss (the mean over the ranks) was at most `target_loss`;
    /// none if no step reached it.
    pub time_to_target_secs: Option<f64>,
    /// Seconds from the start of the run (data opened, network built) to
    /// rank 0's first batch: with a staging service, how soon training
    /// started on the first staged files.
    pub first_batch_secs: Option<f64>,
    /// Seconds rank 0's loader threads waited for a staging service to
    /// place files (part of the data wait when the consumer had to wait).
    pub staging_wait_secs: f64,
    /// Against a 1-rank run's report (`--baseline`): samples/s over ranks
    /// times the 1-rank samples/s. The caller fills it in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_efficiency: Option<f64>,
    /// Weak or strong, with `parallel_efficiency`. The caller fills it in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaling: Option<crate::scaling::Scaling>,
    /// Final parameters (for comparing runs).
    #[serde(skip)]
    pub params: Vec<Vec<f32>>,
    /// Final state (BatchNorm running statistics), averaged over the ranks.
    #[serde(skip)]
    pub state: Vec<Vec<f32>>,
}
