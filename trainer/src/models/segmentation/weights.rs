//! Class weights of the segmentation loss, from how often each class
//! occurs in the training labels. 98 % of the pixels are background, so an
//! unweighted loss learns to predict background everywhere.

use std::str::FromStr;

use crate::engine::TrainError;

/// `--class-weights`: how a class's frequency f becomes its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassWeighting {
    /// 1/√f: "we weight the loss of each pixel by the inverse square root
    /// of the frequency of its class" (Kurth et al., SC18, Sec. V-B).
    InverseSqrt,
    /// f^-0.125, the MLPerf HPC DeepCAM reference's choice (its `train.py`
    /// class weights).
    MlperfPower,
    /// Every class weighs 1.
    Uniform,
}

impl FromStr for ClassWeighting {
    type Err = TrainError;

    fn from_str(s: &str) -> Result<Self, TrainError> {
        match s {
            "inv-sqrt" => Ok(ClassWeighting::InverseSqrt),
            "pow-0.125" => Ok(ClassWeighting::MlperfPower),
            "none" => Ok(ClassWeighting::Uniform),
            _ => Err(TrainError::Invalid(format!(
                "--class-weights '{s}' is not one of inv-sqrt (the paper), pow-0.125 (MLPerf DeepCAM), none"
            ))),
        }
    }
}

impl ClassWeighting {
    /// The weight of each class from its pixel count in the training labels.
    /// A class that never occurs has no frequency to weigh by: an error,
    /// unless every class weighs 1.
    pub fn weights(self, counts: &[u64]) -> Result<Vec<f32>, TrainError> {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return Err(TrainError::Data("the training labels hold no pixel to count".into()));
        }
        let power = match self {
            ClassWeighting::Uniform => return Ok(vec![1.0; counts.len()]),
            ClassWeighting::InverseSqrt => -0.5,
            ClassWeighting::MlperfPower => -0.125,
        };
        counts
            .iter()
            .enumerate()
            .map(|(class, &n)| {
                if n == 0 {
                    return Err(TrainError::Data(format!(
                        "class {class} never occurs in the training labels counted, so it has no weight; \
                         pass --class-weights none or use data with that class"
                    )));
                }
                Ok((n as f64 / total as f64).powf(power) as f32)
            })
            .collect()
    }
}

/// Pixels of each of `classes` classes in `labels` (class ids as f32, as
/// the loader delivers them); a label outside 0..classes is an error
/// naming it.
pub fn count_classes(labels: &[f32], classes: usize, counts: &mut [u64]) -> Result<(), TrainError> {
    for &l in labels {
        let class = l as usize;
        if l < 0.0 || l.fract() != 0.0 || class >= classes {
            return Err(TrainError::Data(format!("label {l} is not a class id 0 to {}", classes - 1)));
        }
        counts[class] += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The MLPerf reference's class frequencies (0.986268, 0.000458,
    /// 0.013274) give its published f^-0.125 weights (1.00173, 2.61461,
    /// 1.71642; the reference computed them from more digits of the
    /// frequencies, hence the 5e-5 tolerance) and 1/√f the paper's.
    #[test]
    fn weights_follow_the_papers_and_mlperfs_formulas() {
        let counts = [986_268, 458, 13_274];
        let close = |a: f32, b: f64| (f64::from(a) - b).abs() < 5e-5 * b;
        let inv = ClassWeighting::InverseSqrt.weights(&counts).unwrap();
        assert!(close(inv[0], 1.006_938) && close(inv[1], 46.726_93) && close(inv[2], 8.679_588), "{inv:?}");
        let mlperf = ClassWeighting::MlperfPower.weights(&counts).unwrap();
        assert!(close(mlperf[0], 1.00173) && close(mlperf[1], 2.61461) && close(mlperf[2], 1.71642), "{mlperf:?}");
        assert_eq!(ClassWeighting::Uniform.weights(&[5, 0, 1]).unwrap(), [1.0; 3]);
        let err = ClassWeighting::InverseSqrt.weights(&[5, 0, 1]).unwrap_err().to_string();
        assert!(err.contains("class 1 never occurs"), "{err}");
        assert!("pow-0.5".parse::<ClassWeighting>().is_err());
    }

    #[test]
    fn labels_outside_the_classes_are_refused() {
        let mut counts = [0u64; 3];
        count_classes(&[0.0, 2.0, 2.0, 1.0], 3, &mut counts).unwrap();
        assert_eq!(counts, [1, 1, 2]);
        for bad in [3.0, -1.0, 0.5, f32::NAN] {
            assert!(count_classes(&[bad], 3, &mut counts).is_err(), "{bad}");
        }
    }
}
