//! The HEP-CNN network, as NERSC's HEP-CNN benchmark builds it
//! (`hep_cnn_benchmark`, `scripts/networks/binary_classifier_tf.py`,
//! `build_cnn_model`, with `configs/cori_knl_224_adam.json`): the network
//! of Kurth et al. 2018 §V ("5 convolution+pooling units and one fully
//! connected layer", 2.3 MB of parameters).
//!
//! - `num_layers` = 4 units of a 3×3 convolution with "same" padding and a
//!   bias (`num_filters` = 128), ReLU, 2×2 max pooling with stride 2, and
//!   dropout;
//! - with `scaling_improvements` (the configuration the paper scaled), a
//!   fifth 3×3 convolution of 128 filters with bias and ReLU, then an
//!   average pool over the whole remaining image;
//! - one fully connected layer to 2 logits; softmax cross-entropy.
//!
//! That is 594,178 parameters, 2.38 MB (2.27 MiB) in float32: the paper's
//! 2.3 MB.

use crate::kernels::relu;
use burn::module::Module;
use burn::nn::conv::Conv2d;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use crate::kernels;
use crate::models::segmentation::layers::{Apply, Pass, conv};

/// The network's sizes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HepCnnConfig {
    /// `--config` name.
    pub name: String,
    /// Input channels (ECAL, HCAL, tracks).
    pub channels: usize,
    /// Image height and width.
    pub input: [usize; 2],
    /// Filters of every convolution.
    pub filters: usize,
    /// Convolution + pooling units before the last convolution.
    pub units: usize,
    /// Dropout after each pooling.
    pub dropout: f32,
}

impl HepCnnConfig {
    /// Build the network on `device`.
    pub fn init(&self, device: &Device) -> HepCnn {
        let mut convs = Vec::with_capacity(self.units + 1);
        let mut from = self.channels;
        for _ in 0..=self.units {
            convs.push(conv([from, self.filters], 3, (1, 1), true, device));
            from = self.filters;
        }
        HepCnn { convs, head: LinearConfig::new(self.filters, 2).init(device), dropout: self.dropout }
    }

    /// The image side after the units' poolings: TensorFlow's "same"
    /// pooling rounds up.
    pub fn last_side(&self, side: usize) -> usize {
        (0..self.units).fold(side, |s, _| s.div_ceil(2))
    }
}

/// The network.
#[derive(Module, Debug)]
pub struct HepCnn {
    convs: Vec<Conv2d>,
    head: Linear,
    dropout: f32,
}

impl HepCnn {
    /// Logits [N, 2] (background, signal) of images [N, C, H, W]; the
    /// forward pass is cut after every unit for the overlap of back
    /// propagation and gradient exchange.
    pub fn forward(&self, x: Tensor<4>, pass: &mut Pass) -> Tensor<2> {
        let units = self.convs.len() - 1;
        let mut h = x;
        for conv in &self.convs[..units] {
            h = Self::pool_same(relu(conv.apply(h)));
            h = pass.dropout(h, self.dropout);
            h = pass.cut(h);
        }
        let h = relu(self.convs[units].apply(h));
        let [n, c, ..] = h.dims();
        let pooled: Tensor<3> = h.reshape([n as i64, c as i64, -1]);
        kernels::linear(&self.head, pooled.mean_dim(2).reshape([n, c]))
    }

    /// 2×2 max pooling with stride 2 ([`crate::kernels::max_pool2d_2`]);
    /// an odd side is padded at the end first, as TensorFlow's "same"
    /// pooling does (the padding never wins the maximum: after ReLU every
    /// value is ≥ 0, and the padding is 0).
    fn pool_same(x: Tensor<4>) -> Tensor<4> {
        let [n, c, h, w] = x.dims();
        let x = if h % 2 == 1 || w % 2 == 1 {
            let padded = Tensor::<4>::zeros([n, c, h + h % 2, w + w % 2], &x.device());
            padded.slice_assign([0..n, 0..c, 0..h, 0..w], x)
        } else {
            x
        };
        crate::kernels::max_pool2d_2(x)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::models::hepcnn::{paper, small};

    fn parameters(config: &HepCnnConfig) -> usize {
        let net = config.init(&Device::flex());
        net.num_params()
    }

    #[test]
    fn the_paper_network_has_the_benchmarks_594178_parameters_about_2_3_mb() {
        let count = parameters(&paper());
        assert_eq!(count, 3 * 9 * 128 + 128 + 4 * (128 * 9 * 128 + 128) + 128 * 2 + 2);
        assert_eq!(count, 594_178);
        let megabytes = (count * 4) as f64 / 1e6;
        assert!((megabytes - 2.3).abs() < 0.1, "{megabytes} MB");
    }

    #[test]
    fn images_of_any_side_map_to_two_logits() {
        let config = small();
        let net = config.init(&Device::flex());
        for side in [64, 37] {
            let x = Tensor::<4>::ones([2, 3, side, side], &Device::flex());
            assert_eq!(net.forward(x, &mut Pass::inference()).dims(), [2, 2], "side {side}");
        }
        assert_eq!(paper().last_side(224), 14);
        assert_eq!(config.last_side(37), 3);
    }
}
