//! The network's modules: the observation's 3-D CNN, the LSTM core, and
//! the layers of each address. Which modules a batch runs, and in what
//! order, is [`model`](super::model)'s business.

use burn::module::{Module, Param};
use burn::nn::conv::{Conv3d, Conv3dConfig};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor, TensorData};

use super::EtalumisConfig;
use super::layout::{AddressLayer, Kind, Layout};
use super::lstm::Lstm;
use super::proposal::head_width;
use crate::engine::TrainError;
use crate::engine::segments::Cuts;
use crate::kernels::{Pooling, conv3d_same, pool3d};

/// pyprob's `EmbeddingCNN3D5C`: five valid 3³ convolutions with max
/// pooling by 2 after the second and the fifth (PyTorch's `MaxPool3d(2)`,
/// which drops an odd last plane), then a dense layer; ReLU after each.
#[derive(Module, Debug)]
pub struct ObservationEmbedding {
    convs: Vec<Conv3d>,
    dense: Linear,
}

/// The sizes after a valid 3³ convolution, and after a floor pooling by 2.
fn convolved(size: [usize; 3]) -> Option<[usize; 3]> {
    Some([size[0].checked_sub(2)?, size[1].checked_sub(2)?, size[2].checked_sub(2)?])
}

fn pooled(size: [usize; 3]) -> [usize; 3] {
    size.map(|s| s / 2)
}

/// A valid 3³ convolution as our "same" convolution with its one-voxel
/// border cropped: burn's own `conv3d` backward on the CPU (a transposed
/// convolution for the input gradient and a per-voxel loop for the
/// weights') costs most of a training step; our direct kernel and its
/// backward run the larger volume faster.
fn valid_conv(conv: &Conv3d, x: Tensor<5>) -> Tensor<5> {
    let y = conv3d_same(x, conv.weight.val(), conv.bias.as_ref().map(Param::val));
    let [_, _, d, h, w] = y.dims();
    y.narrow(2, 1, d - 2).narrow(3, 1, h - 2).narrow(4, 1, w - 2)
}

/// Max pooling by 2 with PyTorch's floor: crop odd sizes, then pool.
fn max_pool_floor(x: Tensor<5>) -> Tensor<5> {
    let [_, _, d, h, w] = x.dims();
    let x = x.narrow(2, 0, d - d % 2).narrow(3, 0, h - h % 2).narrow(4, 0, w - w % 2);
    pool3d(x, Pooling::Max)
}

impl ObservationEmbedding {
    /// For observations of `shape` (depth, height, width).
    pub fn new(config: &EtalumisConfig, shape: [usize; 3], device: &Device) -> Result<Self, TrainError> {
        let too_small = || TrainError::Data(format!("observations of {shape:?} are too small for the 3-D CNN"));
        let mut size = shape;
        let mut inputs = 1;
        let mut convs = Vec::with_capacity(5);
        for (i, &channels) in config.conv_channels.iter().enumerate() {
            convs.push(Conv3dConfig::new([inputs, channels], [3, 3, 3]).init(device));
            inputs = channels;
            size = convolved(size).ok_or_else(too_small)?;
            if i == 1 || i == 4 {
                size = pooled(size);
            }
        }
        let flat = inputs * size.iter().product::<usize>();
        if flat == 0 {
            return Err(too_small());
        }
        Ok(ObservationEmbedding { convs, dense: LinearConfig::new(flat, config.observation_embedding).init(device) })
    }

    /// Embed observations [n, 1, depth, height, width]: [n, embedding].
    pub fn forward(&self, x: Tensor<5>) -> Tensor<2> {
        self.forward_cut(x, &mut Cuts::off())
    }

    /// [`forward`](Self::forward), cut after each convolution and after
    /// the embedding (`--reduce-during-backward`: the CNN's gradients are
    /// final once back-propagation has left the LSTM and the addresses'
    /// layers, and each convolution's as soon as it has passed it).
    pub fn forward_cut(&self, x: Tensor<5>, cuts: &mut Cuts) -> Tensor<2> {
        let mut x = x;
        for (i, conv) in self.convs.iter().enumerate() {
            x = relu(valid_conv(conv, x));
            if i == 1 || i == 4 {
                x = max_pool_floor(x);
            }
            x = cuts.cut(x);
        }
        let n = x.dims()[0];
        cuts.cut(relu(self.dense.forward(x.reshape([n as i32, -1]))))
    }
}

/// An address's learned embedding.
#[derive(Module, Debug)]
pub struct AddressEmbedding {
    weight: Param<Tensor<1>>,
}

/// The layers of one address: its embedding, the embedding of its values
/// (one dense layer and ReLU, pyprob's `EmbeddingFeedForward` with one
/// layer), and its proposal head (two dense layers, ReLU between, the
/// hidden width halfway between input and output as in pyprob).
#[derive(Module, Debug)]
pub struct AddressLayers {
    embedding: AddressEmbedding,
    sample: Linear,
    hidden: Linear,
    out: Linear,
}

/// Values a value's embedding takes: a one-hot vector for a categorical or
/// Poisson count, else one number.
fn sample_inputs(layer: &AddressLayer) -> usize {
    if layer.kind.counted() { layer.outcomes } else { 1 }
}

impl AddressLayers {
    fn new(config: &EtalumisConfig, layer: &AddressLayer, device: &Device) -> Self {
        let width = head_width(layer, config.mixture_components);
        let hidden = (config.lstm_hidden + width) / 2;
        AddressLayers {
            embedding: AddressEmbedding {
                weight: Param::from_tensor(Tensor::zeros([config.address_embedding], device)),
            },
            sample: LinearConfig::new(sample_inputs(layer), config.sample_embedding).init(device),
            hidden: LinearConfig::new(config.lstm_hidden, hidden).init(device),
            out: LinearConfig::new(hidden, width).init(device),
        }
    }

    /// The address's embedding as [1, 1, size].
    pub fn embedding(&self) -> Tensor<3> {
        let size = self.embedding.weight.dims()[0];
        self.embedding.weight.val().reshape([1, 1, size])
    }

    /// Embed this address's values `values` with priors `(first, second)`:
    /// [rows, sample embedding]. A uniform's value is put on [0, 1] and a
    /// normal's standardised by its prior first (pyprob feeds the raw value;
    /// a momentum of 45 GeV next to a share of 0.3 would make the first
    /// step's updates uneven across addresses).
    pub fn embed_values(&self, layer: &AddressLayer, values: &[f32], prior: (&[f32], &[f32])) -> Tensor<2> {
        let device = self.sample.weight.device();
        let n = values.len();
        let inputs = sample_inputs(layer);
        let mut x = vec![0f32; n * inputs];
        for (r, &v) in values.iter().enumerate() {
            let (a, b) = (prior.0[r], prior.1[r]);
            match layer.kind {
                Kind::Categorical | Kind::Poisson => x[r * inputs + (v.max(0.0) as usize).min(inputs - 1)] = 1.0,
                Kind::Uniform => x[r] = (v - a) / (b - a),
                Kind::Normal => x[r] = (v - a) / b,
                Kind::Bernoulli => x[r] = v,
            }
        }
        relu(self.sample.forward(Tensor::from_data(TensorData::new(x, [n, inputs]), &device)))
    }

    /// The proposal head's outputs for LSTM outputs `h` [rows, hidden].
    pub fn head(&self, h: Tensor<2>) -> Tensor<2> {
        self.out.forward(relu(self.hidden.forward(h)))
    }
}

/// The whole network.
#[derive(Module, Debug)]
pub struct EtalumisNet {
    /// The observation's embedding.
    pub observation: ObservationEmbedding,
    /// The LSTM core.
    pub lstm: Lstm,
    /// Per address of the layout, in its order.
    pub addresses: Vec<AddressLayers>,
}

impl EtalumisNet {
    /// The network for observations of `shape` with a layer set per
    /// address of `layout`.
    pub fn new(
        config: &EtalumisConfig,
        shape: [usize; 3],
        layout: &Layout,
        device: &Device,
    ) -> Result<Self, TrainError> {
        let inputs = config.observation_embedding + config.sample_embedding + config.address_embedding;
        Ok(EtalumisNet {
            observation: ObservationEmbedding::new(config, shape, device)?,
            lstm: Lstm::new(inputs, config.lstm_hidden, config.lstm_depth, device),
            addresses: layout.addresses.iter().map(|a| AddressLayers::new(config, a, device)).collect(),
        })
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
            if i == 1 || i == 4 {
                size = pooled(size);
            }
        }
        assert_eq!(size, [1, 4, 4]);
        let device = Device::flex();
        let embedding = ObservationEmbedding::new(&super::super::small(), [20, 35, 35], &device).unwrap();
        assert_eq!(embedding.forward(Tensor::ones([2, 1, 20, 35, 35], &device)).dims(), [2, 32]);
        assert!(ObservationEmbedding::new(&super::super::small(), [4, 35, 35], &device).is_err());
        // The cropped "same" convolution is burn's valid one.
        let conv = Conv3dConfig::new([2, 3], [3, 3, 3]).init(&device);
        let x = Tensor::<5>::random([1, 2, 5, 9, 10], burn::tensor::Distribution::Default, &device);
        let diff: f32 = (valid_conv(&conv, x.clone()) - conv.forward(x)).abs().max().into_scalar();
        assert!(diff < 1e-5, "{diff}");
    }

    /// The cuts after each convolution and the embedding
    /// (`--reduce-during-backward`) give every parameter of the CNN, once,
    /// the gradient of one backward pass.
    #[test]
    fn cutting_the_cnn_gives_the_gradients_of_one_backward_pass() {
        let device = Device::flex().autodiff();
        let config = super::super::small();
        let embedding = ObservationEmbedding::new(&config, [20, 21, 22], &device).unwrap();
        let x = Tensor::<5>::random([2, 1, 20, 21, 22], burn::tensor::Distribution::Normal(0.0, 1.0), &device);
        let loss = |cuts: &mut Cuts| {
            let y = embedding.forward_cut(x.clone(), cuts);
            (y.clone() * y).mean()
        };
        crate::engine::segments::assert_segments_match(&embedding, loss, config.conv_channels.len() + 1);
    }
}
