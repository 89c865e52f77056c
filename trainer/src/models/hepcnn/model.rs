//! HEP-CNN as the engine trains it: event images from HEP-CNN files
//! (`simgen jets`), softmax cross-entropy, and validation as the physics
//! wants it: accuracy and ROC AUC on held-out events beside two baselines,
//! the total transverse energy as a score and the cut-based selection
//! the files carry (`psr`), with the network's signal efficiency at the
//! selection's background efficiency.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use cluster::World;
use formats::jets::EventShape;
use formats::manifest::{Manifest, SampleKind};
use loader::dataset::{Dataset, DatasetError};
use loader::jets::{JetEvents, TARGET_LEN};
use loader::pipeline::Batch;
use mpi::collective::SystemOperation;
use mpi::traits::*;

use super::net::{HepCnn, HepCnnConfig};
use super::roc::ScoreHistogram;
use crate::engine::{Cuts, ModelChoice, ModelSummary, Split, StepContext, TrainError, TrainModel, Validation};
use crate::models::segmentation::layers::Pass;
use crate::params::Init;

/// Training events (the first a rank holds) the input scale is fitted on.
const FITTED_EVENTS: usize = 64;
/// E_T (GeV) at which the baseline's score, E_T / (E_T + this), is one half.
const BASELINE_SCALE: f64 = 1000.0;

/// HEP-CNN's own options (`trainer train hepcnn --help`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct HepCnnOptions {
    /// Dropout probability after every pooling (default: the configuration's).
    #[arg(long, value_parser = crate::engine::dropout_probability)]
    pub dropout: Option<f32>,
}

/// How the inputs are scaled: each value v of channel c becomes
/// ln(1 + v) / scale[c]. Energies in a cell span five decades (soft
/// pile-up to TeV jets); the logarithm keeps the hardest cells from
/// drowning the rest, and the scale (the root mean square of ln(1 + v)
/// over the first training events) gives each channel unit size.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct InputScale {
    scale: Vec<f32>,
}

/// HEP-CNN with everything the engine asks of a model.
#[derive(Debug)]
pub struct HepCnnModel {
    network: HepCnnConfig,
    shape: OnceLock<EventShape>,
    input: Option<InputScale>,
}

impl HepCnnModel {
    /// The configuration `choice` names with `options`.
    pub fn new(choice: &ModelChoice, options: &HepCnnOptions) -> Result<Self, TrainError> {
        let mut network = super::by_name(&choice.config)
            .ok_or_else(|| TrainError::Model(format!("unknown hepcnn configuration '{}'", choice.config)))?;
        if let Some(p) = options.dropout {
            network.dropout = p;
        }
        Ok(HepCnnModel { network, shape: OnceLock::new(), input: None })
    }

    fn shape(&self) -> Result<EventShape, TrainError> {
        self.shape.get().copied().ok_or_else(|| TrainError::Data("the data was not checked before training".into()))
    }

    /// Scaled images [N, C, H, W] and labels [N].
    fn tensors(&self, batch: &Batch, device: &Device) -> Result<(Tensor<4>, Tensor<1, Int>), TrainError> {
        let s = self.shape()?;
        let input =
            self.input.as_ref().ok_or_else(|| TrainError::Model("the model was not fitted before training".into()))?;
        let plane = s.height * s.width;
        let x: Vec<f32> = batch
            .x
            .iter()
            .enumerate()
            .map(|(i, &v)| v.max(0.0).ln_1p() / input.scale[(i / plane) % s.channels])
            .collect();
        let labels: Vec<i64> = batch.y.chunks_exact(TARGET_LEN).map(|t| t[0] as i64).collect();
        Ok((
            Tensor::from_data(TensorData::new(x, [batch.len(), s.channels, s.height, s.width]), device),
            Tensor::from_data(TensorData::new(labels, [batch.len()]), device),
        ))
    }
}

/// Mean softmax cross-entropy of `logits` [N, 2] against `labels` [N].
fn cross_entropy(logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
    let n = labels.dims()[0];
    let picked = log_softmax(logits, 1).gather(1, labels.reshape([n, 1]));
    picked.mean().neg()
}

impl TrainModel for HepCnnModel {
    type Net = HepCnn;

    fn summary(&self) -> ModelSummary {
        let mut details = serde_json::to_value(&self.network).unwrap_or(serde_json::Value::Null);
        if let (Some(map), Some(input)) = (details.as_object_mut(), &self.input) {
            map.insert("input_scale".into(), serde_json::json!(input.scale));
        }
        ModelSummary { name: "hepcnn".into(), config: self.network.name.clone(), details }
    }

    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        let s = self.shape()?;
        let n = &self.network;
        let (mut side, mut from, mut macs) = ([s.height, s.width], n.channels, 0.0);
        for unit in 0..=n.units {
            macs += crate::flops::conv(side[0] * side[1], from, n.filters, 9);
            from = n.filters;
            if unit < n.units {
                side = [side[0].div_ceil(2), side[1].div_ceil(2)];
            }
        }
        macs += crate::flops::dense(n.filters, 2);
        Ok(batch.len() as f64 * crate::flops::training_flops(macs))
    }

    fn build(&self, device: &Device) -> Result<HepCnn, TrainError> {
        Ok(self.network.init(device))
    }

    fn weight_init(&self) -> Init {
        // The benchmark's "initializer": "HE" (He et al. 2015, for ReLU).
        Init::HeUniformLeaky { slope: 0.0 }
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        let shown = dir.display();
        if manifest.schema.kind != SampleKind::Jets {
            return Err(TrainError::Data(format!(
                "{shown}: holds {:?} samples; hepcnn trains on collision events (simgen jets)",
                manifest.schema.kind
            )));
        }
        let files = loader::catalog::sample_paths(dir, manifest, None);
        if files.is_empty() {
            return Err(TrainError::Data(format!("{shown}: the manifest lists no event file")));
        }
        // Every file: labels other than 0 and 1 and files of other shapes
        // fail here, before MPI starts (the images are not read).
        let events = JetEvents::open(&files).map_err(TrainError::from)?;
        let shape = events.shape();
        if shape.channels != self.network.channels {
            return Err(TrainError::Data(format!(
                "{shown}: images of {} channels; hepcnn '{}' takes {} (ECAL, HCAL, tracks)",
                shape.channels, self.network.name, self.network.channels
            )));
        }
        if [shape.height, shape.width] != self.network.input {
            return Err(TrainError::Data(format!(
                "{shown}: images of {}×{}; hepcnn '{}' takes {}×{}",
                shape.height, shape.width, self.network.name, self.network.input[0], self.network.input[1]
            )));
        }
        let _ = self.shape.set(shape);
        Ok(())
    }

    fn split(&self, manifest: &Manifest) -> Option<Split> {
        Split::by_folders(manifest)
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        Ok(Arc::new(JetEvents::open(&loader::catalog::sample_paths(dir, manifest, files))?))
    }

    fn file_opener(&self) -> Option<loader::served::FileOpener> {
        Some(loader::served::path_opener(JetEvents::open))
    }

    /// Images of the configuration's size with random labels, weights and
    /// selection decisions of 0 or 1.
    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let [height, width] = self.network.input;
        let s = *self.shape.get_or_init(|| EventShape { channels: self.network.channels, height, width });
        let target = loader::synthetic::Target::Classes(2);
        Ok(Some(Arc::new(loader::synthetic::SyntheticDataset::new(samples, s.values(), TARGET_LEN, target))))
    }

    /// Each channel's root mean square of ln(1 + v) over the first
    /// training events (every rank's when they differ).
    fn fit(&mut self, world: &World, train: &dyn Dataset, first: &[usize], same: bool) -> Result<(), TrainError> {
        let s = self.shape()?;
        let plane = s.height * s.width;
        let (mut x, mut y) = (vec![0f32; train.x_len()], vec![0f32; train.y_len()]);
        // [values, then Σ ln(1 + v)² per channel]
        let mut sums = vec![0f64; 1 + s.channels];
        for &i in first.iter().take(FITTED_EVENTS) {
            train.read_into(i, &mut x, &mut y).map_err(TrainError::from)?;
            sums[0] += plane as f64;
            for (c, values) in x.chunks_exact(plane).enumerate() {
                sums[1 + c] += values.iter().map(|&v| f64::from(v.max(0.0).ln_1p()).powi(2)).sum::<f64>();
            }
        }
        if !same {
            let local = sums.clone();
            world.comm().all_reduce_into(&local[..], &mut sums[..], SystemOperation::sum());
        }
        if sums[0] == 0.0 {
            return Err(TrainError::Data("no training event to fit the input scale on".into()));
        }
        let mut scale = Vec::with_capacity(s.channels);
        for c in 0..s.channels {
            let rms = (sums[1 + c] / sums[0]).sqrt();
            if !(rms.is_finite() && rms > 0.0) {
                return Err(TrainError::Data(format!(
                    "channel {c} is zero in every one of the first {} training events: nothing to scale it by",
                    sums[0] as usize / plane
                )));
            }
            scale.push(rms as f32);
        }
        self.input = Some(InputScale { scale });
        Ok(())
    }

    fn loss_with_cuts(
        &self,
        net: &HepCnn,
        batch: &Batch,
        step: &StepContext,
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let (x, labels) = self.tensors(batch, device)?;
        let logits = Pass::training(step, 0).with_cuts(cuts, |pass| net.forward(x, pass));
        Ok(cross_entropy(logits, labels))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &[
            "loss",
            "accuracy",
            "auc",
            "energy_auc",
            "selection_accuracy",
            "selection_signal_efficiency",
            "selection_background_efficiency",
            "signal_efficiency_at_selection",
        ]
    }

    /// The mean cross-entropy, the accuracy (signal when the signal
    /// probability exceeds one half) and the area under the ROC curve,
    /// weighted by the events' weights as the benchmark weighs them; the
    /// same area for the total transverse energy as the score (no
    /// learning), the cut-based selection's accuracy and efficiencies, and
    /// the network's signal efficiency at the selection's background
    /// efficiency.
    fn validate(
        &self,
        world: &World,
        net: &HepCnn,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        let s = self.shape()?;
        let plane = s.height * s.width;
        let (mut network, mut energy) = (ScoreHistogram::default(), ScoreHistogram::default());
        // [events, Σ loss, Σw correct, Σw, Σw selection right, Σw signal, Σw signal selected, Σw background selected]
        let mut local = [0f64; 8];
        for batch in batches {
            let batch = batch.map_err(TrainError::from)?;
            let (x, labels) = self.tensors(&batch, device)?;
            let logits = net.forward(x, &mut Pass::inference());
            local[1] += f64::from(crate::engine::scalar(cross_entropy(logits.clone(), labels))?) * batch.len() as f64;
            let probabilities = burn::tensor::activation::softmax(logits, 1)
                .into_data()
                .try_to_vec::<f32>()
                .map_err(|e| TrainError::context("reading the predictions", e))?;
            for (k, target) in batch.y.chunks_exact(TARGET_LEN).enumerate() {
                let (signal, weight, selected) = (target[0] == 1.0, f64::from(target[1]), target[2] == 1.0);
                let score = f64::from(probabilities[2 * k + 1]);
                network.add(score, signal, weight);
                let image = &batch.x[k * s.values()..(k + 1) * s.values()];
                let et: f64 = image[..2 * plane].iter().map(|&v| f64::from(v)).sum();
                energy.add(et / (et + BASELINE_SCALE), signal, weight);
                local[0] += 1.0;
                local[2] += weight * f64::from(u8::from((score > 0.5) == signal));
                local[3] += weight;
                local[4] += weight * f64::from(u8::from(selected == signal));
                if signal {
                    local[5] += weight;
                    local[6] += weight * f64::from(u8::from(selected));
                } else {
                    local[7] += weight * f64::from(u8::from(selected));
                }
            }
        }
        let mut total = [0f64; 8];
        world.comm().all_reduce_into(&local[..], &mut total[..], SystemOperation::sum());
        let summed = |h: &ScoreHistogram| -> Result<ScoreHistogram, TrainError> {
            let mut all = vec![0f64; h.as_slice().len()];
            world.comm().all_reduce_into(h.as_slice(), &mut all[..], SystemOperation::sum());
            ScoreHistogram::from_counts(all).ok_or_else(|| TrainError::Model("score histograms of another size".into()))
        };
        let (network, energy) = (summed(&network)?, summed(&energy)?);
        let loss = total[1] / total[0];
        let accuracy = total[2] / total[3];
        let selection_accuracy = total[4] / total[3];
        let selection_signal = total[6] / total[5];
        let selection_background = total[7] / (total[3] - total[5]);
        let at_selection = network.signal_efficiency_at(selection_background);
        let line = format!(
            "val loss {loss:.4}, accuracy {accuracy:.3}, AUC {:.3} (E_T alone {:.3}; selection: accuracy \
             {selection_accuracy:.3}, signal {selection_signal:.3} at background {selection_background:.3}, \
             network's signal there {at_selection:.3})",
            network.auc(),
            energy.auc()
        );
        let mut metrics = serde_json::Map::new();
        for (name, value) in [
            ("loss", loss),
            ("accuracy", accuracy),
            ("auc", network.auc()),
            ("energy_auc", energy.auc()),
            ("selection_accuracy", selection_accuracy),
            ("selection_signal_efficiency", selection_signal),
            ("selection_background_efficiency", selection_background),
            ("signal_efficiency_at_selection", at_selection),
        ] {
            metrics.insert(name.into(), value.into());
        }
        Ok(Validation { samples: total[0] as u64, metrics, line })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn cross_entropy_of_confident_right_answers_is_small_and_of_even_odds_ln_2() {
        let device = Device::flex();
        let logits = Tensor::<2>::from_data(TensorData::new(vec![0f32, 0.0, 0.0, 0.0], [2, 2]), &device);
        let labels = Tensor::<1, Int>::from_data(TensorData::new(vec![0i64, 1], [2]), &device);
        let even = crate::engine::scalar(cross_entropy(logits, labels.clone())).unwrap();
        assert!((even - std::f32::consts::LN_2).abs() < 1e-6, "{even}");
        let confident = Tensor::<2>::from_data(TensorData::new(vec![10f32, -10.0, -10.0, 10.0], [2, 2]), &device);
        assert!(crate::engine::scalar(cross_entropy(confident, labels)).unwrap() < 1e-6);
    }
}
