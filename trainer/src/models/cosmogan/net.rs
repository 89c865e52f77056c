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
//! the graph, so its gradients reach the generator only, and its running
//! statistics are not moved a second time: one backward pass of d_loss +
//! g_loss then gives each network the gradient of its own loss, as the
//! reference's two optimisers take them. That pass and the trained one on
//! the same generated maps compute the same values, so they run as one
//! forward pass over a twin batch ([`Discriminator::forward_twin`],
//! [`kernels::twin`]).

use crate::kernels::leaky_relu;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, ConvTranspose2d, ConvTranspose2dConfig};
use burn::nn::{BatchNorm, Linear, LinearConfig};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Tensor};

use crate::kernels;
use crate::models::segmentation::layers::{Apply, Pass, conv, norm};

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

    /// The logits of generated maps `fake` [N, 1, S, S] for both losses
    /// of a training step, from one forward pass over a twin batch
    /// ([`kernels::twin`]): first for the discriminator's loss (its
    /// parameters trained, no gradient to `fake`), then for the
    /// generator's (its parameters frozen, the gradient to `fake`).
    /// BatchNorm normalises each copy by its own statistics in the pass's
    /// groups and moves the running statistics once.
    pub fn forward_twin(&self, fake: Tensor<4>, pass: &Pass) -> (Tensor<2>, Tensor<2>) {
        let [n, c, h, w] = fake.dims();
        let mut x: Tensor<4> = Tensor::stack::<5>(vec![fake.clone().detach(), fake], 1).reshape([2 * n, c, h, w]);
        for (layer, down) in self.down.iter().enumerate() {
            let options = ConvOptions::new_with_padding(down.stride, [(PAD, PAD); 2], down.dilation, down.groups);
            x = kernels::conv2d_twin(x, down.weight.val(), down.bias.as_ref().map(|b| b.val()), options);
            if layer > 0 {
                x = pass.norm_twin(&self.norms[layer - 1], x);
            }
            x = leaky_relu(x, LEAK);
        }
        let pairs: Tensor<3> = x.reshape([n as i64, 2, -1]);
        let features = pairs.dims()[2];
        let copy = |h: usize| pairs.clone().narrow(1, h, 1).reshape([n, features]);
        let trained = kernels::linear(&self.dense, copy(0));
        let logits = copy(1).matmul(self.dense.weight.val().detach());
        let frozen = match &self.dense.bias {
            Some(bias) => logits + frozen(bias).unsqueeze(),
            None => logits,
        };
        (trained, frozen)
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

    use burn::tensor::TensorData;

    use crate::models::segmentation::layers::normalise_in_groups;

    /// The discriminator in training on parameters cut from the graph,
    /// the second of the two passes [`Discriminator::forward_twin`]
    /// replaces: gradients flow to `x` only, BatchNorm normalises each
    /// group of `norm_group` samples and leaves the running statistics
    /// alone.
    fn forward_frozen(d: &Discriminator, x: Tensor<4>, norm_group: usize) -> Tensor<2> {
        let mut h = x;
        for (layer, down) in d.down.iter().enumerate() {
            let options = ConvOptions::new_with_padding(down.stride, [(PAD, PAD); 2], down.dilation, down.groups);
            h = kernels::conv2d(h, down.weight.val().detach(), down.bias.as_ref().map(frozen), options);
            if layer > 0 {
                let bn = &d.norms[layer - 1];
                h = normalise_in_groups(h, (frozen(&bn.gamma), frozen(&bn.beta)), bn.epsilon, norm_group).0;
            }
            h = leaky_relu(h, LEAK);
        }
        let n = h.dims()[0];
        let flat: Tensor<2> = h.reshape([n as i64, -1]);
        let logits = flat.matmul(d.dense.weight.val().detach());
        match &d.dense.bias {
            Some(bias) => logits + frozen(bias).unsqueeze(),
            None => logits,
        }
    }

    fn to_vec<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    /// One forward pass over a twin batch gives the logits, and after
    /// one backward pass the discriminator's and the maps' gradients, of
    /// the two passes it replaces (the discriminator trained on maps cut
    /// from the generator, then frozen on the maps themselves), in one
    /// BatchNorm group and in two.
    #[test]
    fn the_twin_pass_gives_what_the_trained_and_the_frozen_passes_gave() {
        let device = Device::flex().autodiff();
        let config = small();
        for (n, norm_group) in [(2, 0), (4, 2)] {
            let side = config.side;
            let values: Vec<f32> = (0..n * side * side).map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * 0.9).collect();
            let make = || Tensor::<4>::from_data(TensorData::new(values.clone(), [n, 1, side, side]), &device);
            let shared = config.init(&device);
            let run = |twin: bool| {
                // The same parameters; the running statistics are shared
                // by the clones, so each run's move is read as the
                // difference it makes.
                let net = shared.clone();
                let running =
                    |bn: &BatchNorm| (to_vec(bn.running_mean.value_sync()), to_vec(bn.running_var.value_sync()));
                let before: Vec<_> = net.discriminator.norms.iter().map(running).collect();
                let fake = make().require_grad();
                let pass = Pass { norm_group, ..Pass::inference() };
                let (trained, frozen) = if twin {
                    net.discriminator.forward_twin(fake.clone(), &pass)
                } else {
                    let trained = net.discriminator.forward(fake.clone().detach(), &pass);
                    (trained, forward_frozen(&net.discriminator, fake.clone(), norm_group))
                };
                let weights = Tensor::<2>::from_data(TensorData::new(vec![0.7f32; n], [n, 1]), &device);
                let loss = (trained.clone() * weights.clone()).sum() - (frozen.clone() * weights).sum().mul_scalar(0.3);
                let grads = loss.backward();
                let mut out = vec![to_vec(trained), to_vec(frozen), to_vec(fake.grad(&grads).unwrap())];
                for down in &net.discriminator.down {
                    out.push(to_vec(down.weight.val().grad(&grads).unwrap()));
                    out.push(to_vec(down.bias.as_ref().unwrap().val().grad(&grads).unwrap()));
                }
                for (bn, (mean, var)) in net.discriminator.norms.iter().zip(&before) {
                    out.push(to_vec(bn.gamma.val().grad(&grads).unwrap()));
                    out.push(to_vec(bn.beta.val().grad(&grads).unwrap()));
                    let (mean_now, var_now) = running(bn);
                    let moved = |now: &[f32], then: &[f32]| -> Vec<f32> {
                        now.iter().zip(then).map(|(a, b)| a - b * (1.0 - bn.momentum as f32)).collect()
                    };
                    out.push(moved(&mean_now, mean));
                    out.push(moved(&var_now, var));
                }
                out.push(to_vec(net.discriminator.dense.weight.val().grad(&grads).unwrap()));
                out
            };
            let (twin, separate) = (run(true), run(false));
            assert_eq!(twin.len(), separate.len());
            for (what, (a, b)) in twin.iter().zip(&separate).enumerate() {
                assert_eq!(a.len(), b.len(), "tensor {what} of batch {n}");
                // A bias before BatchNorm has no gradient but rounding's,
                // summed over the batch's positions in another order by
                // each pass (1.07e-6 seen in a CI run): the floor keeps
                // that noise from counting.
                let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-1);
                let worst = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
                assert!(worst <= 1e-4 * scale, "tensor {what} of batch {n}: differs by {worst} (scale {scale})");
            }
        }
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
    }
}
