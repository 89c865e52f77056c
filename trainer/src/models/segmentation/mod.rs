//! The climate segmentation models of Kurth et al., "Exascale deep
//! learning for climate analytics" (SC18): [`tiramisu`] and [`deeplab`]
//! (DeepLabv3+), trained on DeepCAM HDF5 ([`data`]) to segment tropical
//! cyclones and atmospheric rivers. What they share: class weights from
//! the training labels' frequencies ([`weights`]), the per-pixel weighted
//! cross-entropy ([`loss`]), intersection over union ([`iou`]), grouped
//! BatchNorm and seeded dropout ([`layers`]), and the engine glue
//! ([`model`]).

pub mod data;
pub mod deeplab;
pub mod flops;
pub mod iou;
pub mod layers;
pub mod loss;
pub mod model;
pub mod tiramisu;
pub mod weights;

pub use model::{Network, SegmentationModel};

/// Classes of the DeepCAM labels: 0 background, 1 tropical cyclone, 2
/// atmospheric river (the MLPerf HPC DeepCAM order).
pub const CLASSES: usize = 3;

/// The configurations `--config` accepts for the Tiramisu.
pub const TIRAMISU_CONFIGS: &[&str] = &["paper", "growth16", "small"];

/// The configurations `--config` accepts for DeepLabv3+.
pub const DEEPLAB_CONFIGS: &[&str] = &["paper", "small"];
