//! The Etalumis inference network (Baydin et al., "Etalumis: Bringing
//! Probabilistic Programming to Scientific Simulators at Scale", SC19):
//! trained on the traces of a simulator (`simgen traces`), it proposes
//! each latent random choice from what the detector saw, so that
//! importance sampling with its proposals replaces MCMC.
//!
//! The architecture is pyprob's `InferenceNetworkLSTM` as the paper used
//! it (pyprob `nn/inference_network_lstm.py`, `nn/embedding_cnn_3d_5c.py`):
//! - a 3-D CNN embeds the 20 × 35 × 35 calorimeter: Conv3d(1, 64, 3),
//!   Conv3d(64, 64, 3), MaxPool3d(2), Conv3d(64, 128, 3) and twice
//!   Conv3d(128, 128, 3), MaxPool3d(2), then a dense layer to 256, each
//!   followed by ReLU; an observation that is not a volume (a PPX
//!   simulator's vector of measurements) gets pyprob's three dense layers
//!   instead ([`observation`]);
//! - an LSTM of 512 hidden units (1 to 4 layers) runs over a trace's
//!   controlled choices; its input at each step is the observation's
//!   embedding, the embedding of the previous choice's value (one dense
//!   layer of that address, size 4) and the current address's learned
//!   embedding (size 64);
//! - a two-layer head per address turns the LSTM's output into a proposal
//!   ([`proposal`]): a mixture of 10 truncated normals on a uniform prior's
//!   support, of 10 normals around a normal prior, a categorical for a
//!   categorical prior, and for a Poisson prior a categorical over counts.
//!
//! Every address-specific layer is made before training from the trace
//! stores' address dictionaries ([`layout`]), so every rank holds the same
//! parameters; a minibatch is split into sub-batches of one trace type, and
//! one sub-batch runs the LSTM in a single pass ([`model`]).

pub mod flops;
pub mod guide;
pub mod infer;
pub mod infer_ppx;
pub mod infer_rmh;
pub mod layout;
pub mod lstm;
pub mod mcmc_stats;
pub mod model;
pub mod net;
pub mod observation;
pub mod online;
pub mod proposal;
pub mod rmh;
pub mod sampler;

use serde::{Deserialize, Serialize};

pub use model::EtalumisModel;

/// The configurations `--config` accepts.
pub const CONFIGS: &[&str] = &["paper", "small"];

/// The network's sizes (everything but the address-specific layers' count,
/// which the data decides).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EtalumisConfig {
    /// Configuration name.
    pub name: String,
    /// Output channels of the five 3-D convolutions.
    pub conv_channels: [usize; 5],
    /// Size of the observation's embedding.
    pub observation_embedding: usize,
    /// LSTM hidden units.
    pub lstm_hidden: usize,
    /// LSTM layers.
    pub lstm_depth: usize,
    /// Size of a value's embedding.
    pub sample_embedding: usize,
    /// Size of an address's embedding.
    pub address_embedding: usize,
    /// Components of the normal and truncated-normal mixtures.
    pub mixture_components: usize,
}

/// The paper's network (Baydin et al. 2019, section IV-C; pyprob's
/// defaults for the sizes the paper does not state: value embeddings of 4
/// and address embeddings of 64).
pub fn paper() -> EtalumisConfig {
    EtalumisConfig {
        name: "paper".into(),
        conv_channels: [64, 64, 128, 128, 128],
        observation_embedding: 256,
        lstm_hidden: 512,
        lstm_depth: 1,
        sample_embedding: 4,
        address_embedding: 64,
        mixture_components: 10,
    }
}

/// A reduced network for tests and CPUs: the same layers, narrower.
pub fn small() -> EtalumisConfig {
    EtalumisConfig {
        name: "small".into(),
        conv_channels: [4, 4, 8, 8, 8],
        observation_embedding: 32,
        lstm_hidden: 32,
        address_embedding: 16,
        mixture_components: 3,
        ..paper()
    }
}

/// The configuration called `name`.
pub fn by_name(name: &str) -> Option<EtalumisConfig> {
    match name {
        "paper" => Some(paper()),
        "small" => Some(small()),
        _ => None,
    }
}
