//! CosmoFlow: a 3-D CNN that regresses the cosmological parameters of a
//! dark-matter volume. Two published configurations and a reduced size of
//! each for tests:
//!
//! - **MLPerf HPC** (mlcommons/hpc `cosmoflow/models/cosmoflow.py`): 5 ×
//!   [Conv3d 3³ same, 32·2^i filters, LeakyReLU 0.3, MaxPool 2], flatten,
//!   Dense 128 and 64 with LeakyReLU and dropout 0.5, Dense 4, tanh × 1.2;
//!   MSE loss.
//! - **SC18** (Mathuriya et al. 2018; layer table as in LBANN's CosmoFlow
//!   application): 7 convolutions 3³ (16, 32, 64, 128 with stride 2, 256,
//!   256, 256), LeakyReLU, average pooling after the first five, no batch
//!   norm, Dense 2048 and 256 with dropout, a linear output. LBANN pools
//!   with overlapping 3³ windows (stride 2, padding 1); we pool 2³ windows
//!   (see [`pool3d`](crate::kernels::pool3d)), which halves the size the same way.

use crate::kernels::leaky_relu;
use burn::module::Module;
use burn::nn::conv::{Conv3d, Conv3dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig3d};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::engine::Cuts;
use crate::flops;
pub use crate::kernels::Pooling;
use crate::kernels::{self, conv3d_in_precision, conv3d_same, pool3d};
pub use crate::models::dropout::DropoutMasks;

/// Negative slope of every LeakyReLU (Keras `LeakyReLU(alpha=0.3)`).
pub const LEAKY_SLOPE: f32 = 0.3;

/// One convolution layer: filters, stride, and whether a pool follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvLayer {
    /// Output channels.
    pub filters: usize,
    /// Stride (1 or 2), same padding.
    pub stride: usize,
    /// A 2³ pool after the activation.
    pub pool: bool,
}

/// The shape of a CosmoFlow network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CosmoflowConfig {
    /// Name of the configuration (for reports and checkpoints).
    pub name: String,
    /// Cube edge of the input, in voxels.
    pub input: usize,
    /// Input channels (redshifts).
    pub channels: usize,
    /// Convolution kernel edge.
    pub kernel: usize,
    /// The convolutions, in order.
    pub convs: Vec<ConvLayer>,
    /// Pooling kind.
    pub pooling: Pooling,
    /// Hidden dense layer widths.
    pub dense: Vec<usize>,
    /// Dropout probability after each hidden dense layer (0 = none).
    pub dropout: f32,
    /// Outputs (the 4 unit parameters).
    pub outputs: usize,
    /// `Some(s)`: the output is `s · tanh(z)` (MLPerf: 1.2); `None`: linear.
    pub output_scale: Option<f32>,
}

/// Why a configuration cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// No configuration of that name.
    #[error("unknown CosmoFlow configuration '{0}' (known: mlperf, mlperf-small, sc18, sc18-small)")]
    UnknownName(String),
    /// A pool or stride meets an odd or vanished size.
    #[error("input {input}³ cannot be halved at layer {layer}: size {size} there")]
    Size {
        /// Input edge.
        input: usize,
        /// Layer index.
        layer: usize,
        /// Edge at that layer.
        size: usize,
    },
}

impl CosmoflowConfig {
    /// The MLPerf HPC model for inputs of `input`³ × 4 (128 in the benchmark).
    pub fn mlperf(input: usize) -> Self {
        let convs = (0..5).map(|i| ConvLayer { filters: 32 << i, stride: 1, pool: true }).collect();
        CosmoflowConfig {
            name: "mlperf".into(),
            input,
            channels: 4,
            kernel: 3,
            convs,
            pooling: Pooling::Max,
            dense: vec![128, 64],
            dropout: 0.5,
            outputs: 4,
            output_scale: Some(1.2),
        }
    }

    /// The MLPerf layout at 32³ with a quarter of the filters, for tests
    /// and CPU runs.
    pub fn mlperf_small() -> Self {
        let convs = (0..5).map(|i| ConvLayer { filters: 8 << i, stride: 1, pool: true }).collect();
        CosmoflowConfig { name: "mlperf-small".into(), input: 32, convs, ..Self::mlperf(32) }
    }

    /// The SC18 model for inputs of `input`³ × 4 (128 in the paper).
    pub fn sc18(input: usize) -> Self {
        let layer = |filters, stride, pool| ConvLayer { filters, stride, pool };
        CosmoflowConfig {
            name: "sc18".into(),
            input,
            channels: 4,
            kernel: 3,
            convs: vec![
                layer(16, 1, true),
                layer(32, 1, true),
                layer(64, 1, true),
                layer(128, 2, true),
                layer(256, 1, true),
                layer(256, 1, false),
                layer(256, 1, false),
            ],
            pooling: Pooling::Avg,
            dense: vec![2048, 256],
            dropout: 0.2,
            outputs: 4,
            output_scale: None,
        }
    }

    /// The SC18 layout at 32³ (pools after the first three convolutions
    /// only) with a quarter of the filters and dense widths.
    pub fn sc18_small() -> Self {
        let mut config = Self::sc18(32);
        config.name = "sc18-small".into();
        for (i, conv) in config.convs.iter_mut().enumerate() {
            conv.filters /= 4;
            conv.pool = i < 3;
        }
        config.dense = vec![512, 64];
        config
    }

    /// A configuration by name: `mlperf`, `mlperf-small`, `sc18`, `sc18-small`.
    pub fn by_name(name: &str) -> Result<Self, ConfigError> {
        match name {
            "mlperf" => Ok(Self::mlperf(128)),
            "mlperf-small" => Ok(Self::mlperf_small()),
            "sc18" => Ok(Self::sc18(128)),
            "sc18-small" => Ok(Self::sc18_small()),
            other => Err(ConfigError::UnknownName(other.into())),
        }
    }

    /// The spatial edge after the convolutions, checking every halving.
    pub fn final_size(&self) -> Result<usize, ConfigError> {
        let mut size = self.input;
        for (layer, conv) in self.convs.iter().enumerate() {
            for halve in [conv.stride == 2, conv.pool] {
                if halve {
                    if size < 2 || !size.is_multiple_of(2) {
                        return Err(ConfigError::Size { input: self.input, layer, size });
                    }
                    size /= 2;
                }
            }
        }
        Ok(size)
    }

    /// Forward multiply-adds of one sample ([`crate::flops`]): the
    /// convolutions at the size each produces (same padding: the input's
    /// edge, halved by a stride of 2) and the dense layers.
    pub fn forward_macs(&self) -> Result<f64, ConfigError> {
        let taps = self.kernel.pow(3);
        let (mut size, mut channels, mut total) = (self.input, self.channels, 0.0);
        for layer in &self.convs {
            size /= layer.stride;
            total += flops::conv(size.pow(3), channels, layer.filters, taps);
            if layer.pool {
                size /= 2;
            }
            channels = layer.filters;
        }
        let mut width = channels * self.final_size()?.pow(3);
        for &out in self.dense.iter().chain(std::iter::once(&self.outputs)) {
            total += flops::dense(width, out);
            width = out;
        }
        Ok(total)
    }

    /// Build the network on `device` (parameters from burn's initialiser;
    /// the trainer overwrites them with a seeded initialisation).
    pub fn init(&self, device: &Device) -> Result<Cosmoflow, ConfigError> {
        let size = self.final_size()?;
        let k = self.kernel;
        let mut convs = Vec::with_capacity(self.convs.len());
        let mut channels = self.channels;
        for layer in &self.convs {
            let conv = Conv3dConfig::new([channels, layer.filters], [k, k, k])
                .with_stride([layer.stride; 3])
                .with_padding(PaddingConfig3d::Explicit(k / 2, k / 2, k / 2))
                .init(device);
            convs.push(conv);
            channels = layer.filters;
        }
        let mut dense = Vec::with_capacity(self.dense.len() + 1);
        let mut width = channels * size * size * size;
        for &out in self.dense.iter().chain(std::iter::once(&self.outputs)) {
            dense.push(LinearConfig::new(width, out).init(device));
            width = out;
        }
        Ok(Cosmoflow { convs, dense, config: ModelShape(self.clone()) })
    }
}

/// The configuration carried inside the module (not a parameter).
#[derive(Debug, Clone)]
pub struct ModelShape(pub CosmoflowConfig);

impl burn::module::ModuleDisplay for ModelShape {}
impl burn::module::ModuleDisplayDefault for ModelShape {
    fn content(&self, content: burn::module::Content) -> Option<burn::module::Content> {
        Some(content)
    }
}

/// The network.
#[derive(Module, Debug)]
pub struct Cosmoflow {
    convs: Vec<Conv3d>,
    dense: Vec<Linear>,
    #[module(skip)]
    config: ModelShape,
}

impl Cosmoflow {
    /// The configuration it was built from.
    pub fn config(&self) -> &CosmoflowConfig {
        &self.config.0
    }

    /// Predictions [N, outputs] for a batch `x` of [N, D, D, D, C]
    /// (channels last, as CosmoFlow samples are stored). Dropout applies
    /// only when `masks` is given (training).
    pub fn forward(&self, x: Tensor<5>, masks: Option<&mut DropoutMasks>) -> Tensor<2> {
        self.forward_cut(x, masks, &mut Cuts::off())
    }

    /// [`forward`](Self::forward), cut after every convolution block and
    /// every hidden dense layer (`--reduce-during-backward`: each block's
    /// gradients are final as soon as back-propagation has passed it).
    pub fn forward_cut(&self, x: Tensor<5>, mut masks: Option<&mut DropoutMasks>, cuts: &mut Cuts) -> Tensor<2> {
        let config = &self.config.0;
        let mut h = x.permute([0, 4, 1, 2, 3]);
        for (conv, layer) in self.convs.iter().zip(&config.convs) {
            h = match layer.stride {
                1 => conv3d_same(h, conv.weight.val(), conv.bias.as_ref().map(|b| b.val())),
                _ => conv3d_in_precision(
                    h,
                    conv.weight.val(),
                    conv.bias.as_ref().map(|b| b.val()),
                    strided_options(conv),
                ),
            };
            h = match (layer.pool, config.pooling) {
                // LeakyReLU is increasing, so it commutes with taking a
                // maximum: applying it after the pool touches 8x fewer
                // values, forward and backward (same values and gradients).
                (true, Pooling::Max) => leaky_relu(pool3d(h, Pooling::Max), LEAKY_SLOPE),
                (true, Pooling::Avg) => pool3d(leaky_relu(h, LEAKY_SLOPE), Pooling::Avg),
                (false, _) => leaky_relu(h, LEAKY_SLOPE),
            };
            h = cuts.cut(h);
        }
        let [n, ..] = h.dims();
        let mut z: Tensor<2> = h.reshape([n as i64, -1]);
        let last = self.dense.len().saturating_sub(1);
        for (i, linear) in self.dense.iter().enumerate() {
            z = kernels::linear(linear, z);
            if i < last {
                z = leaky_relu(z, LEAKY_SLOPE);
                if let Some(masks) = masks.as_deref_mut()
                    && config.dropout > 0.0
                {
                    z = masks.apply(z, config.dropout);
                }
                z = cuts.cut(z);
            }
        }
        match config.output_scale {
            Some(scale) => z.tanh() * scale,
            None => z,
        }
    }
}

/// Mean squared error over every element (the reference models' loss).
pub fn mse(prediction: Tensor<2>, target: Tensor<2>) -> Tensor<1> {
    (prediction - target).powi_scalar(2).mean()
}

/// The options of a strided layer, built with explicit "same" padding
/// (`build`); burn works out other padding itself, privately.
fn strided_options(conv: &Conv3d) -> ConvOptions<3> {
    let padding = match conv.padding {
        PaddingConfig3d::Explicit(d, h, w) => [d, h, w],
        _ => conv.kernel_size.map(|k| k / 2),
    };
    ConvOptions::new(conv.stride, padding, conv.dilation, conv.groups)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::TensorData;

    use super::*;

    /// The cuts after every block (`--reduce-during-backward`) split the
    /// backward pass into segments that give every parameter, once, the
    /// gradient of one backward pass.
    #[test]
    fn cutting_after_every_block_gives_the_gradients_of_one_backward_pass() {
        let device = Device::flex().autodiff();
        let config = CosmoflowConfig::mlperf_small();
        let net = config.init(&device).unwrap();
        let d = config.input;
        let x = Tensor::<5>::random([2, d, d, d, 4], burn::tensor::Distribution::Normal(0.0, 1.0), &device);
        let loss = |cuts: &mut Cuts| {
            let y = net.forward_cut(x.clone(), None, cuts);
            (y.clone() * y).mean()
        };
        crate::engine::segments::assert_segments_match(&net, loss, config.convs.len() + config.dense.len() - 1);
    }

    #[test]
    fn published_sizes_reduce_to_the_expected_edge() {
        assert_eq!(CosmoflowConfig::mlperf(128).final_size(), Ok(4));
        assert_eq!(CosmoflowConfig::sc18(128).final_size(), Ok(2));
        assert_eq!(CosmoflowConfig::mlperf_small().final_size(), Ok(1));
        assert_eq!(CosmoflowConfig::sc18_small().final_size(), Ok(2));
        assert!(matches!(CosmoflowConfig::mlperf(48).final_size(), Err(ConfigError::Size { layer: 4, size: 3, .. })));
        assert!(CosmoflowConfig::by_name("resnet").is_err());
    }

    /// Mathuriya et al. (SC18) give 69.33 GFlop per training sample of
    /// their 128³ network; ours counts 55.6 (80 %): they pool with
    /// overlapping 3³ windows and count more than the convolutions and
    /// dense layers we count ([`crate::flops`]).
    #[test]
    fn the_sc18_network_costs_about_what_the_paper_counts() {
        let flops = flops::training_flops(CosmoflowConfig::sc18(128).forward_macs().unwrap());
        assert!((flops / 69.33e9 - 0.80).abs() < 0.02, "{flops:e}");
        // The first layer by hand: 128³ outputs × 27 taps × 4 × 16.
        let first = CosmoflowConfig {
            convs: vec![ConvLayer { filters: 16, stride: 1, pool: false }],
            dense: vec![],
            outputs: 1,
            ..CosmoflowConfig::sc18(4)
        };
        assert_eq!(first.forward_macs().unwrap(), 64.0 * 27.0 * 4.0 * 16.0 + 16.0 * 64.0);
    }

    #[test]
    fn leaky_relu_commutes_with_max_pooling_in_values_and_gradients() {
        let device = Device::flex().autodiff();
        let dims = [2, 3, 4, 4, 4];
        let n: usize = dims.iter().product();
        let values: Vec<f32> = (0..n).map(|i| ((i * 7919 % 1009) as f32 - 504.5) / 97.0).collect();
        let upstream: Vec<f32> = (0..n / 8).map(|i| (i % 5) as f32 - 2.0).collect();
        let run = |pool_first: bool| {
            let x = Tensor::<5>::from_data(TensorData::new(values.clone(), dims), &device).require_grad();
            let y = if pool_first {
                leaky_relu(pool3d(x.clone(), Pooling::Max), LEAKY_SLOPE)
            } else {
                pool3d(leaky_relu(x.clone(), LEAKY_SLOPE), Pooling::Max)
            };
            let up = Tensor::<5>::from_data(TensorData::new(upstream.clone(), y.dims()), &device);
            let grads = (y.clone() * up).sum().backward();
            let grad = x.grad(&grads).map(|g| g.into_data().try_into_vec_as::<f32>().unwrap());
            (y.into_data().try_into_vec_as::<f32>().unwrap(), grad.unwrap())
        };
        let (after, before) = (run(true), run(false));
        assert_eq!(after.0, before.0, "values");
        assert_eq!(after.1, before.1, "gradients");
        assert!(after.1.iter().any(|&g| g != 0.0));
    }

    #[test]
    fn both_reduced_models_map_a_batch_to_four_bounded_outputs() {
        let device = Device::flex();
        for config in [CosmoflowConfig::mlperf_small(), CosmoflowConfig::sc18_small()] {
            let model = config.init(&device).unwrap_or_else(|e| panic!("{e}"));
            let d = config.input;
            let x: Vec<f32> = (0..2 * d * d * d * 4).map(|i| ((i * 13) % 5) as f32).collect();
            let x = Tensor::<5>::from_data(TensorData::new(x, [2, d, d, d, 4]), &device);
            let mut masks = DropoutMasks::for_step(1, 0, 0);
            let y = model.forward(x, Some(&mut masks));
            assert_eq!(y.dims(), [2, 4], "{}", config.name);
            let values = y.into_data().try_into_vec_as::<f32>().unwrap();
            assert_eq!(values.len(), 8);
            assert!(values.iter().all(|v| v.is_finite()), "{}: {values:?}", config.name);
            if config.output_scale.is_some() {
                assert!(values.iter().all(|v| v.abs() <= 1.2), "{values:?}");
            }
        }
    }
}
