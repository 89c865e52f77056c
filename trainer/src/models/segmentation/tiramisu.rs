//! Tiramisu: the fully convolutional DenseNet (FC-DenseNet) of Jégou et
//! al., "The One Hundred Layers Tiramisu", CVPRW 2017, as Kurth et al.
//! (SC18, Sec. V-A) configured it for climate segmentation.
//!
//! Architecture (Jégou et al., Sec. 3 and Table 1):
//! - a first k×k convolution to 48 feature maps;
//! - down path: dense blocks, each followed by a transition down
//!   (BN, ReLU, 1×1 convolution keeping the channels, dropout, 2×2 max
//!   pool). A dense block's layers are BN, ReLU, k×k convolution to
//!   `growth` maps, dropout 0.2; each layer sees the concatenation of the
//!   block's input and every earlier layer's output, and the block passes
//!   on its input concatenated with all its layers' outputs;
//! - a bottleneck dense block;
//! - up path: a transition up (3×3 transposed convolution, stride 2) of
//!   only the maps the previous block created, concatenated with the skip
//!   connection of the same resolution, then a dense block;
//! - a 1×1 convolution to the classes (softmax in the loss).
//!
//! `blocks` lists the layers per dense block from the top down, the last
//! being the bottleneck (Jégou et al.'s Table 2 lists FC-DenseNet103 so:
//! 4, 5, 7, 10, 12 down, 15 at the bottom); the up path mirrors the down
//! path. Kurth et al. used 2, 2, 2, 4, 5 with growth 32 and 5×5
//! convolutions, "faster" than the original growth 16 and 3×3.
//!
//! The same network, with average pooling in the transitions down and
//! ReLU then dropout after every dense block ([`TiramisuConfig::pooling`],
//! [`TiramisuConfig::block_dropout`]), is the inverse-imaging FC-DenseNet
//! of Laanait et al. 2019 ([`crate::models::inverse`]).

use crate::kernels::relu;
use burn::module::Module;
use burn::nn::BatchNorm;
use burn::nn::conv::{Conv2d, ConvTranspose2d};
use burn::tensor::module::avg_pool2d;
use burn::tensor::ops::AvgPoolOptions;
use burn::tensor::{Device, Tensor};
use serde::Serialize;

use super::CLASSES;
use super::layers::{Apply, Pass, conv, norm, upsample2};

/// The shape of a Tiramisu.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TiramisuConfig {
    /// Configuration name.
    pub name: String,
    /// Input channels.
    pub channels: usize,
    /// Output classes.
    pub classes: usize,
    /// Feature maps of the first convolution.
    pub first: usize,
    /// Layers per dense block from the top down; the last is the bottleneck.
    pub blocks: Vec<usize>,
    /// Feature maps each dense layer adds.
    pub growth: usize,
    /// Convolution kernel edge of the first convolution and the dense layers.
    pub kernel: usize,
    /// Dropout probability after each convolution of the dense layers and
    /// transitions down.
    pub dropout: f32,
    /// Input height and width the configuration is meant for.
    pub input: [usize; 2],
    /// How each transition down halves the field.
    pub pooling: DownPool,
    /// ReLU then dropout with this probability on the output of every
    /// dense block (Laanait et al.; `None`: the output passes as it is).
    pub block_dropout: Option<f32>,
}

/// The pooling of a transition down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DownPool {
    /// 2×2 max pooling (Jégou et al.).
    Max,
    /// 2×2 average pooling (Laanait et al.).
    Avg,
}

impl TiramisuConfig {
    /// Kurth et al.'s Tiramisu for 768×1152×16 climate fields.
    pub fn paper() -> Self {
        TiramisuConfig {
            name: "paper".into(),
            channels: 16,
            classes: CLASSES,
            first: 48,
            blocks: vec![2, 2, 2, 4, 5],
            growth: 32,
            kernel: 5,
            dropout: 0.2,
            input: [768, 1152],
            pooling: DownPool::Max,
            block_dropout: None,
        }
    }

    /// The same blocks with the original FC-DenseNet's growth 16 and 3×3
    /// convolutions.
    pub fn growth16() -> Self {
        TiramisuConfig { name: "growth16".into(), growth: 16, kernel: 3, ..Self::paper() }
    }

    /// A reduced Tiramisu for tests and CPUs: two pools, growth 8, 3×3, on
    /// 32×48 fields.
    pub fn small() -> Self {
        TiramisuConfig {
            name: "small".into(),
            first: 16,
            blocks: vec![2, 2, 2],
            growth: 8,
            kernel: 3,
            input: [32, 48],
            ..Self::paper()
        }
    }

    /// A configuration by name.
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "paper" => Some(Self::paper()),
            "growth16" => Some(Self::growth16()),
            "small" => Some(Self::small()),
            _ => None,
        }
    }

    /// Transitions down (and up).
    pub fn pools(&self) -> usize {
        self.blocks.len().saturating_sub(1)
    }

    /// Height and width must halve evenly at every transition down.
    pub fn check_input(&self, [h, w]: [usize; 2]) -> Result<(), String> {
        let step = 1 << self.pools();
        if h == 0 || w == 0 || !h.is_multiple_of(step) || !w.is_multiple_of(step) {
            return Err(format!(
                "Tiramisu '{}' halves the field {} times, so height and width must be multiples of {step}; got {h}×{w}",
                self.name,
                self.pools()
            ));
        }
        Ok(())
    }

    /// Build the network on `device`.
    pub fn init(&self, device: &Device) -> Tiramisu {
        let k = self.kernel;
        let dense_block = |from: usize, layers: usize| DenseBlock {
            layers: (0..layers)
                .map(|i| DenseLayer {
                    norm: norm(from + i * self.growth, device),
                    conv: conv([from + i * self.growth, self.growth], k, (1, 1), true, device),
                })
                .collect(),
        };
        let first = conv([self.channels, self.first], k, (1, 1), true, device);
        let mut channels = self.first;
        let mut down = Vec::new();
        let mut skips = Vec::new();
        for &layers in &self.blocks[..self.pools()] {
            let block = dense_block(channels, layers);
            channels += layers * self.growth;
            skips.push(channels);
            let transition = TransitionDown {
                norm: norm(channels, device),
                conv: conv([channels, channels], 1, (1, 1), true, device),
                average: self.pooling == DownPool::Avg,
            };
            down.push((block, transition));
        }
        let bottom = self.blocks.last().copied().unwrap_or(0);
        let bottleneck = dense_block(channels, bottom);
        let mut added = bottom * self.growth;
        let mut up = Vec::new();
        for (&layers, &skip) in self.blocks[..self.pools()].iter().rev().zip(skips.iter().rev()) {
            let transition = upsample2(added, added, device);
            let block = dense_block(added + skip, layers);
            channels = added + skip + layers * self.growth;
            added = layers * self.growth;
            up.push((transition, block));
        }
        if self.pools() == 0 {
            channels += bottom * self.growth;
        }
        let (down_blocks, transitions_down) = down.into_iter().unzip();
        let (transitions_up, up_blocks) = up.into_iter().unzip();
        Tiramisu {
            first,
            down_blocks,
            transitions_down,
            bottleneck,
            transitions_up,
            up_blocks,
            last: conv([channels, self.classes], 1, (1, 1), true, device),
            dropout: self.dropout,
            block_dropout: self.block_dropout.unwrap_or(0.0),
            block_relu: self.block_dropout.is_some(),
        }
    }
}

/// One dense layer: BN, ReLU, convolution to `growth` maps, dropout.
#[derive(Module, Debug)]
pub struct DenseLayer {
    norm: BatchNorm,
    conv: Conv2d,
}

/// A dense block.
#[derive(Module, Debug)]
pub struct DenseBlock {
    layers: Vec<DenseLayer>,
}

impl DenseBlock {
    /// The block's input concatenated with every layer's output, and the
    /// layers' outputs alone (what a transition up takes); with `after`,
    /// both pass through ReLU and dropout of that probability first.
    fn forward(
        &self,
        x: Tensor<4>,
        pass: &mut Pass,
        dropout: f32,
        after: Option<f32>,
    ) -> (Tensor<4>, Option<Tensor<4>>) {
        let input_channels = x.dims()[1];
        let mut stack = x;
        for layer in &self.layers {
            let h = layer.conv.apply(pass.norm_relu(&layer.norm, stack.clone()));
            let h = pass.dropout(h, dropout);
            stack = Tensor::cat(vec![stack, h], 1);
        }
        if let Some(p) = after {
            stack = pass.dropout(relu(stack), p);
        }
        let created = stack.dims()[1] - input_channels;
        let new = (created > 0).then(|| stack.clone().narrow(1, input_channels, created));
        (stack, new)
    }
}

/// BN, ReLU, 1×1 convolution, dropout, 2×2 max (or average) pool.
#[derive(Module, Debug)]
pub struct TransitionDown {
    norm: BatchNorm,
    conv: Conv2d,
    average: bool,
}

impl TransitionDown {
    fn pool(&self, x: Tensor<4>) -> Tensor<4> {
        if self.average {
            avg_pool2d(x, AvgPoolOptions::new([2, 2]).with_stride([2, 2]))
        } else {
            crate::kernels::max_pool2d_2(x)
        }
    }
}

/// The network.
#[derive(Module, Debug)]
pub struct Tiramisu {
    first: Conv2d,
    down_blocks: Vec<DenseBlock>,
    transitions_down: Vec<TransitionDown>,
    bottleneck: DenseBlock,
    transitions_up: Vec<ConvTranspose2d>,
    up_blocks: Vec<DenseBlock>,
    last: Conv2d,
    dropout: f32,
    block_dropout: f32,
    block_relu: bool,
}

impl Tiramisu {
    /// Class scores [N, classes, H, W] for fields `x` [N, C, H, W].
    pub fn forward(&self, x: Tensor<4>, pass: &mut Pass) -> Tensor<4> {
        let p = self.dropout;
        let after = self.block_relu.then_some(self.block_dropout);
        let mut h = self.first.apply(x);
        let mut skips = Vec::with_capacity(self.down_blocks.len());
        for (block, down) in self.down_blocks.iter().zip(&self.transitions_down) {
            let (stack, _) = block.forward(h, pass, p, after);
            // Cut (`--reduce-during-backward`) where the skip and the path
            // down part: both then use the cut tensor. The path up is one
            // segment: each block's stack and its new layers carry the
            // same graph, so neither can be cut alone.
            let stack = pass.cut(stack);
            skips.push(stack.clone());
            let t = down.conv.apply(pass.norm_relu(&down.norm, stack));
            h = down.pool(pass.dropout(t, p));
        }
        let (mut stack, mut added) = self.bottleneck.forward(h, pass, p, after);
        for ((up, block), skip) in self.transitions_up.iter().zip(&self.up_blocks).zip(skips.into_iter().rev()) {
            // A block without layers passes nothing new up; its input then is.
            let new = added.take().unwrap_or(stack);
            let h = Tensor::cat(vec![up.apply(new), skip], 1);
            (stack, added) = block.forward(h, pass, p, after);
        }
        self.last.apply(stack)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::params;

    /// Trainable values of the network `config` builds.
    pub(crate) fn parameters(config: &TiramisuConfig) -> usize {
        let net = config.init(&Device::flex());
        params::inventory(&net).unwrap().iter().filter(|t| t.role.trainable()).map(|t| t.len()).sum()
    }

    /// Jégou et al. (Table 2) give FC-DenseNet103 (blocks 4, 5, 7, 10, 12,
    /// 15; growth 16; 3×3; 3 input channels, 11 CamVid classes) 9.4 M
    /// parameters and FC-DenseNet67 (5 layers per block, growth 16) 3.5 M;
    /// ours come within 1 %. (Their FC-DenseNet56, 4 layers per block and
    /// growth 12, comes to 1.38 M here against the table's 1.5 M; it is
    /// left out until the difference is understood.)
    #[test]
    fn the_published_fc_densenets_have_their_published_parameter_counts() {
        let camvid = |blocks: Vec<usize>, growth| TiramisuConfig {
            name: "camvid".into(),
            channels: 3,
            classes: 11,
            first: 48,
            blocks,
            growth,
            kernel: 3,
            dropout: 0.2,
            input: [224, 224],
            pooling: DownPool::Max,
            block_dropout: None,
        };
        for (blocks, growth, published) in [(vec![4, 5, 7, 10, 12, 15], 16, 9.4e6), (vec![5; 6], 16, 3.5e6)] {
            let count = parameters(&camvid(blocks.clone(), growth)) as f64;
            assert!((count / published - 1.0).abs() < 0.015, "{blocks:?} growth {growth}: {count} vs {published}");
        }
    }

    #[test]
    fn the_small_network_maps_fields_to_class_scores_of_the_same_size() {
        let config = TiramisuConfig::small();
        let device = Device::flex();
        let net = config.init(&device);
        let x = Tensor::<4>::ones([2, 16, 32, 48], &device);
        assert_eq!(net.forward(x, &mut Pass::inference()).dims(), [2, 3, 32, 48]);
        assert!(config.check_input([32, 48]).is_ok());
        assert!(config.check_input([30, 48]).is_err());
    }
}
