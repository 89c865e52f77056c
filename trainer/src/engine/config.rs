//! Everything a training run needs besides the model.

use std::path::PathBuf;

use serde::Serialize;

use super::device::DeviceChoice;
use crate::optim::{Rule, TrustRatio};
use crate::schedule::Schedule;
use loader::pipeline::LoaderConfig;
use loader::source::Origin;

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
    pub source: Origin,
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
    /// Reduce gradient groups of `fusion_bytes` as back-propagation
    /// completes them ([`crate::overlap`]).
    pub reduce_during_backward: bool,
    /// How gradients are summed over the ranks.
    pub exchange: cluster::allreduce::Exchange,
    /// How the pool's idle threads wait during a step
    /// ([`crate::kernels::wait`]).
    pub wait: crate::kernels::wait::WaitPolicy,
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
    /// The training loss (mean over the ranks of a step) whose first
    /// reaching the report times (`time_to_target_secs`).
    pub target_loss: Option<f32>,
    /// Where rank 0 draws the trained network's predictions for a few
    /// validation samples, for models that draw them
    /// ([`TrainModel::picture`](super::TrainModel::picture)).
    pub predictions: Option<PathBuf>,
    /// Check every training and validation sample for NaN and infinity as
    /// it is decoded, naming the first bad one by file (the loaders'
    /// `check_finite`). Losses and gradients are checked every step anyway.
    pub check_finite: bool,
    /// What convolutions and dense layers compute in ([`crate::kernels::precision`]).
    pub precision: crate::kernels::Precision,
    /// Loss scaling ([`crate::loss_scale`]).
    pub loss_scale: crate::loss_scale::LossScaleSpec,
}

/// The largest base learning rate a run accepts. The seeds' rates are at
/// most about 10 (LARS at large batches); one past this overflows the
/// parameters in a step and only shows later as NaN.
pub const MAX_LR: f32 = 1e3;

/// An error unless `value` is a finite number in `range`, naming `option`.
fn in_range<T: PartialOrd + Copy + std::fmt::Display + Into<f64>>(
    option: &str,
    value: T,
    range: impl std::ops::RangeBounds<T>,
    what: &str,
) -> Result<(), String> {
    if value.into().is_finite() && range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{option} must be {what}, got {value}"))
    }
}

impl TrainConfig {
    /// How the training loader cuts and delivers batches: whole batches
    /// only (every rank takes the same number of steps), a corrupt sample
    /// an error.
    pub fn loader(&self) -> LoaderConfig {
        LoaderConfig {
            batch: self.batch,
            workers: self.workers,
            prefetch: self.prefetch,
            skip_corrupt: false,
            check_finite: self.check_finite,
            drop_last: true,
        }
    }

    /// An error naming the first option whose value no run can use: not a
    /// finite number (`nan`, `inf`), or outside what the option means (a
    /// negative rate, a momentum of 1 or more). Checked before MPI starts,
    /// so a typo fails with one line instead of training to NaN.
    pub fn validate(&self) -> Result<(), String> {
        if self.batch == 0 {
            return Err("--batch must be at least 1".into());
        }
        if let (loader::source::Origin::Synthetic { .. }, Some(val)) = (&self.source, &self.val) {
            return Err(format!(
                "--synthetic-data trains without files; --val {} would validate on files (give one or the other)",
                val.display()
            ));
        }
        if self.grad_lag && self.reduce_during_backward {
            return Err(
                "--grad-lag 1 and --reduce-during-backward are two ways of hiding the exchange; give one".into()
            );
        }
        if let Some(target) = self.target_loss
            && !target.is_finite()
        {
            return Err(format!("--target-loss must be a finite number, got {target}"));
        }
        // 0 is allowed: a run that must not move the parameters (its
        // checkpoint holds the initial ones).
        in_range("--lr", self.lr, 0.0..=MAX_LR, &format!("a rate from 0 to {MAX_LR}"))?;
        match self.rule {
            Rule::Sgd { momentum } => in_range("--momentum", momentum, 0.0..1.0, "in [0, 1)")?,
            Rule::Adam { beta1, beta2, epsilon } => {
                in_range("Adam's beta1", beta1, 0.0..1.0, "in [0, 1)")?;
                in_range("Adam's beta2", beta2, 0.0..1.0, "in [0, 1)")?;
                in_range("Adam's epsilon", epsilon, f32::MIN_POSITIVE.., "> 0")?;
            }
        }
        if let Some(trust) = self.trust {
            in_range("--trust", trust.trust, f32::MIN_POSITIVE.., "a coefficient > 0")?;
        }
        in_range("--warmup-epochs", self.warmup_epochs, 0.0.., "a number of epochs >= 0")?;
        if let Some(start) = self.warmup_start {
            in_range("--warmup-start", start, f32::MIN_POSITIVE..=MAX_LR, "a rate > 0")?;
        }
        in_range("--weight-decay", self.weight_decay, 0.0.., "a number >= 0")?;
        in_range("--val-fraction", self.val_fraction, 0.0..1.0, "in [0, 1)")?;
        match &self.schedule {
            ScheduleSpec::Constant => {}
            ScheduleSpec::Poly { end_factor, epochs, power } => {
                in_range("--poly-end", *end_factor, 0.0..=1.0, "a fraction of --lr in [0, 1]")?;
                in_range("--poly-epochs", *epochs, 0.0.., "a number of epochs >= 0")?;
                in_range("--poly-power", *power, f32::MIN_POSITIVE.., "an exponent > 0")?;
            }
            ScheduleSpec::Step { boundaries, factors } => {
                for &b in boundaries {
                    in_range("--decay-epochs", b, 0.0.., "epochs >= 0")?;
                }
                if boundaries.windows(2).any(|w| w[1] <= w[0]) {
                    return Err(format!("--decay-epochs must rise, got {boundaries:?}"));
                }
                for &f in factors {
                    in_range("--decay-factors", f, f32::MIN_POSITIVE.., "factors > 0")?;
                }
            }
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::engine::DeviceChoice;

    fn config() -> TrainConfig {
        TrainConfig {
            device: DeviceChoice::Cpu,
            source: Origin::Dir("data".into()),
            val: None,
            val_fraction: 0.2,
            epochs: 4,
            batch: 8,
            lr: 0.001,
            rule: Rule::Sgd { momentum: 0.9 },
            trust: None,
            schedule: ScheduleSpec::Constant,
            warmup_epochs: 0.0,
            warmup_start: None,
            weight_decay: 0.0,
            grad_lag: false,
            reduce_during_backward: false,
            exchange: cluster::allreduce::Exchange::Auto,
            wait: crate::kernels::wait::WaitPolicy::Passive,
            fusion_bytes: 64 << 20,
            seed: 0,
            workers: 2,
            prefetch: 4,
            checkpoint: None,
            checkpoint_every: None,
            max_steps: None,
            target_loss: None,
            predictions: None,
            check_finite: false,
            precision: crate::kernels::Precision::F32,
            loss_scale: crate::loss_scale::LossScaleSpec::Off,
        }
    }

    /// The hostile tester's values, each refused naming its option; what
    /// the seeds use is accepted.
    #[test]
    fn options_that_are_not_finite_or_out_of_range_are_refused_by_name() {
        config().validate().unwrap();
        type Spoil = Box<dyn Fn(&mut TrainConfig)>;
        let bad: Vec<(&str, Spoil)> = vec![
            ("--lr", Box::new(|c| c.lr = f32::NAN)),
            ("--lr", Box::new(|c| c.lr = f32::INFINITY)),
            ("--lr", Box::new(|c| c.lr = 1e30)),
            ("--lr", Box::new(|c| c.lr = -1.0)),
            ("--momentum", Box::new(|c| c.rule = Rule::Sgd { momentum: f32::NAN })),
            ("--momentum", Box::new(|c| c.rule = Rule::Sgd { momentum: 1.0 })),
            ("--trust", Box::new(|c| c.trust = Some(TrustRatio { trust: f32::NAN, clip: true }))),
            ("--warmup-epochs", Box::new(|c| c.warmup_epochs = -5.0)),
            ("--warmup-epochs", Box::new(|c| c.warmup_epochs = f64::NAN)),
            ("--weight-decay", Box::new(|c| c.weight_decay = f32::INFINITY)),
            (
                "--poly-end",
                Box::new(|c| c.schedule = ScheduleSpec::Poly { end_factor: f32::NAN, epochs: 4.0, power: 1.0 }),
            ),
            (
                "--poly-power",
                Box::new(|c| c.schedule = ScheduleSpec::Poly { end_factor: 0.1, epochs: 4.0, power: f32::NAN }),
            ),
            (
                "--decay-factors",
                Box::new(|c| c.schedule = ScheduleSpec::Step { boundaries: vec![1.0], factors: vec![f32::NAN] }),
            ),
            (
                "--decay-epochs",
                Box::new(|c| c.schedule = ScheduleSpec::Step { boundaries: vec![2.0, 1.0], factors: vec![0.5, 0.1] }),
            ),
            ("--val-fraction", Box::new(|c| c.val_fraction = f64::NAN)),
        ];
        for (option, spoil) in bad {
            let mut c = config();
            spoil(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.starts_with(option), "{option}: {e}");
        }
        let mut seeds = config();
        seeds.lr = 0.0;
        seeds.rule = Rule::ADAM;
        seeds.trust = Some(TrustRatio { trust: 0.002, clip: true });
        seeds.warmup_epochs = 4.0;
        seeds.schedule = ScheduleSpec::Step { boundaries: vec![32.0, 64.0], factors: vec![0.25, 0.125] };
        seeds.validate().unwrap();
    }
}
