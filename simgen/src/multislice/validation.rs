//! The physics checks of the issue, end to end through the modules: probe
//! normalisation, conservation of electrons, the symmetry of a CBED
//! pattern, and Kirkland's textbook HRTEM image.

use rustfft::num_complex::Complex32;

use super::crystal::{Atom, Crystal};
use super::elements::Element;
use super::fft2::Fft2;
use super::grid::Grid;
use super::optics::{Aberrations, Beam};
use super::potential::{FactorTables, Target, elements_of, slice_potentials};
use super::specimen::{SAMPLING_TOLERANCE, Specimen, fit_axis};
use super::wave::{Probe, Slices, add_pattern, lens_image, probe_at};

fn beam(kv: f64) -> Beam {
    Beam::new(kv * 1000.0).unwrap()
}

fn probe() -> Probe {
    Probe { semiangle: 0.020, aberrations: Aberrations::default() }
}

#[test]
fn a_probe_carries_exactly_one_electron() {
    let grid = Grid { n: 128, dx: 0.1, dy: 0.1 };
    let mut fft = Fft2::new(grid.n, grid.band());
    let spectrum = Probe { semiangle: 0.025, aberrations: Aberrations { defocus: 50.0, cs: 1e4, c5: 0.0 } }
        .spectrum(beam(200.0), grid);
    let mut psi = vec![Complex32::default(); grid.n * grid.n];
    probe_at(&spectrum, grid, 3.3, 7.1, &mut psi, &mut fft);
    let total: f64 = psi.iter().map(|c| f64::from(c.norm_sqr())).sum();
    assert!((total - 1.0).abs() < 1e-6, "Σ|ψ|² = {total}");
}

/// With the potential off every transmission function is 1 and the
/// propagator a pure phase inside the disc, so no electron may be lost or
/// made in 100 slices.
#[test]
fn an_empty_specimen_conserves_intensity_over_a_hundred_slices() {
    let grid = Grid { n: 128, dx: 0.1, dy: 0.1 };
    let mut fft = Fft2::new(grid.n, grid.band());
    let zero = vec![vec![0f32; grid.n * grid.n]; 100];
    let slices = Slices::new(&zero, 2.0, beam(200.0), grid, [0.0, 0.0]);
    let mut psi = vec![Complex32::default(); grid.n * grid.n];
    probe_at(&probe().spectrum(beam(200.0), grid), grid, 6.4, 6.4, &mut psi, &mut fft);
    slices.propagate(&mut psi, &mut fft);
    let mut pattern = vec![0f32; grid.n * grid.n];
    add_pattern(&psi, grid.n, 1.0, &mut pattern);
    let total: f64 = pattern.iter().map(|&v| f64::from(v)).sum();
    assert!((total - 1.0).abs() < 1e-5, "intensity after 100 slices {total}");
}

/// Si along [001] with the probe on an atomic column. The diamond
/// structure's column axis is four-fold only in projection (in depth it is
/// a 4̄ axis: the neighbours at a/4 and 3a/4 swap under a quarter turn), so
/// each slice is one whole cell thick: every slice's projected potential
/// is then four-fold about the column, and the pattern must be too, to
/// 1e-4 of its largest value, or the grid, the probe or the FFTs broke it.
#[test]
fn silicon_001_cbed_on_a_column_has_four_fold_symmetry() {
    let cell = Crystal::built_in("Si").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
    let (repeats, d) = fit_axis(cell.lengths[0], 256, 0.1, SAMPLING_TOLERANCE).unwrap();
    let cells = 9;
    let thickness = cells as f64 * cell.lengths[2];
    let specimen = Specimen::build(&cell, [repeats, repeats], thickness).unwrap();
    let grid = Grid { n: 256, dx: d, dy: d };
    let mut fft = Fft2::new(grid.n, grid.band());
    let tables = FactorTables::new(grid, Target::Potential, elements_of(&specimen.atoms));
    let potentials = slice_potentials(&specimen, &tables, cells);
    let slices = Slices::new(&potentials, cell.lengths[2], beam(200.0), grid, [0.0, 0.0]);
    // The column at the origin, a grid point: the grid itself is then
    // symmetric about the probe (the field of view is periodic).
    let mut psi = vec![Complex32::default(); grid.n * grid.n];
    probe_at(&probe().spectrum(beam(200.0), grid), grid, 0.0, 0.0, &mut psi, &mut fft);
    slices.propagate(&mut psi, &mut fft);
    let n = grid.n;
    let mut pattern = vec![0f32; n * n];
    add_pattern(&psi, n, 1.0, &mut pattern);
    let peak = pattern.iter().copied().fold(0.0, f32::max);
    let h = (n / 2) as i64;
    let at = |x: i64, y: i64| pattern[((y + h) as usize) * n + (x + h) as usize];
    let mut worst = 0f32;
    for y in -h + 1..h {
        for x in -h + 1..h {
            worst = worst.max((at(x, y) - at(-y, x)).abs());
        }
    }
    assert!(worst <= 1e-4 * peak, "largest difference under a 90° turn {worst}, peak {peak}");
}

/// Kirkland's test specimen (C, Si, Cu, Au, U in a 50 × 50 × 8 Å cell) in
/// plane-wave bright field at 200 kV, Δf 700 Å, Cs 1.3 mm, objective
/// aperture 10.37 mrad: Kirkland 2010, Fig. 5.12, whose intensity runs from
/// 0.72 to 1.03.
#[test]
fn kirklands_single_atom_hrtem_image_has_the_published_contrast_range() {
    let grid = Grid { n: 512, dx: 50.0 / 512.0, dy: 50.0 / 512.0 };
    let atoms: Vec<Atom> = ["C", "Si", "Cu", "Au", "U"]
        .iter()
        .enumerate()
        .map(|(i, s)| Atom { element: Element::from_symbol(s).unwrap(), position: [7.0 + 9.0 * i as f64, 25.0, 4.0] })
        .collect();
    let specimen = Specimen { lengths: [50.0, 50.0, 8.0], atoms };
    let mut fft = Fft2::new(grid.n, grid.band());
    let tables = FactorTables::new(grid, Target::Potential, elements_of(&specimen.atoms));
    let potentials = slice_potentials(&specimen, &tables, 1);
    let slices = Slices::new(&potentials, 8.0, beam(200.0), grid, [0.0, 0.0]);
    let mut psi = vec![Complex32::new(1.0, 0.0); grid.n * grid.n];
    slices.propagate(&mut psi, &mut fft);
    let lens = Probe { semiangle: 10.37e-3, aberrations: Aberrations { defocus: 700.0, cs: 1.3e7, c5: 0.0 } };
    let image = lens_image(&mut psi, beam(200.0), grid, &lens, &mut fft);
    let (lo, hi) = image.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!((lo - 0.72).abs() <= 0.01 && (hi - 1.03).abs() <= 0.01, "intensity {lo} .. {hi}, want 0.72 .. 1.03");
}
