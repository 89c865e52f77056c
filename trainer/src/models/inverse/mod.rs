//! The inverse-imaging network of Laanait et al., "Exascale Deep Learning
//! for Scientific Inverse Problems" (2019): from the stack of convergent-
//! beam diffraction (CBED) patterns taken at a grid of probe positions, it
//! reconstructs the projected electron density of the material, trained on
//! data each node simulates for itself (`simgen multislice`).
//!
//! The network is the FC-DenseNet of Jégou et al. 2017 (the same code as
//! the [Tiramisu](crate::models::segmentation::tiramisu)) with the two
//! changes Laanait et al. made: a large growth rate (256), so the first
//! layers keep the information of the many-channel input (one channel per
//! probe position), and average instead of max pooling; and ReLU then
//! dropout 0.5 after every dense block. Its output is one channel, the
//! density. The loss is [`huber`] with a decaying cutoff.
//!
//! - [`huber`]: the loss and its cutoff schedule.
//! - [`model`]: the engine glue (scattering stores, normalisation,
//!   validation against the mean image).

pub mod huber;
pub mod model;
pub mod picture;

use crate::models::segmentation::tiramisu::{DownPool, TiramisuConfig};

pub use model::InverseModel;

/// The configurations `--config` accepts.
pub const CONFIGS: &[&str] = &["paper", "small"];

/// The paper's network: 32×32 probe positions (1024 input channels) of
/// 512×512 patterns to a 512×512 density; growth 256, average pooling,
/// ReLU and dropout 0.5 after each dense block (Laanait et al. 2019). The
/// paper gives the growth rate and the parameter count (about 220 M), not
/// the layers per block: four dense blocks of 3 layers down, a 4-layer
/// bottleneck and the mirrored path up come to 220.3 M with a 256-map
/// first convolution, and are what we chose.
pub fn paper() -> TiramisuConfig {
    TiramisuConfig {
        name: "paper".into(),
        channels: 1024,
        classes: 1,
        first: 256,
        blocks: vec![3, 3, 3, 3, 4],
        growth: 256,
        kernel: 3,
        dropout: 0.0,
        input: [512, 512],
        pooling: DownPool::Avg,
        block_dropout: Some(0.5),
    }
}

/// A reduced network for tests and CPUs: 4×4 probe positions of 32×32
/// patterns, growth 16, two poolings. It keeps the ReLU after each dense
/// block but not the dropout: 0.5 after every block regularises a network
/// of 220 M parameters trained on millions of samples, and keeps one of
/// 0.1 M on a few dozen samples from learning at all in a test's time
/// (`--dropout 0.5` puts it back).
pub fn small() -> TiramisuConfig {
    TiramisuConfig {
        name: "small".into(),
        channels: 16,
        first: 16,
        blocks: vec![2, 2, 2],
        growth: 16,
        input: [32, 32],
        block_dropout: Some(0.0),
        ..paper()
    }
}

/// The configuration called `name`.
pub fn by_name(name: &str) -> Option<TiramisuConfig> {
    match name {
        "paper" => Some(paper()),
        "small" => Some(small()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::{Device, Tensor};

    use super::*;
    use crate::models::segmentation::layers::Pass;
    use crate::models::segmentation::tiramisu::tests::parameters;

    #[test]
    fn the_paper_network_has_about_the_papers_220_million_parameters() {
        let count = parameters(&paper()) as f64;
        assert!((count / 220e6 - 1.0).abs() < 0.01, "{count}");
    }

    #[test]
    fn the_small_network_maps_a_pattern_stack_to_one_image_of_its_size() {
        let config = small();
        let device = Device::flex();
        let x = Tensor::<4>::ones([2, 16, 32, 32], &device);
        assert_eq!(config.init(&device).forward(x, &mut Pass::inference()).dims(), [2, 1, 32, 32]);
    }
}
