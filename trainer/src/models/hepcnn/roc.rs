//! The ROC figures of a binary classifier from histograms of its scores,
//! so every rank bins its own events and one allreduce of the bins gives
//! the figures of all of them. TensorFlow's `tf.metrics.auc` (which the
//! HEP-CNN benchmark reports, with 5000 thresholds) works the same way;
//! here events that fall in one bin count as ties (half), so the area is
//! the rank statistic's up to the bin width.

/// Bins of the score histograms: as many as the benchmark's thresholds.
pub const BINS: usize = 5000;

/// Weighted counts of signal and background events by score in [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreHistogram {
    /// `[background bins..., signal bins...]`, weights summed.
    counts: Vec<f64>,
}

impl Default for ScoreHistogram {
    fn default() -> Self {
        ScoreHistogram { counts: vec![0.0; 2 * BINS] }
    }
}

impl ScoreHistogram {
    /// Add an event of score `score` (clamped into [0, 1]), class
    /// `signal` and weight `weight`.
    pub fn add(&mut self, score: f64, signal: bool, weight: f64) {
        let bin = ((score.clamp(0.0, 1.0) * BINS as f64) as usize).min(BINS - 1);
        self.counts[usize::from(signal) * BINS + bin] += weight;
    }

    /// The bins as one buffer, to sum over the ranks.
    pub fn as_slice(&self) -> &[f64] {
        &self.counts
    }

    /// A histogram from bins summed over the ranks (`None` if `counts` is
    /// not two histograms' worth).
    pub fn from_counts(counts: Vec<f64>) -> Option<Self> {
        (counts.len() == 2 * BINS).then_some(ScoreHistogram { counts })
    }

    fn classes(&self) -> (&[f64], &[f64]) {
        self.counts.split_at(BINS)
    }

    /// The area under the ROC curve: the probability that a signal event
    /// scores above a background one (ties half). NaN without events of
    /// both classes.
    pub fn auc(&self) -> f64 {
        let (background, signal) = self.classes();
        let (total_b, total_s): (f64, f64) = (background.iter().sum(), signal.iter().sum());
        let mut below = 0.0;
        let mut area = 0.0;
        for (b, s) in background.iter().zip(signal) {
            area += s * (below + 0.5 * b);
            below += b;
        }
        area / (total_b * total_s)
    }

    /// The signal efficiency of the loosest cut on the score that keeps no
    /// more than `background_efficiency` of the background: the network's
    /// answer to a cut-based selection working at that background rate.
    pub fn signal_efficiency_at(&self, background_efficiency: f64) -> f64 {
        let (background, signal) = self.classes();
        let (total_b, total_s): (f64, f64) = (background.iter().sum(), signal.iter().sum());
        let (mut kept_b, mut kept_s) = (0.0, 0.0);
        for bin in (0..BINS).rev() {
            if (kept_b + background[bin]) / total_b > background_efficiency {
                break;
            }
            kept_b += background[bin];
            kept_s += signal[bin];
        }
        kept_s / total_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(events: &[(f64, bool)]) -> ScoreHistogram {
        let mut h = ScoreHistogram::default();
        for &(score, signal) in events {
            h.add(score, signal, 1.0);
        }
        h
    }

    #[test]
    fn separated_classes_have_area_one_and_equal_scores_one_half() {
        let separated = histogram(&[(0.1, false), (0.2, false), (0.8, true), (0.9, true)]);
        assert_eq!(separated.auc(), 1.0);
        assert_eq!(separated.signal_efficiency_at(0.0), 1.0);
        let reversed = histogram(&[(0.9, false), (0.1, true)]);
        assert_eq!(reversed.auc(), 0.0);
        let tied = histogram(&[(0.5, false), (0.5, true), (0.5, false), (0.5, true)]);
        assert_eq!(tied.auc(), 0.5);
    }

    /// On scattered scores, the binned area equals the Mann-Whitney
    /// statistic counted pair by pair (scores well apart from the bins'
    /// edges, so no pair shares a bin by chance).
    #[test]
    fn the_area_is_the_fraction_of_signal_background_pairs_ordered_right() {
        let events: Vec<(f64, bool)> =
            (0..300).map(|i| (((i * 7919) % 1000) as f64 / 1000.0 + 1e-4, (i * 31) % 7 < 3 + (i % 2))).collect();
        let mut pairs = (0.0, 0.0);
        for &(s, _) in events.iter().filter(|e| e.1) {
            for &(b, _) in events.iter().filter(|e| !e.1) {
                pairs.0 += if s > b {
                    1.0
                } else if s == b {
                    0.5
                } else {
                    0.0
                };
                pairs.1 += 1.0;
            }
        }
        let exact = pairs.0 / pairs.1;
        let binned = histogram(&events).auc();
        assert!((binned - exact).abs() < 1e-12, "{binned} vs {exact}");
    }

    #[test]
    fn signal_efficiency_at_a_background_rate_takes_the_loosest_cut_within_it() {
        // Background at 0.1, 0.2, 0.3, 0.4; signal at 0.25, 0.35, 0.45, 0.5.
        let mut events: Vec<(f64, bool)> = [0.1, 0.2, 0.3, 0.4].iter().map(|&s| (s, false)).collect();
        events.extend([0.25, 0.35, 0.45, 0.5].iter().map(|&s| (s, true)));
        let h = histogram(&events);
        // Keeping a quarter of the background: the cut just below 0.4 keeps 3 signal.
        assert_eq!(h.signal_efficiency_at(0.25), 0.75);
        assert_eq!(h.signal_efficiency_at(0.0), 0.5);
        assert_eq!(h.signal_efficiency_at(1.0), 1.0);
    }

    #[test]
    fn histograms_summed_bin_by_bin_are_the_histogram_of_all_events() {
        let (a, b) = (histogram(&[(0.3, true), (0.2, false)]), histogram(&[(0.7, false), (0.9, true)]));
        let summed: Vec<f64> = a.as_slice().iter().zip(b.as_slice()).map(|(x, y)| x + y).collect();
        let all = histogram(&[(0.3, true), (0.2, false), (0.7, false), (0.9, true)]);
        assert_eq!(ScoreHistogram::from_counts(summed), Some(all));
        assert_eq!(ScoreHistogram::from_counts(vec![0.0; 3]), None);
    }
}
