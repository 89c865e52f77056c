//! The network's modules: the observation's embedding
//! ([`observation`](super::observation)), the LSTM core, and the layers of
//! each address. Which modules a batch runs, and in what
//! order, is [`model`](super::model)'s business.

use crate::kernels::relu;
use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor, TensorData};

use super::EtalumisConfig;
use super::layout::{AddressLayer, Kind, Layout};
use super::lstm::Lstm;
use super::observation::ObservationEmbedding;
use super::proposal::head_width;
use crate::engine::TrainError;
use crate::kernels;

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
        relu(kernels::linear(&self.sample, Tensor::from_data(TensorData::new(x, [n, inputs]), &device)))
    }

    /// The proposal head's outputs for LSTM outputs `h` [rows, hidden].
    pub fn head(&self, h: Tensor<2>) -> Tensor<2> {
        kernels::linear(&self.out, relu(kernels::linear(&self.hidden, h)))
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
    pub fn new(config: &EtalumisConfig, shape: &[usize], layout: &Layout, device: &Device) -> Result<Self, TrainError> {
        let inputs = config.observation_embedding + config.sample_embedding + config.address_embedding;
        Ok(EtalumisNet {
            observation: ObservationEmbedding::new(config, shape, device)?,
            lstm: Lstm::new(inputs, config.lstm_hidden, config.lstm_depth, device),
            addresses: layout.addresses.iter().map(|a| AddressLayers::new(config, a, device)).collect(),
        })
    }
}
