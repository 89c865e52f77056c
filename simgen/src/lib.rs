//! Generates scientific training data straight into node-local storage:
//! [`cosmo`], dark-matter volumes for CosmoFlow; [`multislice`], electron
//! diffraction stacks and projected densities for the inverse-imaging
//! model; [`climate`], weather fields with cyclone and river masks for
//! the segmentation models; [`traces`], execution traces of a stochastic
//! simulator for the Etalumis inference network; [`jets`], collision events
//! (signal and background) as calorimeter images for HEP-CNN. [`output`] is what every generator shares:
//! claiming an empty output directory and writing its manifest from the
//! files the run wrote; [`heatmap`] draws their previews. The `simgen`
//! binary runs the generators on one rank or under `mpirun`.
//!
//! ```
//! use simgen::cosmo::cosmology::Cosmology;
//!
//! let c = Cosmology::REFERENCE;
//! assert!((c.transfer_no_wiggle(0.1) - 0.13126).abs() < 1e-4);
//! // With the baryon wiggles, T(k) oscillates about the smooth form.
//! assert!((c.transfer_eisenstein_hu(0.1) / c.transfer_no_wiggle(0.1) - 1.0).abs() < 0.05);
//! let (d1, _d2) = c.growth(0.5);
//! assert!(d1 < 0.7 && d1 > 0.5);
//! ```

pub mod climate;
pub mod cosmo;
pub mod heatmap;
pub mod image;
pub mod jets;
pub mod multislice;
pub mod output;
pub mod png;
pub mod random;
pub mod traces;
