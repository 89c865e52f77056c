//! What the climate segmentation models (Tiramisu and DeepLabv3+, Kurth
//! et al., "Exascale deep learning for climate analytics", SC18) share:
//! class weights from the training labels' frequencies ([`weights`]), the
//! per-pixel weighted cross-entropy ([`loss`]) and the intersection over
//! union of each class ([`iou`]).

pub mod iou;
pub mod loss;
pub mod weights;

/// Classes of the DeepCAM labels: 0 background, 1 tropical cyclone, 2
/// atmospheric river (the MLPerf HPC DeepCAM order).
pub const CLASSES: usize = 3;
