//! Step times as the seeds report them (Kurth et al., SC18, Sec. VII;
//! Mathuriya et al., SC18, Sec. VII): the median over every rank's steps
//! with the central 68 % interval, load imbalance (the slowest rank's busy
//! time against the mean rank's) and sustained Flop/s from an analytic
//! count. The figures are computed here from what each rank measured; the
//! ranks' figures travel to every rank in one all-gather.

use cluster::World;
use serde::Serialize;

/// What one rank measured over some steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankSteps {
    /// Each step's wall seconds, from asking the loader for its batch to
    /// the new parameters written back.
    pub seconds: Vec<f64>,
    /// Seconds the rank worked rather than waited for the others: the
    /// step times without the gradient exchange (where a fast rank waits
    /// for the slowest).
    pub busy: f64,
    /// Floating-point operations of its steps ([`crate::flops`]).
    pub flops: f64,
}

impl RankSteps {
    /// Add one step.
    pub fn push(&mut self, seconds: f64, busy: f64, flops: f64) {
        self.seconds.push(seconds);
        self.busy += busy;
        self.flops += flops;
    }

    /// Add `other`'s steps after these.
    pub fn extend(&mut self, other: &RankSteps) {
        self.seconds.extend_from_slice(&other.seconds);
        self.busy += other.busy;
        self.flops += other.flops;
    }

    fn to_bytes(&self) -> Vec<u8> {
        [self.busy, self.flops].iter().chain(&self.seconds).flat_map(|v| v.to_le_bytes()).collect()
    }

    fn from_bytes(bytes: &[u8]) -> RankSteps {
        let mut values = bytes.chunks_exact(8).map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            f64::from_le_bytes(b)
        });
        let busy = values.next().unwrap_or(0.0);
        let flops = values.next().unwrap_or(0.0);
        RankSteps { seconds: values.collect(), busy, flops }
    }
}

/// Step-time figures over the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepStats {
    /// Steps timed, all ranks.
    pub steps: usize,
    /// Median step seconds over every rank's steps.
    pub median_secs: f64,
    /// The 16th percentile: with `high_secs`, the central 68 % of steps
    /// (a normal distribution's ±1σ).
    pub low_secs: f64,
    /// The 84th percentile.
    pub high_secs: f64,
    /// The busiest rank's busy seconds over the mean rank's: 1 when the
    /// ranks' work is even, 1.25 when the slowest works a quarter longer
    /// than the average while the others wait for it.
    pub imbalance: f64,
}

impl StepStats {
    /// The figures of `ranks`' measurements; `None` when no step was timed.
    pub fn of(ranks: &[RankSteps]) -> Option<StepStats> {
        let mut all: Vec<f64> = ranks.iter().flat_map(|r| r.seconds.iter().copied()).collect();
        if all.is_empty() {
            return None;
        }
        all.sort_by(f64::total_cmp);
        let mean_busy = ranks.iter().map(|r| r.busy).sum::<f64>() / ranks.len() as f64;
        let max_busy = ranks.iter().map(|r| r.busy).fold(0.0, f64::max);
        Some(StepStats {
            steps: all.len(),
            median_secs: percentile(&all, 0.5),
            low_secs: percentile(&all, 0.16),
            high_secs: percentile(&all, 0.84),
            imbalance: if mean_busy > 0.0 { max_busy / mean_busy } else { 1.0 },
        })
    }
}

/// The `q` quantile of sorted `values`, interpolated linearly between the
/// two nearest ranks (NumPy's default, `method="linear"`).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n => {
            let at = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (below, frac) = (at.floor() as usize, at.fract());
            let above = (below + 1).min(n - 1);
            sorted[below] + frac * (sorted[above] - sorted[below])
        }
    }
}

/// Floating-point operations per second of `ranks`' steps over `seconds`.
pub fn flops_per_sec(ranks: &[RankSteps], seconds: f64) -> f64 {
    ranks.iter().map(|r| r.flops).sum::<f64>() / seconds
}

/// Every rank's measurements, on every rank. Collective.
pub fn gather(world: &World, mine: &RankSteps) -> Vec<RankSteps> {
    world.all_gather_bytes(&mine.to_bytes()).iter().map(|b| RankSteps::from_bytes(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_between_neighbours_as_numpy_does() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 0.5), 3.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&v, 1.0), 5.0);
        // numpy.percentile([1, 2, 3, 4, 5], 16) = 1.64, 84 → 4.36.
        assert!((percentile(&v, 0.16) - 1.64).abs() < 1e-12);
        assert!((percentile(&v, 0.84) - 4.36).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.16), 7.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn the_figures_pool_every_ranks_steps_and_compare_busy_times() {
        let a = RankSteps { seconds: vec![1.0, 3.0, 5.0], busy: 6.0, flops: 10.0 };
        let b = RankSteps { seconds: vec![2.0, 4.0], busy: 2.0, flops: 10.0 };
        let stats = StepStats::of(&[a, b]).unwrap_or_else(|| panic!("no figures"));
        assert_eq!(stats.steps, 5);
        assert_eq!(stats.median_secs, 3.0);
        assert!((stats.low_secs - 1.64).abs() < 1e-12 && (stats.high_secs - 4.36).abs() < 1e-12);
        // The slowest rank worked 6 s against a mean of 4.
        assert_eq!(stats.imbalance, 1.5);
        assert_eq!(StepStats::of(&[RankSteps::default()]), None);
    }

    #[test]
    fn a_ranks_measurements_survive_the_trip_through_bytes() {
        let mut steps = RankSteps::default();
        steps.push(0.25, 0.2, 1.5e12);
        steps.push(0.5, 0.375, 1.5e12);
        assert_eq!(RankSteps::from_bytes(&steps.to_bytes()), steps);
        assert_eq!(RankSteps::from_bytes(&RankSteps::default().to_bytes()), RankSteps::default());
    }
}
