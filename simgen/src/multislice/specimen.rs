//! The specimen a sample images: an orthogonal cell repeated across the
//! field of view and down to a thickness, then moved the way each sample
//! draws it (lateral offset, thermal displacements).

use super::crystal::{Atom, OrthogonalCell};
use super::elements::Element;
use crate::random::Normals;

/// A slab of atoms, periodic across x and y; the beam runs along z from 0
/// to `lengths[2]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Specimen {
    /// Extent along x, y (the periodic field of view) and z (thickness), Å.
    pub lengths: [f64; 3],
    /// Atoms, Cartesian Å, x and y in `[0, lengths)`.
    pub atoms: Vec<Atom>,
}

/// Why a specimen does not fit the grid asked for.
#[derive(Debug, thiserror::Error)]
pub enum SpecimenError {
    /// Thickness not positive and finite.
    #[error("thickness {0} Å must be positive")]
    Thickness(f64),
    /// The grid's sampling cannot tile the cell within tolerance.
    #[error(
        "a {grid}-pixel grid at {sampling} Å/pixel ({fov:.2} Å) cannot hold a whole number of {cell:.4} Å cells \
         within {tolerance}% (nearest: {repeats} cells at {actual:.4} Å/pixel); pick --grid or --sampling so that \
         grid × sampling is a multiple of the cell, or allow more with --sampling-tolerance"
    )]
    GridDoesNotFit {
        /// Pixels per side.
        grid: usize,
        /// Sampling asked for, Å.
        sampling: f64,
        /// grid × sampling, Å.
        fov: f64,
        /// Cell side, Å.
        cell: f64,
        /// Nearest whole number of cells.
        repeats: usize,
        /// The sampling those cells would give.
        actual: f64,
        /// Tolerance, percent.
        tolerance: f64,
    },
}

/// How far the sampling of a fitted field of view may stray from the one
/// asked for by default, relative: a tenth keeps pixels nearly what the
/// user chose while letting any grid hold a whole number of cells of a few
/// Å.
pub const SAMPLING_TOLERANCE: f64 = 0.1;

/// Whole cells along one axis for a field of view of `grid × sampling`,
/// and the sampling they give, which may differ from `sampling` by at most
/// `tolerance` (relative).
pub fn fit_axis(cell: f64, grid: usize, sampling: f64, tolerance: f64) -> Result<(usize, f64), SpecimenError> {
    let fov = grid as f64 * sampling;
    let repeats = ((fov / cell).round() as usize).max(1);
    let actual = repeats as f64 * cell / grid as f64;
    if (actual / sampling - 1.0).abs() > tolerance {
        return Err(SpecimenError::GridDoesNotFit {
            grid,
            sampling,
            fov,
            cell,
            repeats,
            actual,
            tolerance: tolerance * 100.0,
        });
    }
    Ok((repeats, actual))
}

impl Specimen {
    /// `cell` repeated `repeats[0] × repeats[1]` across and as deep as
    /// needed for `thickness` Å, keeping the atoms with z below it.
    pub fn build(cell: &OrthogonalCell, repeats: [usize; 2], thickness: f64) -> Result<Specimen, SpecimenError> {
        if !(thickness.is_finite() && thickness > 0.0) {
            return Err(SpecimenError::Thickness(thickness));
        }
        let layers = (thickness / cell.lengths[2]).ceil() as usize;
        let mut atoms = Vec::with_capacity(cell.atoms.len() * repeats[0] * repeats[1] * layers);
        for k in 0..layers {
            for j in 0..repeats[1] {
                for i in 0..repeats[0] {
                    let shift = [i as f64 * cell.lengths[0], j as f64 * cell.lengths[1], k as f64 * cell.lengths[2]];
                    for a in &cell.atoms {
                        let p = [a.position[0] + shift[0], a.position[1] + shift[1], a.position[2] + shift[2]];
                        if p[2] < thickness {
                            atoms.push(Atom { element: a.element, position: p });
                        }
                    }
                }
            }
        }
        let lengths = [cell.lengths[0] * repeats[0] as f64, cell.lengths[1] * repeats[1] as f64, thickness];
        Ok(Specimen { lengths, atoms })
    }

    /// Every atom moved by `(dx, dy)`, wrapped back into the periodic field.
    pub fn shift(&mut self, dx: f64, dy: f64) {
        for a in &mut self.atoms {
            a.position[0] = (a.position[0] + dx).rem_euclid(self.lengths[0]);
            a.position[1] = (a.position[1] + dy).rem_euclid(self.lengths[1]);
        }
    }

    /// One frozen-phonon configuration: every atom displaced by an
    /// independent Gaussian of standard deviation `sigma(element)` Å along
    /// each axis (the Einstein model of Debye–Waller displacements;
    /// Kirkland 2010, ch. 7, frozen phonons). z stays inside the slab.
    pub fn displaced(&self, sigma: &dyn Fn(Element) -> f64, draw: &mut Normals) -> Specimen {
        let mut out = self.clone();
        for a in &mut out.atoms {
            let sigma = sigma(a.element);
            a.position[0] = (a.position[0] + sigma * draw.normal()).rem_euclid(self.lengths[0]);
            a.position[1] = (a.position[1] + sigma * draw.normal()).rem_euclid(self.lengths[1]);
            a.position[2] = (a.position[2] + sigma * draw.normal()).clamp(0.0, self.lengths[2] * (1.0 - 1e-12));
        }
        out
    }

    /// Electrons of the neutral atoms: what the projected density integrates to.
    pub fn electrons(&self) -> u64 {
        self.atoms.iter().map(|a| u64::from(a.element.z())).sum()
    }
}

/// `count` equal slices over `thickness` Å, as close to `slice` Å each as a
/// whole number allows (abTEM's equal slicing); `None` if a slice would be
/// thicker than the specimen.
pub fn slice_count(thickness: f64, slice: f64) -> Option<usize> {
    if !(slice.is_finite() && slice > 0.0) || slice > thickness {
        return None;
    }
    Some(((thickness / slice).round() as usize).max(1))
}

#[cfg(test)]
mod tests {
    use super::super::crystal::Crystal;
    use super::*;

    #[test]
    fn silicon_slab_has_eight_atoms_per_cell_volume() {
        let cell = Crystal::built_in("Si").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        let s = Specimen::build(&cell, [3, 2], 5.4310 * 4.0).unwrap();
        assert_eq!(s.atoms.len(), 8 * 3 * 2 * 4);
        assert_eq!(s.electrons(), 14 * 8 * 3 * 2 * 4);
        // A thickness between layers keeps only the atoms above it.
        let thin = Specimen::build(&cell, [1, 1], 2.0).unwrap();
        assert!(thin.atoms.iter().all(|a| a.position[2] < 2.0));
        assert_eq!(thin.atoms.len(), 4, "z = 0 and z = a/4 layers of the diamond cell");
    }

    #[test]
    fn a_grid_fits_whole_cells_or_names_the_nearest() {
        // 512 × 0.05 = 25.6 Å ≈ 4.71 Si cells: 5 cells at 0.0530 Å/pixel.
        let (repeats, actual) = fit_axis(5.4310, 512, 0.05, SAMPLING_TOLERANCE).unwrap();
        assert_eq!(repeats, 5);
        assert!((actual - 5.0 * 5.4310 / 512.0).abs() < 1e-12);
        // 64 × 0.1 = 6.4 Å: one MoS2 a√3 = 5.47 Å cell is 15 % off.
        let err = fit_axis(5.473, 64, 0.1, SAMPLING_TOLERANCE).unwrap_err().to_string();
        assert!(err.contains("cannot hold a whole number"), "{err}");
        // A wider tolerance (a list of many cells) takes it.
        assert_eq!(fit_axis(5.473, 64, 0.1, 0.2).unwrap().0, 1);
    }

    #[test]
    fn shifts_and_phonons_keep_atoms_inside_the_field() {
        let cell = Crystal::built_in("GaAs").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        let mut s = Specimen::build(&cell, [2, 2], 10.0).unwrap();
        s.shift(-3.7, 100.2);
        let d = s.displaced(&|_| 0.5, &mut Normals::new(7));
        for a in s.atoms.iter().chain(&d.atoms) {
            for k in 0..3 {
                assert!(a.position[k] >= 0.0 && a.position[k] < s.lengths[k], "{:?}", a.position);
            }
        }
        assert_ne!(s, d);
    }

    #[test]
    fn each_element_vibrates_with_its_own_displacement() {
        let cell = Crystal::built_in("GaAs").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        let s = Specimen::build(&cell, [6, 6], 60.0).unwrap();
        let sigma = |e: Element| if e.symbol() == "Ga" { 0.05 } else { 0.12 };
        let d = s.displaced(&sigma, &mut Normals::new(3));
        for symbol in ["Ga", "As"] {
            let (mut sum, mut count) = (0.0, 0);
            for (a, b) in s.atoms.iter().zip(&d.atoms).filter(|(a, _)| a.element.symbol() == symbol) {
                for k in 0..2 {
                    let step = (b.position[k] - a.position[k]).rem_euclid(s.lengths[k]);
                    let step = if step > s.lengths[k] / 2.0 { step - s.lengths[k] } else { step };
                    sum += step * step;
                    count += 1;
                }
            }
            let rms = (sum / f64::from(count)).sqrt();
            let expected = sigma(s.atoms.iter().find(|a| a.element.symbol() == symbol).unwrap().element);
            assert!((rms / expected - 1.0).abs() < 0.05, "{symbol}: RMS {rms} against {expected} over {count}");
        }
    }

    #[test]
    fn slices_are_equal_and_never_thicker_than_the_specimen() {
        assert_eq!(slice_count(200.0, 2.0), Some(100));
        assert_eq!(slice_count(201.0, 2.0), Some(101));
        assert_eq!(slice_count(5.0, 6.0), None);
        assert_eq!(slice_count(5.0, 0.0), None);
    }
}
