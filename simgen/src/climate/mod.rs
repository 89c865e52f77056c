//! Climate fields for the segmentation models (P9): 16 CAM5 channels on a
//! longitude-latitude grid with tropical cyclones and atmospheric rivers,
//! and their masks. Building blocks so far; the `simgen climate` command is
//! still to come.
pub mod channels;
pub mod features;
pub mod field;
pub mod generate;
pub mod stats;
