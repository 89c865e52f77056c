//! The inverse-imaging model as the engine trains it: CBED stacks from
//! scattering stores in, projected densities out, the Huber loss with its
//! decaying cutoff, and validation against the simplest predictor there
//! is, the training set's mean density image.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use formats::manifest::{Manifest, SampleKind};
use formats::scattering::ScatteringShape;
use loader::dataset::{Dataset, DatasetError};
use loader::lmdb::ScatteringStores;
use loader::pipeline::Batch;
use mpi::collective::SystemOperation;
use mpi::traits::*;

use super::huber::{self, mean_huber};
use crate::engine::{Cuts, ModelChoice, ModelSummary, StepContext, TrainError, TrainModel, Validation};
use crate::models::segmentation::layers::Pass;
use crate::models::segmentation::tiramisu::{Tiramisu, TiramisuConfig};
use crate::params::Init;

/// Training samples (the first a rank holds) the normalisation is fitted on.
const FITTED_SAMPLES: usize = 16;

/// What the model learns from the training data before the first step.
/// Inputs are standardised with one mean and deviation; targets pixel by
/// pixel, with each pixel's mean and deviation over the training set, so
/// that the mean training image is the prediction 0 and the network learns
/// how a sample departs from it. (Where a pixel hardly varies, its
/// deviation is floored at a twentieth of the average pixel's, so noise
/// there is not blown up.)
#[derive(Debug, Clone, PartialEq)]
struct Normalisation {
    input_mean: f32,
    input_std: f32,
    /// Per pixel: the mean target image.
    target_mean: Vec<f32>,
    /// Per pixel: the targets' deviation.
    target_std: Vec<f32>,
}

/// The inverse-imaging FC-DenseNet with everything the engine asks of a
/// model.
#[derive(Debug)]
pub struct InverseModel {
    network: TiramisuConfig,
    norm_group: usize,
    shape: OnceLock<ScatteringShape>,
    normalisation: Option<Normalisation>,
}

/// The inverse model's own options (`trainer train inverse --help`).
/// Inputs and targets are always standardised with training-set statistics.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct InverseOptions {
    /// Dropout probability after every convolution of the dense blocks
    /// (default: the configuration's).
    #[arg(long, value_parser = crate::engine::dropout_probability)]
    pub dropout: Option<f32>,
    /// Normalise over groups of N samples of each rank's batch instead of
    /// the whole batch ("ghost" batch norm). Must divide --batch.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub bn_group: Option<u64>,
}

impl InverseModel {
    /// The configuration `choice` names with `options`.
    pub fn new(choice: &ModelChoice, options: &InverseOptions) -> Result<Self, TrainError> {
        let mut network = super::by_name(&choice.config)
            .ok_or_else(|| TrainError::Model(format!("unknown inverse configuration '{}'", choice.config)))?;
        if let Some(p) = options.dropout {
            network.block_dropout = Some(p);
        }
        Ok(InverseModel {
            network,
            norm_group: crate::engine::norm_group(options.bn_group, choice.batch)?,
            shape: OnceLock::new(),
            normalisation: None,
        })
    }

    fn shape(&self) -> Result<ScatteringShape, TrainError> {
        self.shape.get().copied().ok_or_else(|| TrainError::Data("the data was not checked before training".into()))
    }

    fn normalisation(&self) -> Result<&Normalisation, TrainError> {
        self.normalisation.as_ref().ok_or_else(|| TrainError::Model("the model was not fitted before training".into()))
    }

    /// Standardised inputs [N, positions, H, W] and targets [N, 1, H, W].
    fn tensors(&self, batch: &Batch, device: &Device) -> Result<(Tensor<4>, Tensor<4>), TrainError> {
        let s = self.shape()?;
        let n = self.normalisation()?;
        let [p, h, w] = [s.positions as usize, s.height as usize, s.width as usize];
        let x: Vec<f32> = batch.x.iter().map(|v| (v - n.input_mean) / n.input_std).collect();
        let pixels = n.target_mean.len();
        let y: Vec<f32> = batch
            .y
            .iter()
            .enumerate()
            .map(|(i, v)| (v - n.target_mean[i % pixels]) / n.target_std[i % pixels])
            .collect();
        Ok((
            Tensor::from_data(TensorData::new(x, [batch.len(), p, h, w]), device),
            Tensor::from_data(TensorData::new(y, [batch.len(), 1, h, w]), device),
        ))
    }
}

fn scalar(t: Tensor<1>) -> Result<f64, TrainError> {
    crate::engine::scalar(t).map(f64::from)
}

impl TrainModel for InverseModel {
    type Net = Tiramisu;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.network).unwrap_or(serde_json::Value::Null);
        if let (Some(map), Some(n)) = (details.as_object_mut(), &self.normalisation) {
            map.insert("input_mean".into(), n.input_mean.into());
            map.insert("input_std".into(), n.input_std.into());
            let average = |v: &[f32]| v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len().max(1) as f64;
            map.insert("target_mean_average".into(), average(&n.target_mean).into());
            map.insert("target_std_average".into(), average(&n.target_std).into());
            map.insert("norm_group".into(), self.norm_group.into());
        }
        ModelSummary { name: "inverse".into(), config: self.network.name.clone(), details }
    }

    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        let macs = crate::models::segmentation::flops::tiramisu(&self.network, self.network.input);
        Ok(batch.len() as f64 * crate::flops::training_flops(macs))
    }

    fn build(&self, device: &Device) -> Result<Tiramisu, TrainError> {
        Ok(self.network.init(device))
    }

    fn weight_init(&self) -> Init {
        // He et al. 2015 for ReLU networks, as the FC-DenseNet (Jégou et al.).
        Init::HeUniformLeaky { slope: 0.0 }
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        let shown = dir.display();
        if manifest.schema.kind != SampleKind::Scattering {
            return Err(TrainError::Data(format!(
                "{shown}: holds {:?} samples; inverse trains on scattering stores (simgen multislice)",
                manifest.schema.kind
            )));
        }
        let stores =
            ScatteringStores::open(&loader::catalog::lmdb_stores(dir, manifest, None)).map_err(TrainError::from)?;
        let shape = stores.shape();
        let want = [self.network.channels, self.network.input[0], self.network.input[1]];
        let got = [shape.positions as usize, shape.height as usize, shape.width as usize];
        if got != want {
            return Err(TrainError::Data(format!(
                "{shown}: samples of {} patterns of {}×{}; inverse '{}' takes {} patterns of {}×{}",
                got[0], got[1], got[2], self.network.name, want[0], want[1], want[2]
            )));
        }
        stores.check_every_shape().map_err(TrainError::from)?;
        let _ = self.shape.set(shape);
        Ok(())
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        Ok(Arc::new(ScatteringStores::open(&loader::catalog::lmdb_stores(dir, manifest, files))?))
    }

    /// Samples of the configuration's shape: its patterns as inputs, a
    /// potential of values in [-1, 1) as target.
    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let [height, width] = self.network.input;
        let shape =
            ScatteringShape { positions: self.network.channels as u32, height: height as u32, width: width as u32 };
        let s = *self.shape.get_or_init(|| shape);
        let pixels = s.height as usize * s.width as usize;
        let target = loader::synthetic::Target::Values { low: -1.0, high: 1.0 };
        Ok(Some(Arc::new(loader::synthetic::SyntheticDataset::new(
            samples,
            pixels * s.positions as usize,
            pixels,
            target,
        ))))
    }

    /// The input's mean and deviation, and each target pixel's, over the
    /// first training samples (summed over the ranks when they hold
    /// different ones).
    fn fit(&mut self, world: &World, train: &dyn Dataset, first: &[usize], same: bool) -> Result<(), TrainError> {
        let (mut x, mut y) = (vec![0f32; train.x_len()], vec![0f32; train.y_len()]);
        let pixels = y.len();
        // [samples, Σx, Σx², then Σy and Σy² of every target pixel]
        let mut sums = vec![0f64; 3 + 2 * pixels];
        for &i in first.iter().take(FITTED_SAMPLES) {
            train.read_into(i, &mut x, &mut y).map_err(TrainError::from)?;
            sums[0] += 1.0;
            sums[1] += x.iter().map(|&v| f64::from(v)).sum::<f64>();
            sums[2] += x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
            for (p, &v) in y.iter().enumerate() {
                sums[3 + p] += f64::from(v);
                sums[3 + pixels + p] += f64::from(v) * f64::from(v);
            }
        }
        if !same {
            let local = sums.clone();
            world.comm().all_reduce_into(&local[..], &mut sums[..], SystemOperation::sum());
        }
        let samples = sums[0];
        if samples == 0.0 {
            return Err(TrainError::Data("no training sample to fit the normalisation on".into()));
        }
        let moments = |sum: f64, squares: f64, count: f64| {
            let mean = sum / count;
            (mean, (squares / count - mean * mean).max(0.0).sqrt())
        };
        let (input_mean, input_std) = moments(sums[1], sums[2], samples * x.len() as f64);
        let per_pixel: Vec<(f64, f64)> =
            (0..pixels).map(|p| moments(sums[3 + p], sums[3 + pixels + p], samples)).collect();
        let average_std = per_pixel.iter().map(|m| m.1).sum::<f64>() / pixels.max(1) as f64;
        if !(input_std > 0.0 && average_std > 0.0) {
            return Err(TrainError::Data(format!(
                "the first {samples} training samples do not vary (input deviation {input_std}, target deviation \
                 {average_std}): nothing to learn"
            )));
        }
        self.normalisation = Some(Normalisation {
            input_mean: input_mean as f32,
            input_std: input_std as f32,
            target_mean: per_pixel.iter().map(|m| m.0 as f32).collect(),
            target_std: per_pixel.iter().map(|m| m.1.max(average_std / 20.0) as f32).collect(),
        });
        Ok(())
    }

    fn loss_with_cuts(
        &self,
        net: &Tiramisu,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let (x, y) = self.tensors(batch, device)?;
        let prediction = Pass::training(step, self.norm_group).with_cuts(cuts, |pass| net.forward(x, pass));
        Ok(mean_huber(prediction, y, huber::delta(step.epoch)))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["loss", "mean_image_loss", "relative_l2"]
    }

    /// The Huber loss at the first epoch's cutoff (so epochs compare), that
    /// of the mean training image as the prediction (0 in standardised
    /// units), and the relative L2 error ‖prediction − truth‖ / ‖truth‖ of
    /// the densities.
    fn validate(
        &self,
        world: &World,
        net: &Tiramisu,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        let n = self.normalisation()?;
        let delta = huber::INITIAL_DELTA;
        let s = self.shape()?;
        let (h, w) = (s.height as usize, s.width as usize);
        let scale = Tensor::<4>::from_data(TensorData::new(n.target_std.clone(), [1, 1, h, w]), device);
        // [Σ loss·pixels, Σ mean-image loss·pixels, Σ‖error‖², Σ‖truth‖², pixels]
        let mut local = [0f64; 5];
        for batch in batches {
            let batch = batch.map_err(TrainError::from)?;
            let (x, y) = self.tensors(&batch, device)?;
            let prediction = net.forward(x, &mut Pass::inference());
            let pixels = batch.y.len() as f64;
            local[0] += scalar(mean_huber(prediction.clone(), y.clone(), delta))? * pixels;
            local[1] += scalar(mean_huber(y.zeros_like(), y.clone(), delta))? * pixels;
            local[2] += scalar(((prediction - y) * scale.clone()).powi_scalar(2).sum())?;
            local[3] += batch.y.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
            local[4] += pixels;
        }
        let mut total = [0f64; 5];
        world.comm().all_reduce_into(&local[..], &mut total[..], SystemOperation::sum());
        let pixels = total[4];
        let (loss, mean_loss) =
            if pixels > 0.0 { (total[0] / pixels, total[1] / pixels) } else { (f64::NAN, f64::NAN) };
        let relative = (total[2] / total[3]).sqrt();
        let line = format!(
            "val Huber {loss:.4} (the mean image: {mean_loss:.4}, ratio {:.3}), relative L2 error {relative:.3}",
            loss / mean_loss
        );
        let samples = (pixels / (h * w) as f64).round() as u64;
        let mut metrics = serde_json::Map::new();
        metrics.insert("loss".into(), loss.into());
        metrics.insert("mean_image_loss".into(), mean_loss.into());
        metrics.insert("relative_l2".into(), relative.into());
        Ok(Validation { samples, metrics, line })
    }

    /// The samples' densities beside the network's reconstructions, in the
    /// targets' units (the per-pixel standardisation undone).
    fn picture(&self, net: &Tiramisu, batch: &Batch, device: &Device, path: &Path) -> Result<bool, TrainError> {
        let n = self.normalisation()?;
        let s = self.shape()?;
        let (x, _) = self.tensors(batch, device)?;
        let standardised = net
            .forward(x, &mut Pass::inference())
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|e| TrainError::context("reading the predictions", e))?;
        let pixels = n.target_mean.len();
        let predictions: Vec<f32> = standardised
            .iter()
            .enumerate()
            .map(|(i, v)| v * n.target_std[i % pixels] + n.target_mean[i % pixels])
            .collect();
        super::picture::write(&batch.y, &predictions, (s.height as usize, s.width as usize), path)
            .map_err(|e| TrainError::context(format!("writing {}", path.display()), e))?;
        Ok(true)
    }
}
