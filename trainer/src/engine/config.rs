//! Everything a training run needs besides the model.

use std::path::PathBuf;

use serde::Serialize;

use super::data::DataSource;
use super::device::DeviceChoice;
use crate::optim::{Rule, TrustRatio};
use crate::schedule::Schedule;

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

/// Everything a training run needs besides the model.
#[derive(Debug, Clone)]
pub struct TrainConfig {
    /// Where it trains.
    pub device: DeviceChoice,
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
    /// The warm-up's first rate (default: the target rate / warm-up steps).
    pub warmup_start: Option<f32>,
    /// L2 weight decay: λ·w added to every gradient.
    pub weight_decay: f32,
    /// Apply each step's averaged gradient one step later.
    pub grad_lag: bool,
    /// Fusion buffer size in bytes (0: one allreduce per tensor).
    pub fusion_bytes: usize,
    /// Seed of the initial parameters, the sample order and the model's
    /// own randomness (dropout, augmentation).
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
    /// Where rank 0 draws the trained network's predictions for a few
    /// validation samples, for models that draw them
    /// ([`TrainModel::picture`](super::TrainModel::picture)).
    pub predictions: Option<PathBuf>,
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
            warmup => Schedule::Warmup { steps: warmup, start: self.warmup_start, then: Box::new(decay) },
        }
    }
}
