//! Loss scaling for training in half precision (`--loss-scale`): the loss
//! is multiplied by a scale before back-propagation so that small
//! gradients survive f16's narrow range (below 6·10⁻⁸ they round to zero),
//! and the gradients are divided by it again, in f32, before the exchange.
//! A step whose gradients overflowed (an infinity or NaN on any rank) is
//! skipped on every rank alike.
//!
//! The dynamic rule is Micikevicius et al., "Mixed Precision Training"
//! (ICLR 2018), Sec. 3.2, with PyTorch `torch.amp.GradScaler`'s defaults:
//! start at 2¹⁶, halve the scale after an overflow, double it after 2000
//! steps in a row without one. Laanait et al. (SC19, Sec. 6.2) trained
//! their FP16 runs with such an adaptive scale. A fixed scale (`N`) skips
//! overflowing steps too but never changes.
//!
//! Pure logic: the engine agrees on the overflow over the ranks and tells
//! [`LossScaler::after_step`].
//!
//! ```
//! use trainer::loss_scale::{LossScaleSpec, LossScaler};
//!
//! let mut scaler = LossScaler::new(LossScaleSpec::Dynamic);
//! assert_eq!(scaler.scale(), 65536.0);
//! assert!(!scaler.after_step(true)); // overflow: skip the step
//! assert_eq!(scaler.scale(), 32768.0);
//! assert!(scaler.after_step(false)); // fine: apply it
//! ```

use serde::Serialize;

/// `--loss-scale`: off, a fixed scale, or dynamic.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LossScaleSpec {
    /// No scaling (the default).
    Off,
    /// This scale throughout; overflowing steps are skipped.
    Fixed(f32),
    /// Start at [`INITIAL_SCALE`], halve on overflow, double after
    /// [`GROWTH_INTERVAL`] clean steps.
    Dynamic,
}

impl std::str::FromStr for LossScaleSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "off" => Ok(LossScaleSpec::Off),
            "dynamic" => Ok(LossScaleSpec::Dynamic),
            number => match number.parse::<f32>() {
                Ok(scale) if scale.is_finite() && scale >= 1.0 => Ok(LossScaleSpec::Fixed(scale)),
                _ => Err(format!("expected off, dynamic or a finite scale of at least 1, got {number:?}")),
            },
        }
    }
}

/// The dynamic scale's first value (PyTorch `GradScaler(init_scale=2.**16)`).
pub const INITIAL_SCALE: f32 = 65536.0;
/// Clean steps after which the dynamic scale doubles (PyTorch's `growth_interval`).
pub const GROWTH_INTERVAL: u64 = 2000;
/// The dynamic scale never falls below 1 (a scale below 1 would make
/// small gradients smaller still) nor rises above 2²⁴ (past it, a scaled
/// f32 loss itself loses precision).
const SCALE_RANGE: (f32, f32) = (1.0, 16_777_216.0);

/// Where a scaler stands, as checkpoints save it.
pub use formats::checkpoint::LossScaleState;

/// The loss scale of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossScaler {
    spec: LossScaleSpec,
    state: LossScaleState,
    growth_interval: u64,
}

impl LossScaler {
    /// A scaler as `spec` says, at its first scale.
    pub fn new(spec: LossScaleSpec) -> Self {
        let scale = match spec {
            LossScaleSpec::Off => 1.0,
            LossScaleSpec::Fixed(scale) => scale,
            LossScaleSpec::Dynamic => INITIAL_SCALE,
        };
        LossScaler {
            spec,
            state: LossScaleState { scale, clean_steps: 0, skipped: 0 },
            growth_interval: GROWTH_INTERVAL,
        }
    }

    /// The same with the dynamic scale growing after `steps` clean steps
    /// (tests; runs use [`GROWTH_INTERVAL`]).
    pub fn with_growth_interval(mut self, steps: u64) -> Self {
        self.growth_interval = steps.max(1);
        self
    }

    /// Whether the loss is scaled at all.
    pub fn active(&self) -> bool {
        self.spec != LossScaleSpec::Off
    }

    /// What `--loss-scale` said.
    pub fn spec(&self) -> LossScaleSpec {
        self.spec
    }

    /// The factor the loss is multiplied by this step.
    pub fn scale(&self) -> f32 {
        self.state.scale
    }

    /// Where it stands (for checkpoints and the report).
    pub fn state(&self) -> LossScaleState {
        self.state
    }

    /// Continue from a saved state.
    pub fn resume(&mut self, state: LossScaleState) {
        self.state = state;
    }

    /// Record a step whose gradients `overflowed` (on any rank: the
    /// caller agrees first) and adjust the scale; true if the step is to be
    /// applied, false if it is to be skipped.
    pub fn after_step(&mut self, overflowed: bool) -> bool {
        if !self.active() {
            return !overflowed;
        }
        let dynamic = self.spec == LossScaleSpec::Dynamic;
        if overflowed {
            self.state.skipped += 1;
            self.state.clean_steps = 0;
            if dynamic {
                self.state.scale = (self.state.scale * 0.5).max(SCALE_RANGE.0);
            }
            return false;
        }
        self.state.clean_steps += 1;
        if dynamic && self.state.clean_steps >= self.growth_interval {
            self.state.scale = (self.state.scale * 2.0).min(SCALE_RANGE.1);
            self.state.clean_steps = 0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dynamic_scale_halves_on_overflow_and_doubles_after_clean_steps() {
        let mut scaler = LossScaler::new(LossScaleSpec::Dynamic).with_growth_interval(3);
        assert!(!scaler.after_step(true));
        assert!(!scaler.after_step(true));
        assert_eq!(scaler.scale(), INITIAL_SCALE / 4.0);
        assert!(scaler.after_step(false) && scaler.after_step(false));
        assert_eq!(scaler.scale(), INITIAL_SCALE / 4.0);
        assert!(scaler.after_step(false));
        assert_eq!(scaler.scale(), INITIAL_SCALE / 2.0);
        assert_eq!(scaler.state(), LossScaleState { scale: INITIAL_SCALE / 2.0, clean_steps: 0, skipped: 2 });
    }

    #[test]
    fn an_overflow_restarts_the_count_towards_growth() {
        let mut scaler = LossScaler::new(LossScaleSpec::Dynamic).with_growth_interval(2);
        scaler.after_step(false);
        scaler.after_step(true);
        scaler.after_step(false);
        assert_eq!(scaler.scale(), INITIAL_SCALE / 2.0);
    }

    #[test]
    fn the_scale_stays_within_one_and_two_to_the_twenty_four() {
        let mut scaler = LossScaler::new(LossScaleSpec::Dynamic).with_growth_interval(1);
        (0..40).for_each(|_| {
            scaler.after_step(true);
        });
        assert_eq!(scaler.scale(), 1.0);
        (0..40).for_each(|_| {
            scaler.after_step(false);
        });
        assert_eq!(scaler.scale(), 16_777_216.0);
    }

    #[test]
    fn a_fixed_scale_skips_overflows_without_changing() {
        let mut scaler = LossScaler::new("128".parse().unwrap_or(LossScaleSpec::Off)).with_growth_interval(1);
        assert!(scaler.active());
        assert!(!scaler.after_step(true));
        assert!(scaler.after_step(false));
        assert_eq!((scaler.scale(), scaler.state().skipped), (128.0, 1));
    }

    #[test]
    fn without_scaling_an_overflow_is_not_applied_and_nothing_is_counted() {
        let mut scaler = LossScaler::new(LossScaleSpec::Off);
        assert!(!scaler.active());
        assert!(!scaler.after_step(true));
        assert_eq!(scaler.state().skipped, 0);
        assert_eq!(scaler.scale(), 1.0);
    }

    #[test]
    fn the_flag_reads_off_dynamic_and_scales_of_at_least_one() {
        assert_eq!("dynamic".parse(), Ok(LossScaleSpec::Dynamic));
        assert_eq!("off".parse(), Ok(LossScaleSpec::Off));
        assert_eq!("1024".parse(), Ok(LossScaleSpec::Fixed(1024.0)));
        for bad in ["0.5", "inf", "nan", "lots", "-8"] {
            assert!(bad.parse::<LossScaleSpec>().is_err(), "{bad}");
        }
    }
}
