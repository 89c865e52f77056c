//! `simgen cosmo`: dark-matter volumes for CosmoFlow by Lagrangian
//! perturbation theory (Zel'dovich or 2LPT, what COLA builds on).
//!
//! Each step is a tested function: [`transfer`] (Eisenstein & Hu's
//! transfer function with baryon wiggles, their no-wiggle form, or a CAMB
//! or CLASS table read by [`transfer_table`]), [`cosmology`]
//! (σ8-normalised P(k), growth D1 and D2), [`field`] (Gaussian initial
//! conditions, displacements), [`assign`] (NGP/CIC, int16 sub-volumes),
//! [`pk`] (the P(k) estimator), [`generate`] (a box into CosmoFlow samples).

pub mod assign;
pub mod cosmology;
pub mod fft3;
pub mod field;
pub mod generate;
pub mod pk;
pub mod transfer;
pub mod transfer_table;
