//! The CosmoGAN networks, as Mustafa et al. build them
//! (`MustafaMustafa/cosmoGAN`, `networks/models/dcgan.py` with the
//! settings of `networks/run_dcgan.py`), a DCGAN (Radford et al. 2016):
//!
//! - generator: the noise z (64 values) through a dense layer to
//!   8·gf channels of side/16 squared, BatchNorm, ReLU; three 5×5
//!   transposed convolutions of stride 2 halving the channels (BatchNorm,
//!   ReLU after each); a last 5×5 transposed convolution of stride 2 to
//!   one channel and tanh;
//! - discriminator: a 5×5 convolution of stride 2 to df channels and
//!   LeakyReLU 0.2; three more doubling the channels, each with BatchNorm
//!   and LeakyReLU 0.2; a dense layer of the flattened maps to one logit.
//!
//! Every convolution and dense layer has a bias, as in `ops.py`
//! (`conv2d`, `conv2d_transpose`, `linear`). With gf = df = 64 on 256² maps
//! that is 17,260,674 parameters, the "about 17 M" of Kurth et al. 2018 §V.
//!
//! Convolutions pad 2 on each side (transposed: padding 2 and one extra
//! output row and column): TensorFlow's "SAME" puts the extra row of an
//! even input on the other side; the two are the same family of functions
//! shifted by one pixel.
//!
//! For the generator's loss the discriminator runs on parameters cut from
//! the graph ([`Discriminator::forward_frozen`]), so its gradients reach
//! the generator only, and its running statistics are not moved a second
//! time: one backward pass of d_loss + g_loss then gives each network the
//! gradient of its own loss, as the reference's two optimisers take them.

use crate::kernels::leaky_relu;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, ConvTranspose2d, ConvTranspose2dConfig};
use burn::nn::{BatchNorm, Linear, LinearConfig};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Tensor};

use crate::kernels;
use crate::models::segmentation::layers::{Apply, Pass, conv, norm, normalise_in_groups};

/// LeakyReLU's slope in the discriminator (`ops.py`, `lrelu`, alpha 0.2).
const LEAK: f32 = 0.2;
/// The convolutions' kernel side (`ops.py`: kernel=5).
const KERNEL: usize = 5;
/// Padding on each side of the 5×5 convolutions: "same" at stride 1,
/// halving at stride 2.
const PAD: usize = 2;

/// The networks' sizes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CosmoGanConfig {
    /// `--config` name.
    pub name: String,
    /// Map side (a multiple of 2^layers).
    pub side: usize,
    /// Noise values per map (`z_dim`).
    pub noise: usize,
    /// Channels of the generator's last hidden layer (`gf_dim`).
    pub generator_filters: usize,
    /// Channels of the discriminator's first layer (`df_dim`).
    pub discriminator_filters: usize,
    /// Convolution layers of each network (`nd_layers`, `ng_layers`).
    pub layers: usize,
    /// Probability that a step swaps the discriminator's real and fake
    /// labels (`flip_labels`).
    pub flip_labels: f64,
}

impl CosmoGanConfig {
    /// The side of the generator's first and the discriminator's last maps.
    pub fn base_side(&self) -> usize {
        self.side >> self.layers
    }

    /// The generator's first channels (and the discriminator's last).
    pub fn base_channels(&self) -> usize {
        self.generator_filters << (self.layers - 1)
    }

    /// Build both networks on `device`.
    pub fn init(&self, device: &Device) -> CosmoGan {
        let base = self.base_side();
        let top = self.base_channels();
        let mut up = Vec::with_capacity(self.layers);
        let mut up_norms = vec![norm(top, device)];
        let mut channels = top;
        for layer in 0..self.layers {
            let to = if layer + 1 == self.layers { 1 } else { channels / 2 };
            up.push(
                ConvTranspose2dConfig::new([channels, to], [KERNEL, KERNEL])
                    .with_stride([2, 2])
                    .with_padding([PAD, PAD])
                    .with_padding_out([1, 1])
                    .init(device),
            );
            if layer + 1 < self.layers {
                up_norms.push(norm(to, device));
            }
            channels = to;
        }
        let generator = Generator {
            dense: LinearConfig::new(self.noise, top * base * base).init(device),
            up,
            norms: up_norms,
            base: [top, base],
        };
        let mut down = Vec::with_capacity(self.layers);
        let mut down_norms = Vec::with_capacity(self.layers - 1);
        let mut from = 1;
        for layer in 0..self.layers {
            let to = self.discriminator_filters << layer;
            down.push(conv([from, to], KERNEL, (2, 1), true, device));
            if layer > 0 {
                down_norms.push(norm(to, device));
            }
            from = to;
        }
        let flat = from * base * base;
        let discriminator = Discriminator { down, norms: down_norms, dense: LinearConfig::new(flat, 1).init(device) };
        CosmoGan { generator, discriminator }
    }
}

/// The generator.
#[derive(Module, Debug)]
pub struct Generator {
    dense: Linear,
    up: Vec<ConvTranspose2d>,
    /// After the dense layer and every transposed convolution but the last.
    norms: Vec<BatchNorm>,
    /// Channels and side of the dense layer's maps.
    base: [usize; 2],
}

impl Generator {
    /// Maps [N, 1, S, S] in (−1, 1) from noise [N, z].
    pub fn forward(&self, z: Tensor<2>, pass: &Pass) -> Tensor<4> {
        let n = z.dims()[0];
        let [channels, side] = self.base;
        let h: Tensor<4> = kernels::linear(&self.dense, z).reshape([n, channels, side, side]);
        let mut h = pass.norm_relu(&self.norms[0], h);
        let last = self.up.len() - 1;
        for (layer, up) in self.up.iter().enumerate() {
            h = up.apply(h);
            if layer < last {
                h = pass.norm_relu(&self.norms[layer + 1], h);
            }
        }
        h.tanh()
    }
}

/// The discriminator.
#[derive(Module, Debug)]
pub struct Discriminator {
    down: Vec<Conv2d>,
    /// After every convolution but the first.
    norms: Vec<BatchNorm>,
    dense: Linear,
}

impl Discriminator {
    /// Logits [N, 1] that maps [N, 1, S, S] are real.
    pub fn forward(&self, x: Tensor<4>, pass: &Pass) -> Tensor<2> {
        let mut h = x;
        for (layer, down) in self.down.iter().enumerate() {
            h = down.apply(h);
            if layer > 0 {
                h = pass.norm(&self.norms[layer - 1], h);
            }
            h = leaky_relu(h, LEAK);
        }
        let n = h.dims()[0];
        kernels::linear(&self.dense, h.reshape([n as i64, -1]))
    }

    /// [`forward`](Self::forward) in training on parameters cut from the
    /// graph: gradients flow to `x` only, BatchNorm normalises each group
    /// of `norm_group` samples by its own statistics and leaves the
    /// running statistics alone.
    pub fn forward_frozen(&self, x: Tensor<4>, norm_group: usize) -> Tensor<2> {
        let mut h = x;
        for (layer, down) in self.down.iter().enumerate() {
            let options = ConvOptions::new_with_padding(down.stride, [(PAD, PAD); 2], down.dilation, down.groups);
            h = kernels::conv2d(h, down.weight.val().detach(), down.bias.as_ref().map(frozen), options);
            if layer > 0 {
                let bn = &self.norms[layer - 1];
                h = normalise_in_groups(h, (frozen(&bn.gamma), frozen(&bn.beta)), bn.epsilon, norm_group).0;
            }
            h = leaky_relu(h, LEAK);
        }
        let n = h.dims()[0];
        let flat: Tensor<2> = h.reshape([n as i64, -1]);
        let logits = flat.matmul(self.dense.weight.val().detach());
        match &self.dense.bias {
            Some(bias) => logits + frozen(bias).unsqueeze(),
            None => logits,
        }
    }
}

/// A parameter's value cut from the graph.
fn frozen(p: &Param<Tensor<1>>) -> Tensor<1> {
    p.val().detach()
}

/// Both networks, as one module so the engine keeps, exchanges and
/// checkpoints them together.
#[derive(Module, Debug)]
pub struct CosmoGan {
    /// The generator.
    pub generator: Generator,
    /// The discriminator.
    pub discriminator: Discriminator,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::models::cosmogan::{paper, small};

    #[test]
    fn the_paper_networks_have_17_3_million_parameters() {
        let net = paper().init(&Device::flex());
        let trainable = |m: &dyn Fn() -> Vec<crate::params::TensorInfo>| -> usize {
            m().iter().filter(|t| t.role.trainable()).map(|t| t.len()).sum()
        };
        let g = trainable(&|| crate::params::inventory(&net.generator).unwrap());
        let d = trainable(&|| crate::params::inventory(&net.discriminator).unwrap());
        // Dense 64 → 512·16·16 with bias, BatchNorm 512, transposed
        // convolutions 512→256→128→64→1 (5×5, bias), BatchNorm after all
        // but the last.
        let generator = 64 * 131_072
            + 131_072
            + 2 * 512
            + (512 * 256 * 25 + 256)
            + 2 * 256
            + (256 * 128 * 25 + 128)
            + 2 * 128
            + (128 * 64 * 25 + 64)
            + 2 * 64
            + (64 * 25 + 1);
        // Convolutions 1→64→128→256→512 (5×5, bias), BatchNorm after all
        // but the first, dense 512·16·16 → 1 with bias.
        let discriminator = (25 * 64 + 64)
            + (64 * 128 * 25 + 128)
            + 2 * 128
            + (128 * 256 * 25 + 256)
            + 2 * 256
            + (256 * 512 * 25 + 512)
            + 2 * 512
            + (131_072 + 1);
        assert_eq!((g, d), (generator, discriminator));
        assert_eq!(g + d, 17_260_674);
    }

    #[test]
    fn maps_come_out_of_the_side_asked_for_and_score_one_logit_each() {
        let config = small();
        let net = config.init(&Device::flex());
        let z = Tensor::<2>::zeros([2, config.noise], &Device::flex());
        let maps = net.generator.forward(z, &Pass::inference());
        assert_eq!(maps.dims(), [2, 1, config.side, config.side]);
        let logits = net.discriminator.forward(maps.clone(), &Pass::inference());
        assert_eq!(logits.dims(), [2, 1]);
        let frozen = net.discriminator.forward_frozen(maps, 0);
        assert_eq!(frozen.dims(), [2, 1]);
    }
}
