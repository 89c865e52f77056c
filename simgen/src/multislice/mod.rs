//! Multislice electron scattering: convergent-beam diffraction (CBED)
//! stacks and projected densities of crystals, for the inverse-imaging
//! model of Laanait et al.
pub mod cif;
pub mod crystal;
pub mod debye_waller;
pub mod elements;
pub mod fft2;
pub mod generate;
pub mod grid;
mod kirkland_table;
pub mod optics;
pub mod potential;
pub mod specimen;
pub mod store;
pub mod structure_list;
pub mod units;
pub mod wave;

#[cfg(test)]
mod validation;
