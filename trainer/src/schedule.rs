//! Learning-rate schedules of the papers: polynomial decay (CosmoFlow
//! SC18), step decay at given epochs (MLPerf CosmoFlow, DeepCAM), and a
//! linear warm-up in front of either. Pure functions of the step.

/// A learning-rate schedule.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// A constant rate.
    Constant(f32),
    /// `(lr0 - end) (1 - step/steps)^power + end`, then `end`.
    Poly {
        /// Initial rate.
        lr0: f32,
        /// Final rate.
        end: f32,
        /// Steps to decay over.
        steps: u64,
        /// Exponent (1 = linear).
        power: f32,
    },
    /// `lr0 * factor^k` after the k-th boundary (in steps).
    Step {
        /// Initial rate.
        lr0: f32,
        /// Boundaries, increasing.
        boundaries: Vec<u64>,
        /// Multiplier per boundary passed.
        factor: f32,
    },
    /// `lr0 * factors[k]` from boundary k on (MLPerf CosmoFlow: 0.25 after
    /// epoch 32, 0.125 after epoch 64, both relative to `lr0`).
    Piecewise {
        /// Initial rate.
        lr0: f32,
        /// Boundaries in steps, increasing.
        boundaries: Vec<u64>,
        /// Factor from each boundary on.
        factors: Vec<f32>,
    },
    /// Linear warm-up to `lr(steps)` over `steps`, from `start` (or, when
    /// `None`, from `lr(0) / steps`: the first step already moves), then
    /// the inner schedule (shifted by `steps`).
    Warmup {
        /// Warm-up steps.
        steps: u64,
        /// The rate of step 0 (Laanait et al.: 1e-4).
        start: Option<f32>,
        /// What follows.
        then: Box<Schedule>,
    },
}

impl Schedule {
    /// The rate at `step` (0-based).
    pub fn at(&self, step: u64) -> f32 {
        match self {
            Schedule::Constant(lr) => *lr,
            Schedule::Poly { lr0, end, steps, power } => {
                let done = (step.min(*steps) as f32) / (*steps).max(1) as f32;
                (lr0 - end) * (1.0 - done).powf(*power) + end
            }
            Schedule::Step { lr0, boundaries, factor } => {
                let passed = boundaries.iter().filter(|&&b| step >= b).count() as i32;
                lr0 * factor.powi(passed)
            }
            Schedule::Piecewise { lr0, boundaries, factors } => {
                let passed = boundaries.iter().filter(|&&b| step >= b).count();
                match passed.checked_sub(1).and_then(|k| factors.get(k)) {
                    Some(f) => lr0 * f,
                    None => *lr0,
                }
            }
            Schedule::Warmup { steps, start, then } => match (step < *steps, start) {
                (true, None) => then.at(0) * (step + 1) as f32 / *steps as f32,
                (true, Some(start)) => start + (then.at(0) - start) * step as f32 / *steps as f32,
                (false, _) => then.at(step - steps),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poly_decays_from_lr0_to_end_and_stays() {
        let s = Schedule::Poly { lr0: 0.01, end: 0.0001, steps: 100, power: 2.0 };
        assert_eq!(s.at(0), 0.01);
        assert!((s.at(50) - (0.0099 * 0.25 + 0.0001)).abs() < 1e-8);
        assert!((s.at(100) - 0.0001).abs() < 1e-9 && (s.at(1000) - 0.0001).abs() < 1e-9);
    }

    #[test]
    fn step_decay_multiplies_at_each_boundary() {
        let s = Schedule::Step { lr0: 0.1, boundaries: vec![10, 20], factor: 0.5 };
        assert_eq!([s.at(0), s.at(9), s.at(10), s.at(19), s.at(20), s.at(99)], [0.1, 0.1, 0.05, 0.05, 0.025, 0.025]);
    }

    #[test]
    fn piecewise_factors_are_relative_to_the_base_rate() {
        let s = Schedule::Piecewise { lr0: 0.004, boundaries: vec![32, 64], factors: vec![0.25, 0.125] };
        assert_eq!(
            [s.at(0), s.at(31), s.at(32), s.at(63), s.at(64), s.at(1000)],
            [0.004, 0.004, 0.001, 0.001, 0.0005, 0.0005]
        );
    }

    #[test]
    fn warmup_ramps_linearly_then_hands_over() {
        let s = Schedule::Warmup { steps: 4, start: None, then: Box::new(Schedule::Constant(0.8)) };
        assert_eq!([s.at(0), s.at(1), s.at(2), s.at(3), s.at(4), s.at(40)], [0.2, 0.4, 0.6, 0.8, 0.8, 0.8]);
        let s = Schedule::Warmup {
            steps: 2,
            start: None,
            then: Box::new(Schedule::Step { lr0: 1.0, boundaries: vec![3], factor: 0.1 }),
        };
        assert!((s.at(2) - 1.0).abs() < 1e-7 && (s.at(5) - 0.1).abs() < 1e-7);
    }

    /// Laanait et al.: from 1e-4 to N × the base rate for N ranks, then
    /// staircase decay.
    #[test]
    fn warmup_from_a_given_rate_reaches_the_schedule_linearly() {
        let then = Schedule::Piecewise { lr0: 0.0041, boundaries: vec![10], factors: vec![0.5] };
        let s = Schedule::Warmup { steps: 4, start: Some(1e-4), then: Box::new(then) };
        let want = [1e-4, 1.1e-3, 2.1e-3, 3.1e-3, 4.1e-3, 4.1e-3, 2.05e-3];
        for (step, want) in [0, 1, 2, 3, 4, 13, 14].into_iter().zip(want) {
            assert!((s.at(step) - want).abs() < 1e-8, "step {step}: {} vs {want}", s.at(step));
        }
    }
}
