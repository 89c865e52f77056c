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
    let relative_mae =
        mae.iter().zip(&baseline_mae).map(|(m, b)| if *b > 0.0 { m / b } else { 1.0 }).sum::<f64>() / outputs as f64;
    let shown: Vec<String> = mae.iter().map(|m| format!("{m:.3}")).collect();
    let line = format!("val MAE [{}] = {:.0}% of predicting the mean", shown.join(" "), 100.0 * relative_mae);
    let mut metrics = serde_json::Map::new();
    metrics.insert("mae".into(), mae.into());
    metrics.insert("baseline_mae".into(), baseline_mae.into());
    metrics.insert("relative_mae".into(), relative_mae.into());
    Ok(Validation { samples: totals[2 * outputs] as u64, metrics, line })
}
