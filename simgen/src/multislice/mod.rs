//! Multislice electron scattering (P8): convergent-beam diffraction (CBED)
//! stacks and projected densities of crystals, for the inverse-imaging
//! model of Laanait et al.
pub mod crystal;
pub mod elements;
mod kirkland_table;
pub mod optics;
