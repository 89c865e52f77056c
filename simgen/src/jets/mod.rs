//! Collision events for HEP-CNN (Kurth et al. 2018 §V; Bhimji et al. 2017):
//! R-parity-violating gluino pairs against QCD multi-jet background, with
//! pile-up, seen by a cylindrical detector unrolled into three-channel
//! (η, φ) images; `generate` makes one event from its index, `simgen jets`
//! writes them in the HEP-CNN benchmark's HDF5 layout (`formats::jets`).
//!
//! - [`kinematics`]: four-momenta, boosts, n-body phase space (GENBOD).
//! - [`process`]: the partons of signal and background events.
//! - [`detector`]: hadronisation, pile-up, calorimeters and tracks.
//! - [`generate`]: an event from the seed and its index; the cut-based
//!   selection.
pub mod detector;
pub mod generate;
pub mod kinematics;
pub mod process;
