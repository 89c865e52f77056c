//! `bn-probe`: a small 3-D CNN with batch normalisation on CosmoFlow data.
//! Not a published model: it exists to check the engine's handling of
//! model state (BatchNorm running statistics: updated by the forward pass,
//! averaged over the ranks, checkpointed, used by validation), which the
//! segmentation and inverse-imaging networks depend on, in a test that
//! runs in seconds.
//!
//! Two stride-2 convolutions 3³ (4 → 8 → 8 channels), each followed by
//! BatchNorm (Ioffe & Szegedy 2015, burn's `BatchNorm` with momentum 0.1)
//! and ReLU, a global mean over the volume, and a dense layer to the 4
//! parameters; mean squared error.

use std::path::Path;
use std::sync::Arc;

use crate::kernels::relu;
use burn::module::Module;
use burn::nn::conv::{Conv3d, Conv3dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig3d};
use burn::tensor::{Device, Tensor, TensorData};
use cluster::World;
use formats::manifest::Manifest;
use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::Batch;

use crate::engine::{Cuts, InitChoice, ModelChoice, ModelSummary, StepContext, TrainError, TrainModel, Validation};
use crate::models::cosmoflow::{self, mse};
use crate::params::Init;

/// The configurations `--config` accepts.
pub const CONFIGS: &[&str] = &["small"];

const INPUT: usize = 32;
const CHANNELS: usize = 4;
const WIDTH: usize = 8;
const OUTPUTS: usize = 4;

/// The network.
#[derive(Module, Debug)]
pub struct ProbeNet {
    conv1: Conv3d,
    norm1: BatchNorm,
    conv2: Conv3d,
    norm2: BatchNorm,
    head: Linear,
}

impl ProbeNet {
    /// Predictions [N, 4] for [N, D, D, D, C] inputs (channels last).
    pub fn forward(&self, x: Tensor<5>) -> Tensor<2> {
        self.forward_cut(x, &mut Cuts::off())
    }

    /// [`forward`](Self::forward) cut after each convolution block
    /// (`--reduce-during-backward`).
    pub fn forward_cut(&self, x: Tensor<5>, cuts: &mut Cuts) -> Tensor<2> {
        let h = x.permute([0, 4, 1, 2, 3]);
        let h = cuts.cut(relu(self.norm1.forward(self.conv1.forward(h))));
        let h = cuts.cut(relu(self.norm2.forward(self.conv2.forward(h))));
        let [n, c, ..] = h.dims();
        let pooled: Tensor<3> = h.reshape([n as i64, c as i64, -1]);
        self.head.forward(pooled.mean_dim(2).reshape([n, c]))
    }
}

/// The probe's own options (`trainer train bn-probe --help`).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct ProbeOptions {
    /// How the initial weights are drawn (default: he).
    #[arg(long, value_enum)]
    pub init: Option<InitChoice>,
}

/// The probe as the engine trains it.
#[derive(Debug, Clone)]
pub struct ProbeModel {
    init: Init,
}

impl ProbeModel {
    /// The configuration `choice` names (only `small`) with `options`.
    pub fn new(choice: &ModelChoice, options: &ProbeOptions) -> Result<Self, TrainError> {
        if choice.config != "small" {
            return Err(TrainError::Model(format!(
                "unknown bn-probe configuration '{}' (known: small)",
                choice.config
            )));
        }
        let init = match options.init {
            None | Some(InitChoice::He) => Init::HeUniformLeaky { slope: 0.0 },
            Some(InitChoice::Glorot) => Init::GlorotUniform,
        };
        Ok(ProbeModel { init })
    }

    fn inputs(batch: &Batch, device: &Device) -> Tensor<5> {
        Tensor::from_data(TensorData::new(batch.x.clone(), [batch.len(), INPUT, INPUT, INPUT, CHANNELS]), device)
    }
}

impl TrainModel for ProbeModel {
    type Net = ProbeNet;

    fn summary(&self) -> ModelSummary {
        let details = serde_json::json!({ "input": INPUT, "channels": CHANNELS, "width": WIDTH, "outputs": OUTPUTS });
        ModelSummary { name: "bn-probe".into(), config: "small".into(), details }
    }

    fn training_flops(&self, batch: &Batch) -> Result<f64, TrainError> {
        // Two stride-2 convolutions (32³ → 16³ → 8³ outputs) and the head.
        let (half, quarter) = ((INPUT / 2).pow(3), (INPUT / 4).pow(3));
        let macs = crate::flops::conv(half, CHANNELS, WIDTH, 27)
            + crate::flops::conv(quarter, WIDTH, WIDTH, 27)
            + crate::flops::dense(WIDTH, OUTPUTS);
        Ok(batch.len() as f64 * crate::flops::training_flops(macs))
    }

    fn build(&self, device: &Device) -> Result<ProbeNet, TrainError> {
        let conv = |from, to| {
            Conv3dConfig::new([from, to], [3, 3, 3])
                .with_stride([2; 3])
                .with_padding(PaddingConfig3d::Explicit(1, 1, 1))
                .init(device)
        };
        Ok(ProbeNet {
            conv1: conv(CHANNELS, WIDTH),
            norm1: BatchNormConfig::new(WIDTH).init(device),
            conv2: conv(WIDTH, WIDTH),
            norm2: BatchNormConfig::new(WIDTH).init(device),
            head: LinearConfig::new(WIDTH, OUTPUTS).init(device),
        })
    }

    fn weight_init(&self) -> Init {
        self.init
    }

    fn check_data(&self, dir: &Path, manifest: &Manifest) -> Result<(), TrainError> {
        cosmoflow::check_data(dir, manifest, (INPUT, CHANNELS), "bn-probe")
    }

    fn synthetic_data(&self, samples: usize) -> Result<Option<Arc<dyn Dataset>>, TrainError> {
        let target = loader::synthetic::Target::Values { low: -1.0, high: 1.0 };
        Ok(Some(Arc::new(loader::synthetic::SyntheticDataset::new(samples, INPUT.pow(3) * CHANNELS, OUTPUTS, target))))
    }

    fn open_dataset(
        &self,
        dir: &Path,
        manifest: &Manifest,
        files: Option<&[usize]>,
    ) -> Result<Arc<dyn Dataset>, DatasetError> {
        cosmoflow::open_dataset(dir, manifest, files)
    }

    fn loss_with_cuts(
        &self,
        net: &ProbeNet,
        batch: &Batch,
        _: &StepContext,
        device: &Device,
        cuts: &mut Cuts,
    ) -> Result<Tensor<1>, TrainError> {
        let y = Tensor::<2>::from_data(TensorData::new(batch.y.clone(), [batch.len(), OUTPUTS]), device);
        Ok(mse(net.forward_cut(Self::inputs(batch, device), cuts), y))
    }

    fn metric_names(&self) -> &'static [&'static str] {
        &["mae", "baseline_mae", "relative_mae"]
    }

    fn validate(
        &self,
        world: &World,
        net: &ProbeNet,
        batches: &mut dyn Iterator<Item = Result<Batch, DatasetError>>,
        device: &Device,
    ) -> Result<Validation, TrainError> {
        cosmoflow::eval::validate(world, OUTPUTS, batches, |batch| net.forward(Self::inputs(batch, device)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::module::Module as _;

    use super::*;
    use crate::params::{self, Role};

    #[test]
    fn batchnorm_tensors_are_told_apart_and_start_at_their_published_values() {
        let model = ProbeModel::new(&ModelChoice::config("small"), &ProbeOptions::default()).unwrap();
        let net = model.build(&Device::flex()).unwrap();
        let tensors = params::inventory(&net).unwrap();
        let roles: Vec<Role> = tensors.iter().map(|t| t.role).collect();
        let norm = [Role::Gamma, Role::Beta, Role::RunningMean, Role::RunningVar];
        let want: Vec<Role> = [Role::Weight, Role::Bias]
            .into_iter()
            .chain(norm)
            .chain([Role::Weight, Role::Bias])
            .chain(norm)
            .chain([Role::Weight, Role::Bias])
            .collect();
        assert_eq!(roles, want);
        assert_eq!(tensors[2].path, "norm1.gamma");
        let (values, state) = params::initial(&tensors, model.weight_init(), 1);
        // Trainable: conv1 w, b, gamma, beta, conv2 w, b, gamma, beta, head w, b.
        assert_eq!(values.len(), 10);
        assert!(values[2].iter().all(|&g| g == 1.0) && values[3].iter().all(|&b| b == 0.0));
        assert!(values[1].iter().all(|&b| b == 0.0) && values[0].iter().any(|&w| w != 0.0));
        assert_eq!(state, vec![vec![0.0; WIDTH], vec![1.0; WIDTH], vec![0.0; WIDTH], vec![1.0; WIDTH]]);
        let net = params::with_state(params::with_values(net, &values, &Device::flex()), &state, &Device::flex());
        assert_eq!(params::values(&net), values);
        assert_eq!(params::state_values(&net), state);
    }

    /// Training normalises with the batch's statistics and moves the running
    /// ones; inference normalises with the running ones, so writing other
    /// running statistics changes what validation sees.
    #[test]
    fn the_forward_pass_updates_the_state_and_inference_uses_it() {
        let model = ProbeModel::new(&ModelChoice::config("small"), &ProbeOptions::default()).unwrap();
        let device = Device::flex().autodiff();
        let net = model.build(&device).unwrap();
        let tensors = params::inventory(&net).unwrap();
        let (values, state) = params::initial(&tensors, model.weight_init(), 3);
        let net = params::with_state(params::with_values(net, &values, &device), &state, &device);
        let n = INPUT * INPUT * INPUT * CHANNELS;
        let x: Vec<f32> = (0..2 * n).map(|i| ((i * 7919) % 1009) as f32 / 500.0).collect();
        let x = Tensor::<5>::from_data(TensorData::new(x, [2, INPUT, INPUT, INPUT, CHANNELS]), &device);
        let _ = net.forward(x.clone());
        let moved = params::state_values(&net);
        assert_ne!(moved, state, "a training forward pass left the running statistics as they were");
        assert_eq!(params::values(&net), values, "the forward pass changed trainable parameters");

        let predict = |net: &ProbeNet| -> Vec<f32> {
            net.valid().forward(x.clone()).into_data().try_into_vec_as::<f32>().unwrap()
        };
        let before = predict(&net);
        let other: Vec<Vec<f32>> = moved.iter().map(|t| t.iter().map(|v| v * 2.0 + 0.5).collect()).collect();
        let net = params::with_state(net, &other, &device);
        assert_eq!(params::state_values(&net), other);
        assert_ne!(predict(&net), before, "inference ignored the running statistics");
    }
}
