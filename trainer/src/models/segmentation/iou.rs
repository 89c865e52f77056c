//! Intersection over union per class, the segmentation metric of Kurth et
//! al. (SC18) and MLPerf DeepCAM: IoU_k = TP_k / (TP_k + FP_k + FN_k),
//! from a confusion matrix each rank fills and the ranks sum.

/// Counts of (true class, predicted class) pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confusion {
    classes: usize,
    counts: Vec<u64>,
}

impl Confusion {
    /// An empty matrix of `classes` classes.
    pub fn new(classes: usize) -> Self {
        Confusion { classes, counts: vec![0; classes * classes] }
    }

    /// Count one pixel.
    pub fn add(&mut self, truth: usize, predicted: usize) {
        self.counts[truth * self.classes + predicted] += 1;
    }

    /// The counts, row = true class, for summing over ranks.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// A matrix from summed counts.
    pub fn from_counts(classes: usize, counts: Vec<u64>) -> Option<Self> {
        (counts.len() == classes * classes).then_some(Confusion { classes, counts })
    }

    /// IoU of each class; `None` for a class absent from both the truth
    /// and the predictions (its IoU is undefined, not 0 or 1).
    pub fn iou(&self) -> Vec<Option<f64>> {
        let k = self.classes;
        (0..k)
            .map(|c| {
                let tp = self.counts[c * k + c];
                let truth: u64 = self.counts[c * k..(c + 1) * k].iter().sum();
                let predicted: u64 = (0..k).map(|t| self.counts[t * k + c]).sum();
                let union = truth + predicted - tp;
                (union > 0).then(|| tp as f64 / union as f64)
            })
            .collect()
    }

    /// Mean IoU over the classes `from..` that are defined (0 if none is).
    pub fn mean_iou(&self, from: usize) -> f64 {
        let defined: Vec<f64> = self.iou().into_iter().skip(from).flatten().collect();
        if defined.is_empty() { 0.0 } else { defined.iter().sum::<f64>() / defined.len() as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iou_counts_true_positives_over_the_union() {
        let mut m = Confusion::new(3);
        // Truth 0 0 1 1 2 2, predicted 0 1 1 1 0 2.
        for (t, p) in [(0, 0), (0, 1), (1, 1), (1, 1), (2, 0), (2, 2)] {
            m.add(t, p);
        }
        let iou = m.iou();
        assert_eq!(iou, [Some(1.0 / 3.0), Some(2.0 / 3.0), Some(0.5)]);
        assert!((m.mean_iou(1) - (2.0 / 3.0 + 0.5) / 2.0).abs() < 1e-12);
        // All background: the minority classes score 0.
        let mut background = Confusion::new(3);
        for t in [0, 0, 1, 2] {
            background.add(t, 0);
        }
        assert_eq!(background.mean_iou(1), 0.0);
        // A class nobody saw is left out, not counted as 0 or 1.
        let mut only = Confusion::new(3);
        only.add(0, 0);
        assert_eq!(only.iou(), [Some(1.0), None, None]);
        assert_eq!(Confusion::from_counts(3, m.counts().to_vec()), Some(m));
        assert_eq!(Confusion::from_counts(3, vec![0; 4]), None);
    }
}
