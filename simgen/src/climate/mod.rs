//! Climate fields for the segmentation models (Kurth et al. 2018's
//! DeepCAM data): 16 CAM5 channels on a longitude-latitude grid with
//! tropical cyclones and atmospheric rivers, and their masks; `generate`
//! writes them as the HDF5 samples `simgen climate` produces.
pub mod bounds;
pub mod channels;
pub mod features;
pub mod field;
pub mod generate;
pub mod stats;
