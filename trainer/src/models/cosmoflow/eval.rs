//! Validation of a regression: mean absolute error of each predicted
//! parameter over the held-out samples (every rank a strided share, sums
//! reduced over the ranks), next to the error of always predicting the
//! validation mean.

use burn::tensor::Tensor;
use cluster::World;
use loader::dataset::DatasetError;
use loader::pipeline::Batch;
use mpi::collective::SystemOperation;
use mpi::traits::*;

use crate::engine::{TrainError, Validation};

/// Evaluate `predict` (a batch's predictions, [samples, `outputs`]) on
/// `batches`. Collective.
pub fn validate(
    world: &World,
    outputs: usize,
    batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
    mut predict: impl FnMut(&Batch) -> Tensor<2>,
) -> Result<Validation, TrainError> {
    let mut abs = vec![0f64; outputs];
    let mut sum_y = vec![0f64; outputs];
    let mut targets = Vec::new();
    for batch in batches {
        let batch = batch.map_err(TrainError::from)?;
        let prediction = predict(&batch)
            .into_data()
            .try_into_vec_as::<f32>()
            .map_err(|e| TrainError::context("a prediction did not convert to f32", e))?;
        if prediction.len() != batch.y.len() {
            return Err(TrainError::Model(format!(
                "{} predictions for {} targets in validation batch {}",
                prediction.len(),
                batch.y.len(),
                batch.number
            )));
        }
        for (k, (p, y)) in prediction.iter().zip(&batch.y).enumerate() {
            abs[k % outputs] += f64::from((p - y).abs());
            sum_y[k % outputs] += f64::from(*y);
        }
        targets.extend_from_slice(&batch.y);
    }
    let mut totals = vec![0f64; 2 * outputs + 1];
    let local: Vec<f64> = abs.iter().chain(&sum_y).copied().chain([(targets.len() / outputs) as f64]).collect();
    world.comm().all_reduce_into(&local[..], &mut totals[..], SystemOperation::sum());
    let samples = totals[2 * outputs].max(1.0);
    let mean: Vec<f64> = totals[outputs..2 * outputs].iter().map(|s| s / samples).collect();
    let mut spread = vec![0f64; outputs];
    for (k, y) in targets.iter().enumerate() {
        spread[k % outputs] += (f64::from(*y) - mean[k % outputs]).abs();
    }
    let mut baseline = vec![0f64; outputs];
    world.comm().all_reduce_into(&spread[..], &mut baseline[..], SystemOperation::sum());
    let mae: Vec<f64> = totals[..outputs].iter().map(|a| a / samples).collect();
    let baseline_mae: Vec<f64> = baseline.iter().map(|b| b / samples).collect();
    let relative_mae = relative_to_baseline(&mae, &baseline_mae);
    let shown: Vec<String> = mae.iter().map(|m| format!("{m:.3}")).collect();
    let line = match relative_mae {
        Some(relative) => format!("val MAE [{}] = {:.0}% of predicting the mean", shown.join(" "), 100.0 * relative),
        None => format!("val MAE [{}] (every validation target is the same: no mean to compare with)", shown.join(" ")),
    };
    let mut metrics = serde_json::Map::new();
    metrics.insert("mae".into(), mae.into());
    metrics.insert("baseline_mae".into(), baseline_mae.into());
    // null, not a number, when no parameter varies over the validation set.
    metrics.insert("relative_mae".into(), relative_mae.into());
    Ok(Validation { samples: totals[2 * outputs] as u64, metrics, line })
}

/// The mean over the parameters of `mae / baseline`, over the parameters
/// whose validation targets vary (`baseline > 0`); `None` when none does:
/// the ratio is then undefined, and no number stands in for it.
fn relative_to_baseline(mae: &[f64], baseline: &[f64]) -> Option<f64> {
    let ratios: Vec<f64> = mae.iter().zip(baseline).filter(|(_, b)| **b > 0.0).map(|(m, b)| m / b).collect();
    (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::relative_to_baseline;

    #[test]
    fn the_relative_error_leaves_out_parameters_that_do_not_vary_and_is_none_when_none_does() {
        assert_eq!(relative_to_baseline(&[0.5, 0.2], &[1.0, 0.4]), Some(0.5));
        assert_eq!(relative_to_baseline(&[0.5, 0.2], &[1.0, 0.0]), Some(0.5));
        assert_eq!(relative_to_baseline(&[0.5, 0.2], &[0.0, 0.0]), None);
    }
}
