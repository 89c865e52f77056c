//! HEP-CNN, the binary classifier Kurth et al. 2018 ("TensorFlow at
//! Scale", §V) scaled as their latency-bound probe: collision events
//! unrolled into three-channel images (electromagnetic and hadronic
//! calorimeter, tracks) are classified as a new heavy particle's decay
//! (R-parity-violating gluino pairs) or Standard-Model multi-jet
//! background, after Bhimji et al. 2017 (arXiv:1711.03573). Data from
//! `simgen jets`, in the HEP-CNN benchmark's HDF5 layout.
//!
//! - [`net`]: the network (5 convolution + pooling units, one dense layer).
//! - [`roc`]: ROC area and efficiencies from score histograms summed over
//!   the ranks.
//! - [`model`]: the engine glue (event files, input scale, loss, the
//!   physics validation against the cut-based selection).

pub mod model;
pub mod net;
pub mod roc;

pub use model::HepCnnModel;
pub use net::HepCnnConfig;

/// The configurations `--config` accepts.
pub const CONFIGS: &[&str] = &["paper", "small"];

/// The benchmark's network for 224×224×3 images (`cori_knl_224_adam.json`:
/// 4 units of 128 filters plus the fifth convolution, dropout 0.5).
pub fn paper() -> HepCnnConfig {
    HepCnnConfig { name: "paper".into(), channels: 3, input: [224, 224], filters: 128, units: 4, dropout: 0.5 }
}

/// For tests and CPUs: the benchmark's other image size, 64×64
/// (`cori_knl_64.json`), through the layers of the paper's configuration
/// (not that file's 3 units and 512-unit dense layer) with 32 filters, a
/// sixteenth of the work, and no dropout (`--dropout 0.5` puts it back).
pub fn small() -> HepCnnConfig {
    HepCnnConfig { name: "small".into(), input: [64, 64], filters: 32, dropout: 0.0, ..paper() }
}

/// The configuration called `name`.
pub fn by_name(name: &str) -> Option<HepCnnConfig> {
    match name {
        "paper" => Some(paper()),
        "small" => Some(small()),
        _ => None,
    }
}
