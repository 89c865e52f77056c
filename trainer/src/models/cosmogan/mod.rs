//! CosmoGAN, the generative adversarial network Kurth et al. 2018
//! ("TensorFlow at Scale", §V) scaled as their compute-bound probe:
//! a DCGAN that makes 256×256 maps of projected matter density from 64
//! noise values, trained against maps cut from simulated boxes (Mustafa et
//! al. 2019, "CosmoGAN: creating high-fidelity weak lensing convergence
//! maps using Generative Adversarial Networks", Comput. Astrophys. Cosmol.
//! 6:1). Data from `simgen massmaps`, in CosmoGAN's `.npy` layout.
//!
//! - [`net`]: the generator and the discriminator.
//! - [`model`]: the engine glue (maps, noise, the two losses in one
//!   backward pass, validation by power spectrum and pixel histogram).
//! - [`picture`]: `--plot`'s generated maps beside real ones, and the
//!   two spectra.

pub mod model;
pub mod net;
pub mod picture;

pub use model::CosmoGanModel;
pub use net::CosmoGanConfig;

/// The configurations `--config` accepts.
pub const CONFIGS: &[&str] = &["paper", "small"];

/// The reference's settings (`networks/run_dcgan.py`): 256² maps, z of 64,
/// 64 filters at the generator's last and the discriminator's first
/// layer, four layers each, labels flipped in 1 % of the steps.
pub fn paper() -> CosmoGanConfig {
    CosmoGanConfig {
        name: "paper".into(),
        side: 256,
        noise: 64,
        generator_filters: 64,
        discriminator_filters: 64,
        layers: 4,
        flip_labels: 0.01,
    }
}

/// For tests and CPUs: 64² maps (the reference's default `output_size`,
/// `networks/models/main.py`) through the same layers with 16 filters, a
/// sixteenth of the channels' work on a sixteenth of the pixels.
pub fn small() -> CosmoGanConfig {
    CosmoGanConfig { name: "small".into(), side: 64, generator_filters: 16, discriminator_filters: 16, ..paper() }
}

/// The configuration called `name`.
pub fn by_name(name: &str) -> Option<CosmoGanConfig> {
    match name {
        "paper" => Some(paper()),
        "small" => Some(small()),
        _ => None,
    }
}
