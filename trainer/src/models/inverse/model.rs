//! The inverse-imaging model as the engine trains it: CBED stacks from
//! scattering stores in, projected densities out, the Huber loss with its
//! decaying cutoff, and validation against the simplest predictor there
//! is, the training set's mean density image.

use std::path::{Path, PathBuf};
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
use crate::engine::{ModelOptions, ModelSummary, StepContext, TrainError, TrainModel, Validation};
use crate::models::dropout::DropoutMasks;
use crate::models::segmentation::layers::Pass;
use crate::models::segmentation::tiramisu::{Tiramisu, TiramisuConfig};
use crate::params::Init;

/// Training samples (the first a rank holds) the normalisation is fitted on.
const FITTED_SAMPLES: usize = 16;

/// What the model learns from the training data before the first step:
/// inputs and targets are standardised with these, and the mean density
/// image is the baseline validation compares against.
#[derive(Debug, Clone, PartialEq)]
struct Normalisation {
    input_mean: f32,
    input_std: f32,
    target_mean: f32,
    target_std: f32,
    /// The mean target image, standardised.
    mean_image: Vec<f32>,
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

impl InverseModel {
    /// The model for `options`.
    pub fn new(options: &ModelOptions) -> Result<Self, TrainError> {
        let mut network = super::by_name(&options.config)
            .ok_or_else(|| TrainError::Model(format!("unknown inverse configuration '{}'", options.config)))?;
        if let Some(p) = options.dropout {
            if !(0.0..1.0).contains(&p) {
                return Err(TrainError::Invalid("--dropout must be in [0, 1)".into()));
            }
            network.block_dropout = Some(p);
        }
        if options.augment || options.standardize || options.init.is_some() || options.class_weights.is_some() {
            return Err(TrainError::Invalid(
                "inverse takes no --augment, --standardize (inputs and targets are always standardised with \
                 training-set statistics), --init or --class-weights"
                    .into(),
            ));
        }
        Ok(InverseModel {
            network,
            norm_group: options.norm_group.unwrap_or(0),
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
        let y: Vec<f32> = batch.y.iter().map(|v| (v - n.target_mean) / n.target_std).collect();
        Ok((
            Tensor::from_data(TensorData::new(x, [batch.len(), p, h, w]), device),
            Tensor::from_data(TensorData::new(y, [batch.len(), 1, h, w]), device),
        ))
    }
}

/// The scattering stores of a manifest's files `files` (all when `None`).
fn store_paths(dir: &Path, manifest: &Manifest, files: Option<&[usize]>) -> Vec<PathBuf> {
    let all: Vec<usize> = (0..manifest.files.len()).filter(|&i| manifest.files[i].samples > 0).collect();
    files
        .unwrap_or(&all)
        .iter()
        .map(|&i| {
            // The manifest lists each store's `data.mdb`; LMDB opens the directory.
            let file = dir.join(&manifest.files[i].path);
            file.parent().map_or(file.clone(), Path::to_path_buf)
        })
        .collect()
}

fn scalar(t: Tensor<1>) -> Result<f64, TrainError> {
    let v = t.into_data().try_to_vec::<f32>().map_err(|e| TrainError::Model(format!("a loss is not f32: {e:?}")))?;
    v.first().map(|&v| f64::from(v)).ok_or_else(|| TrainError::Model("an empty loss tensor".into()))
}

impl TrainModel for InverseModel {
    type Net = Tiramisu;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.network).unwrap_or(serde_json::Value::Null);
        if let (Some(map), Some(n)) = (details.as_object_mut(), &self.normalisation) {
            map.insert("input_mean".into(), n.input_mean.into());
            map.insert("input_std".into(), n.input_std.into());
            map.insert("target_mean".into(), n.target_mean.into());
            map.insert("target_std".into(), n.target_std.into());
            map.insert("norm_group".into(), self.norm_group.into());
        }
        ModelSummary { name: "inverse".into(), config: self.network.name.clone(), details }
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
            ScatteringStores::open(&store_paths(dir, manifest, None)).map_err(|e| TrainError::Data(e.to_string()))?;
        let shape = stores.shape();
        let want = [self.network.channels, self.network.input[0], self.network.input[1]];
        let got = [shape.positions as usize, shape.height as usize, shape.width as usize];
        if got != want {
            return Err(TrainError::Data(format!(
                "{shown}: samples of {} patterns of {}×{}; inverse '{}' takes {} patterns of {}×{}",
                got[0], got[1], got[2], self.network.name, want[0], want[1], want[2]
            )));
        }
        stores.check_every_shape().map_err(|e| TrainError::Data(e.to_string()))?;
        let _ = self.shape.set(shape);
        Ok(())
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        Ok(Arc::new(ScatteringStores::open(&store_paths(dir, manifest, files))?))
    }

    /// Means and deviations of inputs and targets, and the mean target
    /// image, over the first training samples (summed over the ranks when
    /// they hold different ones).
    fn fit(&mut self, world: &World, train: &dyn Dataset, first: &[usize], same: bool) -> Result<(), TrainError> {
        let (mut x, mut y) = (vec![0f32; train.x_len()], vec![0f32; train.y_len()]);
        // [Σx, Σx², Σy, Σy², samples, then the summed target image]
        let mut sums = vec![0f64; 5 + y.len()];
        for &i in first.iter().take(FITTED_SAMPLES) {
            train.read_into(i, &mut x, &mut y).map_err(|e| TrainError::Data(e.to_string()))?;
            sums[0] += x.iter().map(|&v| f64::from(v)).sum::<f64>();
            sums[1] += x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
            sums[2] += y.iter().map(|&v| f64::from(v)).sum::<f64>();
            sums[3] += y.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>();
            sums[4] += 1.0;
            for (s, &v) in sums[5..].iter_mut().zip(&y) {
                *s += f64::from(v);
            }
        }
        if !same {
            let local = sums.clone();
            world.comm().all_reduce_into(&local[..], &mut sums[..], SystemOperation::sum());
        }
        let samples = sums[4];
        if samples == 0.0 {
            return Err(TrainError::Data("no training sample to fit the normalisation on".into()));
        }
        let moments = |sum: f64, squares: f64, len: usize| {
            let count = samples * len as f64;
            let mean = sum / count;
            (mean, (squares / count - mean * mean).max(0.0).sqrt())
        };
        let (input_mean, input_std) = moments(sums[0], sums[1], x.len());
        let (target_mean, target_std) = moments(sums[2], sums[3], y.len());
        if !(input_std > 0.0 && target_std > 0.0) {
            return Err(TrainError::Data(format!(
                "the first {samples} training samples are constant (input deviation {input_std}, target deviation \
                 {target_std}): nothing to learn"
            )));
        }
        let mean_image = sums[5..].iter().map(|s| ((s / samples - target_mean) / target_std) as f32).collect();
        self.normalisation = Some(Normalisation {
            input_mean: input_mean as f32,
            input_std: input_std as f32,
            target_mean: target_mean as f32,
            target_std: target_std as f32,
            mean_image,
        });
        Ok(())
    }

    fn loss(
        &self,
        net: &Tiramisu,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
    ) -> Result<Tensor<1>, TrainError> {
        let (x, y) = self.tensors(batch, device)?;
        let mut pass =
            Pass { masks: Some(DropoutMasks::for_step(step.seed, step.step, step.rank)), norm_group: self.norm_group };
        Ok(mean_huber(net.forward(x, &mut pass), y, huber::delta(step.epoch)))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["loss", "mean_image_loss", "relative_l2"]
    }

    /// The Huber loss at the first epoch's cutoff (so epochs compare), that
    /// of the mean training image as the prediction, and the relative L2
    /// error ‖prediction − truth‖ / ‖truth‖ of the densities.
    fn validate(
        &self,
        world: &World,
        net: &Tiramisu,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        let n = self.normalisation()?;
        let delta = huber::INITIAL_DELTA;
        // [Σ loss·pixels, Σ mean-image loss·pixels, Σ‖error‖², Σ‖truth‖², pixels]
        let mut local = [0f64; 5];
        for batch in batches {
            let batch = batch.map_err(|e| TrainError::Data(e.to_string()))?;
            let (x, y) = self.tensors(&batch, device)?;
            let prediction = net.forward(x, &mut Pass::inference());
            let pixels = batch.y.len() as f64;
            local[0] += scalar(mean_huber(prediction.clone(), y.clone(), delta))? * pixels;
            let mean: Vec<f32> = (0..batch.len()).flat_map(|_| n.mean_image.iter().copied()).collect();
            let mean = Tensor::<4>::from_data(TensorData::new(mean, y.dims()), device);
            local[1] += scalar(mean_huber(mean, y.clone(), delta))? * pixels;
            let scale = f64::from(n.target_std).powi(2);
            local[2] += scalar((prediction - y).powi_scalar(2).sum())? * scale;
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
        let s = self.shape()?;
        let samples = (pixels / (s.height as f64 * s.width as f64)).round() as u64;
        let mut metrics = serde_json::Map::new();
        metrics.insert("loss".into(), loss.into());
        metrics.insert("mean_image_loss".into(), mean_loss.into());
        metrics.insert("relative_l2".into(), relative.into());
        Ok(Validation { samples, metrics, line })
    }
}
