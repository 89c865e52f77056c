//! Validation: mean absolute error of each predicted parameter over the
//! held-out samples (every rank a strided share, sums reduced over the
//! ranks), next to the error of always predicting the validation mean.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use loader::pipeline::{Loader, LoaderConfig};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use serde::Serialize;

use super::TrainError;
use super::data::ValData;
use super::standardize::Standardize;
use crate::model::cosmoflow::Cosmoflow;

/// Validation errors, per parameter and averaged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Validation {
    /// Samples evaluated (all ranks).
    pub samples: u64,
    /// Mean absolute error of the model, per parameter.
    pub mae: Vec<f64>,
    /// Mean absolute error of predicting the validation mean, per parameter.
    pub baseline_mae: Vec<f64>,
    /// Mean over parameters of `mae / baseline_mae` (< 1: better than the mean).
    pub relative_mae: f64,
}

/// Evaluate `model` on `val`. Collective.
pub fn validate(
    world: &World,
    model: &Cosmoflow,
    val: &ValData,
    loader: &LoaderConfig,
    standardize: Option<&Standardize>,
    device: &Device,
) -> Result<Validation, TrainError> {
    let config = model.config();
    let (d, c, outputs) = (config.input, config.channels, config.outputs);
    let model = model.valid();
    let len = loader::dataset::Dataset::len(&*val.dataset);
    let mine: Vec<usize> = (world.rank()..len).step_by(world.size().max(1)).collect();
    let mut abs = vec![0f64; outputs];
    let mut sum_y = vec![0f64; outputs];
    let mut targets = Vec::with_capacity(mine.len() * outputs);
    for batch in Loader::new(val.dataset.clone(), mine, *loader) {
        let batch = batch.map_err(|e| TrainError::Data(e.to_string()))?;
        let n = batch.len();
        let mut x = batch.x.clone();
        if let Some(s) = standardize {
            s.apply(&mut x);
        }
        let x = Tensor::<5>::from_data(TensorData::new(x, [n, d, d, d, c]), device);
        let prediction = model.forward(x, None).into_data().try_into_vec_as::<f32>().unwrap_or_default();
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
    Ok(Validation { samples: totals[2 * outputs] as u64, mae, baseline_mae, relative_mae })
}
