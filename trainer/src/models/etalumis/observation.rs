//! The observation's embedding, the LSTM's input at every step: pyprob's
//! 3-D CNN for a volume (the paper's 20 × 35 × 35 calorimeter), its
//! feed-forward embedding for an observation of any other shape (a vector
//! of measurements from a PPX simulator, a scalar), as pyprob's
//! `InferenceNetwork` takes `ObserveEmbedding.CNN3D5C` or `FEEDFORWARD`
//! per observation (pyprob 1.5.0, `nn/inference_network.py`).

use crate::kernels::relu;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv3d, Conv3dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use super::EtalumisConfig;
use crate::engine::TrainError;
use crate::engine::segments::Cuts;
use crate::kernels::{self, Pooling, conv3d_valid, pool3d};

/// Layers of the feed-forward embedding: pyprob's `EmbeddingFeedForward`
/// default (`num_layers=3`, `nn/embedding_feedforward.py`).
const FEED_FORWARD_LAYERS: usize = 3;

/// Which embedding an observation of `shape` gets: the CNN for three
/// dimensions, else the feed-forward layers over its flattened values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbeddingKind {
    /// pyprob's `EmbeddingCNN3D5C` on a depth × height × width volume.
    Cnn([usize; 3]),
    /// pyprob's `EmbeddingFeedForward` on this many values.
    FeedForward(usize),
}

impl EmbeddingKind {
    /// The embedding of observations of `shape` (a scalar's shape is empty).
    pub fn of(shape: &[usize]) -> EmbeddingKind {
        match *shape {
            [d, h, w] => EmbeddingKind::Cnn([d, h, w]),
            _ => EmbeddingKind::FeedForward(shape.iter().product()),
        }
    }
}

/// The observation's shape, kept beside the layers to put a flat batch
/// back into volumes for the CNN.
#[derive(Debug, Clone)]
pub struct ObservedShape(EmbeddingKind);

impl burn::module::ModuleDisplay for ObservedShape {}
impl burn::module::ModuleDisplayDefault for ObservedShape {
    fn content(&self, content: burn::module::Content) -> Option<burn::module::Content> {
        Some(content)
    }
}

/// The embedding: five valid 3³ convolutions with max pooling by 2 after
/// the second and the fifth (PyTorch's `MaxPool3d(2)`, which drops an odd
/// last plane) then one dense layer (pyprob `nn/embedding_cnn_3d_5c.py`);
/// or, with no convolutions, three dense layers whose hidden width is
/// halfway between input and output. ReLU after every layer in both.
#[derive(Module, Debug)]
pub struct ObservationEmbedding {
    convs: Vec<Conv3d>,
    dense: Vec<Linear>,
    #[module(skip)]
    shape: ObservedShape,
}

/// The sizes after a valid 3³ convolution, and after a floor pooling by 2.
pub(super) fn convolved(size: [usize; 3]) -> Option<[usize; 3]> {
    Some([size[0].checked_sub(2)?, size[1].checked_sub(2)?, size[2].checked_sub(2)?])
}

pub(super) fn pooled(size: [usize; 3]) -> [usize; 3] {
    size.map(|s| s / 2)
}

/// A valid 3³ convolution (pyprob's `nn.Conv3d` has no padding) on our
/// direct kernels ([`kernels::conv3d_valid`]): burn's own `conv3d`
/// backward on the CPU (a transposed convolution for the input gradient
/// and a per-voxel loop for the weights') costs most of a training step.
fn valid_conv(conv: &Conv3d, x: Tensor<5>) -> Tensor<5> {
    conv3d_valid(x, conv.weight.val(), conv.bias.as_ref().map(Param::val))
}

/// Max pooling by 2 with PyTorch's floor: crop odd sizes, then pool.
fn max_pool_floor(x: Tensor<5>) -> Tensor<5> {
    let [_, _, d, h, w] = x.dims();
    let x = x.narrow(2, 0, d - d % 2).narrow(3, 0, h - h % 2).narrow(4, 0, w - w % 2);
    pool3d(x, Pooling::Max)
}

/// Whether convolution `i` (from 0) is followed by pooling.
fn pools_after(i: usize) -> bool {
    i == 1 || i == 4
}

impl ObservationEmbedding {
    /// For observations of `shape`.
    pub fn new(config: &EtalumisConfig, shape: &[usize], device: &Device) -> Result<Self, TrainError> {
        let kind = EmbeddingKind::of(shape);
        let out = config.observation_embedding;
        let (convs, dense) = match kind {
            EmbeddingKind::Cnn(volume) => {
                let too_small = || TrainError::Data(format!("observations of {shape:?} are too small for the 3-D CNN"));
                let (mut size, mut inputs) = (volume, 1);
                let mut convs = Vec::with_capacity(config.conv_channels.len());
                for (i, &channels) in config.conv_channels.iter().enumerate() {
                    convs.push(Conv3dConfig::new([inputs, channels], [3, 3, 3]).init(device));
                    inputs = channels;
                    size = convolved(size).ok_or_else(too_small)?;
                    if pools_after(i) {
                        size = pooled(size);
                    }
                }
                let flat = inputs * size.iter().product::<usize>();
                if flat == 0 {
                    return Err(too_small());
                }
                (convs, vec![LinearConfig::new(flat, out).init(device)])
            }
            EmbeddingKind::FeedForward(0) => {
                return Err(TrainError::Data(format!("observations of {shape:?} hold no values to embed")));
            }
            EmbeddingKind::FeedForward(values) => {
                let hidden = (values + out) / 2;
                let mut widths = vec![values];
                widths.extend(std::iter::repeat_n(hidden, FEED_FORWARD_LAYERS - 1));
                widths.push(out);
                let dense = widths.windows(2).map(|w| LinearConfig::new(w[0], w[1]).init(device)).collect();
                (Vec::new(), dense)
            }
        };
        Ok(ObservationEmbedding { convs, dense, shape: ObservedShape(kind) })
    }

    /// Which embedding this is.
    pub fn kind(&self) -> EmbeddingKind {
        self.shape.0
    }

    /// Embed observations [n, values] (each flattened, row-major):
    /// [n, embedding].
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.forward_cut(x, &mut Cuts::off())
    }

    /// [`forward`](Self::forward), cut after each convolution and after
    /// the embedding (`--reduce-during-backward`: the CNN's gradients are
    /// final once back-propagation has left the LSTM and the addresses'
    /// layers, and each convolution's as soon as it has passed it).
    pub fn forward_cut(&self, x: Tensor<2>, cuts: &mut Cuts) -> Tensor<2> {
        let n = x.dims()[0];
        let mut flat = x;
        if let EmbeddingKind::Cnn([d, h, w]) = self.shape.0 {
            let mut x = flat.reshape([n, 1, d, h, w]);
            for (i, conv) in self.convs.iter().enumerate() {
                x = relu(valid_conv(conv, x));
                if pools_after(i) {
                    x = max_pool_floor(x);
                }
                x = cuts.cut(x);
            }
            flat = x.reshape([n as i32, -1]);
        }
        for layer in &self.dense {
            flat = relu(kernels::linear(layer, flat));
        }
        cuts.cut(flat)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_papers_cnn_reduces_the_calorimeter_to_128_maps_of_1_by_4_by_4() {
        // 20×35×35 → 18×33×33 → 16×31×31 → 8×15×15 → 6×13×13 → 4×11×11 → 2×9×9 → 1×4×4.
        let mut size = [20, 35, 35];
        for i in 0..5 {
            size = convolved(size).unwrap();
            if pools_after(i) {
                size = pooled(size);
            }
        }
        assert_eq!(size, [1, 4, 4]);
        let device = Device::flex();
        let embedding = ObservationEmbedding::new(&super::super::small(), &[20, 35, 35], &device).unwrap();
        assert_eq!(embedding.kind(), EmbeddingKind::Cnn([20, 35, 35]));
        assert_eq!(embedding.forward(Tensor::ones([2, 20 * 35 * 35], &device)).dims(), [2, 32]);
        assert!(ObservationEmbedding::new(&super::super::small(), &[4, 35, 35], &device).is_err());
        // The cropped "same" convolution is burn's valid one.
        let conv = Conv3dConfig::new([2, 3], [3, 3, 3]).init(&device);
        let x = Tensor::<5>::random([1, 2, 5, 9, 10], burn::tensor::Distribution::Default, &device);
        let diff: f32 = (valid_conv(&conv, x.clone()) - conv.forward(x)).abs().max().into_scalar();
        assert!(diff < 1e-5, "{diff}");
    }

    /// A vector of 16 measurements (or a scalar) gets pyprob's three dense
    /// layers, 16 → 24 → 24 → 32 for an embedding of 32; no values is an error.
    #[test]
    fn other_shapes_get_three_dense_layers_halfway_wide() {
        let device = Device::flex();
        let config = super::super::small();
        let embedding = ObservationEmbedding::new(&config, &[16], &device).unwrap();
        assert_eq!(embedding.kind(), EmbeddingKind::FeedForward(16));
        let widths: Vec<[usize; 2]> = embedding.dense.iter().map(|l| l.weight.dims()).collect();
        assert_eq!(widths, [[16, 24], [24, 24], [24, 32]]);
        let y = embedding.forward(Tensor::random([3, 16], burn::tensor::Distribution::Default, &device));
        assert_eq!(y.dims(), [3, 32]);
        assert!(embedding.convs.is_empty());
        assert_eq!(ObservationEmbedding::new(&config, &[], &device).unwrap().kind(), EmbeddingKind::FeedForward(1));
        assert_eq!(EmbeddingKind::of(&[2, 3]), EmbeddingKind::FeedForward(6));
        assert!(ObservationEmbedding::new(&config, &[0], &device).is_err());
    }

    /// The cuts after each convolution and the embedding
    /// (`--reduce-during-backward`) give every parameter of the CNN, once,
    /// the gradient of one backward pass.
    #[test]
    fn cutting_the_cnn_gives_the_gradients_of_one_backward_pass() {
        let device = Device::flex().autodiff();
        let config = super::super::small();
        let embedding = ObservationEmbedding::new(&config, &[20, 21, 22], &device).unwrap();
        let x = Tensor::<2>::random([2, 20 * 21 * 22], burn::tensor::Distribution::Normal(0.0, 1.0), &device);
        let loss = |cuts: &mut Cuts| {
            let y = embedding.forward_cut(x.clone(), cuts);
            (y.clone() * y).mean()
        };
        crate::engine::segments::assert_segments_match(&embedding, loss, config.conv_channels.len() + 1);
    }
}
