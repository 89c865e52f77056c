//! `simgen cosmo`: dark-matter volumes for CosmoFlow by Lagrangian
//! perturbation theory (Zel'dovich or 2LPT), optionally moved on by
//! particle-mesh N-body steps.
//!
//! Each step is a tested function: [`transfer`] (Eisenstein & Hu's
//! transfer function with baryon wiggles, their no-wiggle form, or a CAMB
//! or CLASS table read by [`transfer_table`]), [`cosmology`]
//! (σ8-normalised P(k), growth D1 and D2), [`field`] (Gaussian initial
//! conditions, displacements), [`pm`] (the particle-mesh stepper),
//! [`assign`] (NGP/CIC, int16 sub-volumes), [`pk`] (the P(k) estimator),
//! [`halofit`] (the nonlinear spectrum it is compared with), [`generate`]
//! (a box into CosmoFlow samples).

pub mod assign;
pub mod cosmology;
pub mod fft3;
pub mod field;
pub mod generate;
pub mod halofit;
pub mod maps;
pub mod pk;
pub mod pm;
pub mod transfer;
pub mod transfer_table;
