//! DeepLabv3+ (Chen et al., "Encoder-Decoder with Atrous Separable
//! Convolution for Semantic Image Segmentation", ECCV 2018) as Kurth et al.
//! (SC18, Sec. V-A) modified it for climate segmentation.
//!
//! - Encoder: ResNet-50 (He et al., CVPR 2016, Table 1: 3, 4, 6, 3
//!   bottleneck blocks of 64, 128, 256, 512 maps, 4× expansion) with the
//!   stride of its last stage replaced by atrous convolution of rate 2, so
//!   the features leave at output stride 16 (Chen et al. 2017, DeepLabv3,
//!   Sec. 3.2). The stride of a bottleneck sits on its 3×3 convolution
//!   (torchvision's "ResNet v1.5"); the stem takes the 16 climate channels.
//! - Atrous spatial pyramid pooling (DeepLabv3, Sec. 3.3): a 1×1
//!   convolution (rate 1), three 3×3 convolutions of rates 6, 12 and 18,
//!   and image pooling (global mean, 1×1 convolution, broadcast back), 256
//!   maps each with ReLU, concatenated and projected by a 1×1 convolution
//!   to 256. The convolution branches are batch-normalised; the image
//!   pooling branch has a bias instead: normalising a 1×1 map estimates
//!   each channel's variance from the samples of a normalisation group
//!   alone, which at the per-rank batches of 1 or 2 the paper and CPUs
//!   train with is 0 or one difference, and inference then divides by a
//!   running variance near 0.
//! - Decoder: DeepLabv3+ joins the ASPP output, brought to output stride
//!   4, with the encoder's stride-4 features reduced to 48 maps by a 1×1
//!   convolution, and refines them with two 3×3 convolutions. Kurth et al.
//!   replaced the final bilinear upsampling by 4 with learned transposed
//!   convolutions back to the full 768×1152 resolution, but give no layer
//!   table for their decoder. Here every factor of 2 (16 → 4 before the
//!   join, 4 → 1 after it) is a 3×3 transposed convolution of stride 2,
//!   and after each of the last two, as at stride 4, two 3×3 convolutions
//!   refine; all with BN and ReLU, `decoder` maps wide (256 in `paper`).
//!   That gives 10.3 TF per training sample against the paper's 14.41
//!   ([`flops`](super::flops)); their decoder did more still.

use crate::kernels::relu;
use burn::module::Module;
use burn::nn::BatchNorm;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::{Conv2d, ConvTranspose2d};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::tensor::Device;
use burn::tensor::Tensor;
use serde::Serialize;

use super::CLASSES;
use super::layers::{Apply, Pass, conv, norm, upsample2};

/// The shape of a DeepLabv3+.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeeplabConfig {
    /// Configuration name.
    pub name: String,
    /// Input channels.
    pub channels: usize,
    /// Output classes.
    pub classes: usize,
    /// Maps of the stem (64 in ResNet-50).
    pub stem: usize,
    /// Bottleneck blocks per ResNet stage (3, 4, 6, 3 in ResNet-50).
    pub stages: [usize; 4],
    /// Inner maps of the first stage's bottlenecks (64; ×2 per stage).
    pub width: usize,
    /// Maps of the ASPP branches, its projection and the decoder (256).
    pub aspp: usize,
    /// Atrous rates of the 3×3 ASPP branches (6, 12, 18 at output stride 16).
    pub rates: [usize; 3],
    /// Maps the stride-4 encoder features are reduced to (48).
    pub low_level: usize,
    /// Maps of the decoder's convolutions.
    pub decoder: usize,
    /// Input height and width the configuration is meant for.
    pub input: [usize; 2],
}

impl DeeplabConfig {
    /// Kurth et al.'s DeepLabv3+ for 768×1152×16 climate fields.
    pub fn paper() -> Self {
        DeeplabConfig {
            name: "paper".into(),
            channels: 16,
            classes: CLASSES,
            stem: 64,
            stages: [3, 4, 6, 3],
            width: 64,
            aspp: 256,
            rates: [6, 12, 18],
            low_level: 48,
            decoder: 256,
            input: [768, 1152],
        }
    }

    /// A reduced network for tests and CPUs: one bottleneck per stage, an
    /// eighth of the widths, rates scaled to 32×48 fields (2×3 features at
    /// output stride 16).
    pub fn small() -> Self {
        DeeplabConfig {
            name: "small".into(),
            stem: 8,
            stages: [1, 1, 1, 1],
            width: 8,
            aspp: 32,
            rates: [1, 2, 3],
            low_level: 8,
            decoder: 16,
            input: [32, 48],
            ..Self::paper()
        }
    }

    /// A configuration by name.
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "paper" => Some(Self::paper()),
            "small" => Some(Self::small()),
            _ => None,
        }
    }

    /// Height and width must be multiples of the output stride, 16.
    pub fn check_input(&self, [h, w]: [usize; 2]) -> Result<(), String> {
        if h == 0 || w == 0 || !h.is_multiple_of(16) || !w.is_multiple_of(16) {
            return Err(format!(
                "DeepLabv3+ '{}' works at output stride 16, so height and width must be multiples of 16; got {h}×{w}",
                self.name
            ));
        }
        Ok(())
    }

    /// Build the network on `device`.
    pub fn init(&self, device: &Device) -> Deeplab {
        let stem = conv([self.channels, self.stem], 7, (2, 1), false, device);
        let mut from = self.stem;
        let mut stages = Vec::with_capacity(4);
        // Strides 1, 2, 2 and then rate 2 instead of a stride (output stride 16).
        for (i, (&blocks, (stride, dilation))) in self.stages.iter().zip([(1, 1), (2, 1), (2, 1), (1, 2)]).enumerate() {
            let inner = self.width << i;
            let out = inner * 4;
            let stage: Vec<Bottleneck> = (0..blocks)
                .map(|b| {
                    let (stride, input) = if b == 0 { (stride, from) } else { (1, out) };
                    let shortcut = (b == 0 && (stride != 1 || input != out)).then(|| Shortcut {
                        conv: conv([input, out], 1, (stride, 1), false, device),
                        norm: norm(out, device),
                    });
                    Bottleneck {
                        reduce: conv([input, inner], 1, (1, 1), false, device),
                        reduce_norm: norm(inner, device),
                        spatial: conv([inner, inner], 3, (stride, dilation), false, device),
                        spatial_norm: norm(inner, device),
                        expand: conv([inner, out], 1, (1, 1), false, device),
                        expand_norm: norm(out, device),
                        shortcut,
                    }
                })
                .collect();
            stages.push(stage);
            from = out;
        }
        let (a, d) = (self.aspp, self.decoder);
        let branch = |k: usize, rate: usize| ConvNorm {
            conv: conv([from, a], k, (1, rate), false, device),
            norm: norm(a, device),
        };
        let conv_norm = |[i, o]: [usize; 2], k: usize| ConvNorm {
            conv: conv([i, o], k, (1, 1), false, device),
            norm: norm(o, device),
        };
        let up = |i: usize, o: usize| UpNorm { conv: upsample2(i, o, device), norm: norm(o, device) };
        let low_from = self.width * 4;
        Deeplab {
            stem,
            stem_norm: norm(self.stem, device),
            pool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            stages,
            aspp: vec![branch(1, 1), branch(3, self.rates[0]), branch(3, self.rates[1]), branch(3, self.rates[2])],
            image_pool: conv([from, a], 1, (1, 1), true, device),
            project: conv_norm([5 * a, a], 1),
            to_quarter: vec![up(a, d), up(d, d)],
            low_level: conv_norm([low_from, self.low_level], 1),
            refine: vec![conv_norm([d + self.low_level, d], 3), conv_norm([d, d], 3)],
            to_full: (0..2)
                .map(|_| DecoderStage { up: up(d, d), refine: vec![conv_norm([d, d], 3), conv_norm([d, d], 3)] })
                .collect(),
            classify: conv([d, self.classes], 1, (1, 1), true, device),
        }
    }
}

/// Convolution, BN (ReLU applied in the forward pass).
#[derive(Module, Debug)]
pub struct ConvNorm {
    conv: Conv2d,
    norm: BatchNorm,
}

impl ConvNorm {
    fn forward(&self, x: Tensor<4>, pass: &Pass) -> Tensor<4> {
        pass.norm_relu(&self.norm, self.conv.apply(x))
    }
}

/// Transposed convolution ×2, BN (ReLU in the forward pass).
#[derive(Module, Debug)]
pub struct UpNorm {
    conv: ConvTranspose2d,
    norm: BatchNorm,
}

/// A decoder step: ×2 by a transposed convolution, then 3×3 refinements.
#[derive(Module, Debug)]
pub struct DecoderStage {
    up: UpNorm,
    refine: Vec<ConvNorm>,
}

/// The projection shortcut of a bottleneck that changes size or width.
#[derive(Module, Debug)]
pub struct Shortcut {
    conv: Conv2d,
    norm: BatchNorm,
}

/// ResNet's bottleneck: 1×1 reduce, 3×3 (strided or atrous), 1×1 expand,
/// each with BN; ReLU after the first two and after the residual sum.
#[derive(Module, Debug)]
pub struct Bottleneck {
    reduce: Conv2d,
    reduce_norm: BatchNorm,
    spatial: Conv2d,
    spatial_norm: BatchNorm,
    expand: Conv2d,
    expand_norm: BatchNorm,
    shortcut: Option<Shortcut>,
}

impl Bottleneck {
    fn forward(&self, x: Tensor<4>, pass: &Pass) -> Tensor<4> {
        let h = pass.norm_relu(&self.reduce_norm, self.reduce.apply(x.clone()));
        let h = pass.norm_relu(&self.spatial_norm, self.spatial.apply(h));
        let h = pass.norm(&self.expand_norm, self.expand.apply(h));
        let identity = match &self.shortcut {
            Some(s) => pass.norm(&s.norm, s.conv.apply(x)),
            None => x,
        };
        relu(h + identity)
    }
}

/// The network.
#[derive(Module, Debug)]
pub struct Deeplab {
    stem: Conv2d,
    stem_norm: BatchNorm,
    pool: MaxPool2d,
    stages: Vec<Vec<Bottleneck>>,
    aspp: Vec<ConvNorm>,
    image_pool: Conv2d,
    project: ConvNorm,
    to_quarter: Vec<UpNorm>,
    low_level: ConvNorm,
    refine: Vec<ConvNorm>,
    to_full: Vec<DecoderStage>,
    classify: Conv2d,
}

impl Deeplab {
    /// Class scores [N, classes, H, W] for fields `x` [N, C, H, W].
    pub fn forward(&self, x: Tensor<4>, pass: &mut Pass) -> Tensor<4> {
        // Cut (`--reduce-during-backward`) after the stem, every residual
        // block, the ASPP projection and each decoder stage: points every
        // later layer reaches only through the cut tensor.
        let h = pass.norm_relu(&self.stem_norm, self.stem.apply(x));
        let mut h = pass.cut(self.pool.forward(h));
        let mut low = None;
        for (i, stage) in self.stages.iter().enumerate() {
            for block in stage {
                h = block.forward(h, pass);
                h = pass.cut(h);
            }
            if i == 0 {
                low = Some(h.clone());
            }
        }
        let [n, _, fh, fw] = h.dims();
        let mut branches: Vec<Tensor<4>> = self.aspp.iter().map(|b| b.forward(h.clone(), pass)).collect();
        let pooled = h.mean_dim(3).mean_dim(2);
        let pooled = relu(self.image_pool.apply(pooled));
        let channels = pooled.dims()[1];
        branches.push(pooled.expand([n, channels, fh, fw]));
        let mut h = self.project.forward(Tensor::cat(branches, 1), pass);
        h = pass.cut(h);
        for up in &self.to_quarter {
            h = pass.norm_relu(&up.norm, up.conv.apply(h));
            h = pass.cut(h);
        }
        if let Some(low) = low {
            h = Tensor::cat(vec![h, self.low_level.forward(low, pass)], 1);
        }
        for refine in &self.refine {
            h = refine.forward(h, pass);
            h = pass.cut(h);
        }
        for stage in &self.to_full {
            h = pass.norm_relu(&stage.up.norm, stage.up.conv.apply(h));
            for refine in &stage.refine {
                h = refine.forward(h, pass);
            }
        }
        self.classify.apply(h)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::params;

    /// ResNet-50's convolutions and BatchNorms hold 23.5 M parameters
    /// (25.6 M with the 1000-class dense layer, He et al. 2016), from
    /// 3-channel images; the climate stem takes 16 channels.
    #[test]
    fn the_encoder_is_resnet_50_sized() {
        let config = DeeplabConfig { channels: 3, ..DeeplabConfig::paper() };
        let net = config.init(&Device::flex());
        let tensors = params::inventory(&net).unwrap();
        let encoder: usize = tensors
            .iter()
            .filter(|t| t.role.trainable() && (t.path.starts_with("stem") || t.path.starts_with("stages")))
            .map(|t| t.len())
            .sum();
        assert!((encoder as f64 / 23.5e6 - 1.0).abs() < 0.01, "{encoder}");
    }

    #[test]
    fn the_small_network_maps_fields_to_class_scores_of_the_same_size() {
        let config = DeeplabConfig::small();
        let device = Device::flex();
        let net = config.init(&device);
        let x = Tensor::<4>::ones([2, 16, 32, 48], &device);
        assert_eq!(net.forward(x, &mut Pass::inference()).dims(), [2, 3, 32, 48]);
        assert!(config.check_input([40, 48]).is_err());
    }
}
