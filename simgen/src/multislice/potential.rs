//! Projected potentials and projected electron densities of a specimen on a
//! grid, built in reciprocal space from scattering factors.
//!
//! Each atom enters as its scattering factor times the phase of its exact
//! position, `f(|k|) exp(-2πi k·r)`, so atoms sit at sub-pixel positions
//! with no interpolation, and the result is periodic like the cell. The
//! spectrum is kept up to Nyquist: the antialiasing band limit belongs to
//! the transmission function made from the potential
//! ([`wave`](super::wave)), as in abTEM's "infinite" projection. Summing
//! over atoms is a separable outer product per atom,
//! `exp(-2πi kx x) · exp(-2πi ky y)`.
//!
//! Units: Kirkland's potential is V(r) = 2π a0 e ∫ f_e(q) exp(2πi q·r) d³q
//! (Kirkland 2010, ch. 5 and Appendix C), so the 2-D transform of the
//! projected potential of one atom is 2π a0 e f_e(k) in V·Å³; on a grid of
//! area A the Fourier coefficient is that over A, and the inverse DFT sum
//! gives V·Å. The electron density's transform is the X-ray form factor
//! f_x(k) (electrons) from the Mott–Bethe relation, [`Element::density_factor_q2`].

use std::collections::BTreeMap;

use rustfft::num_complex::Complex32;

use super::crystal::Atom;
use super::elements::{BOHR_ANGSTROM, ELECTRON_CHARGE_VOLT_ANGSTROM, Element};
use super::fft2::Fft2;
use super::grid::Grid;
use super::specimen::Specimen;

/// What a sample's target image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Projected electron density, electrons/Å² (what Laanait et al.
    /// trained on).
    Density,
    /// Projected potential, V·Å.
    Potential,
}

/// Per-element scattering factors on a transposed spectrum (`[kx][ky]`),
/// scaled to Fourier coefficients of the grid, up to Nyquist.
/// Made once per grid and shared by every thread.
pub struct FactorTables {
    grid: Grid,
    tables: BTreeMap<Element, Vec<f32>>,
}

impl FactorTables {
    /// Tables of `elements` for `target` on `grid`, atoms at rest (what a
    /// frozen-phonon configuration's slices are made of: it displaces the
    /// atoms themselves).
    pub fn new(grid: Grid, target: Target, elements: impl IntoIterator<Item = Element>) -> FactorTables {
        Self::thermal(grid, target, elements, &|_| 0.0)
    }

    /// Tables of the thermal average of atoms vibrating with an RMS
    /// displacement of `sigma(element)` Å per axis: each factor times the
    /// Debye-Waller factor exp(-B s²) with B = 8π²σ² and s = q/2, that is
    /// exp(-2π²σ²q²) (International Tables for Crystallography Vol. C,
    /// §6.1.1.3). A target image is this average: the density of the
    /// specimen the frozen-phonon patterns average over. It also keeps the
    /// target positive: the at-rest density's factor falls only as 1/q²,
    /// and cut at Nyquist it rings below zero between atoms.
    pub fn thermal(
        grid: Grid,
        target: Target,
        elements: impl IntoIterator<Item = Element>,
        sigma: &dyn Fn(Element) -> f64,
    ) -> FactorTables {
        let tables = elements.into_iter().map(|e| (e, Self::table_of(grid, target, e, sigma(e)))).collect();
        FactorTables { grid, tables }
    }

    /// The grid the tables are for.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// An FFT planned for [`project`] with these tables: every kx row (the
    /// tables cover the whole spectrum).
    pub fn fft(&self) -> Fft2 {
        Fft2::new(self.grid.n, self.grid.full_band())
    }

    /// The factor at every point of the transposed spectrum, up to Nyquist:
    /// no antialiasing disc. A potential is exponentiated into a
    /// transmission function, and it is that function, not the potential,
    /// which multislice band-limits (Kirkland 2010, ch. 6; abTEM forms
    /// exp(iσV) from the full-resolution potential and band-limits it):
    /// cutting the potential first removes the sharp cores of heavy atoms
    /// before the exponential, and their patterns converge slowly with
    /// sampling. A target image is not multiplied with anything, so it
    /// keeps the whole spectrum too (a disc's edge rings, down to negative
    /// densities).
    fn table_of(grid: Grid, target: Target, element: Element, sigma: f64) -> Vec<f32> {
        let scale = match target {
            Target::Potential => {
                2.0 * std::f64::consts::PI * BOHR_ANGSTROM * ELECTRON_CHARGE_VOLT_ANGSTROM / grid.area()
            }
            Target::Density => 1.0 / grid.area(),
        };
        let n = grid.n;
        let mut table = Vec::with_capacity(n * n);
        for i in 0..n {
            let kx = grid.kx(i);
            for j in 0..n {
                let k2 = kx * kx + grid.ky(j).powi(2);
                let f = match target {
                    Target::Potential => element.electron_factor_q2(k2),
                    Target::Density => element.density_factor_q2(k2),
                };
                let debye_waller = (-2.0 * std::f64::consts::PI.powi(2) * sigma * sigma * k2).exp();
                table.push((scale * f * debye_waller) as f32);
            }
        }
        table
    }
}

/// The projected potential (or density) of `atoms`, real space `[y][x]`.
/// `fft` must be planned by [`FactorTables::fft`].
///
/// # Panics
/// If an atom's element has no table (the tables are made from the
/// specimen's elements).
pub fn project<'a>(atoms: impl IntoIterator<Item = &'a Atom>, tables: &FactorTables, fft: &mut Fft2) -> Vec<f32> {
    let grid = tables.grid;
    let n = grid.n;
    let mut by_element: BTreeMap<Element, Vec<[f64; 2]>> = BTreeMap::new();
    for a in atoms {
        by_element.entry(a.element).or_default().push([a.position[0], a.position[1]]);
    }
    let mut spectrum = vec![Complex32::default(); n * n];
    let mut structure = vec![Complex32::default(); n * n];
    let kx: Vec<f64> = (0..n).map(|i| grid.kx(i)).collect();
    let ky: Vec<f64> = (0..n).map(|j| grid.ky(j)).collect();
    for (element, positions) in &by_element {
        // The structure factor S[i][j] = Σ_a exp(-2πi kx_i x_a)
        // exp(-2πi ky_j y_a) is the product of two matrices, [n × atoms]
        // of x phases and [atoms × n] of y phases: one complex product
        // rather than an outer product added per atom, which ran at a
        // fraction of the core's multiply-add rate (the slices took most
        // of a thick specimen's sample).
        let atoms = positions.len();
        let mut x_phases = vec![Complex32::default(); n * atoms];
        let mut y_phases = vec![Complex32::default(); atoms * n];
        for (a, &[x, y]) in positions.iter().enumerate() {
            for (i, &k) in kx.iter().enumerate() {
                x_phases[i * atoms + a] = phase(k * x);
            }
            for (e, &k) in y_phases[a * n..(a + 1) * n].iter_mut().zip(&ky) {
                *e = phase(k * y);
            }
        }
        complex_product(&x_phases, &y_phases, [n, atoms, n], &mut structure);
        for ((out, s), f) in spectrum.iter_mut().zip(&structure).zip(&tables.tables[element]) {
            *out += s * *f;
        }
    }
    fft.inverse(&mut spectrum);
    spectrum.into_iter().map(|c| c.re).collect()
}

/// `out` [m × n] = `a` [m × k] · `b` [k × n], all row-major, on the
/// calling thread (the slices are made in parallel already).
fn complex_product(a: &[Complex32], b: &[Complex32], [m, k, n]: [usize; 3], out: &mut [Complex32]) {
    assert!(a.len() == m * k && b.len() == k * n && out.len() == m * n, "operands of a {m}x{k}x{n} product");
    let one = Complex32::new(1.0, 0.0);
    // SAFETY: the three slices hold the row-major matrices the strides
    // describe (checked above), `out` is borrowed mutably and overlaps
    // neither operand, and `read_dst` false has it written, not read.
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            Complex32::default(),
            one,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// exp(-2πi t), computed in f64 so large positions keep their phase.
fn phase(t: f64) -> Complex32 {
    let (s, c) = (-2.0 * std::f64::consts::PI * t.fract()).sin_cos();
    Complex32::new(c as f32, s as f32)
}

/// The projected potential of each of `count` equal slices of `specimen`
/// (atoms belong to the slice their z falls in), real space `[y][x]`, V·Å.
/// Slices are independent, so they are made in parallel on the current
/// rayon pool. `tables` must be [`Target::Potential`] tables.
pub fn slice_potentials(specimen: &Specimen, tables: &FactorTables, count: usize) -> Vec<Vec<f32>> {
    use rayon::prelude::*;
    let dz = specimen.lengths[2] / count as f64;
    let mut members: Vec<Vec<&Atom>> = vec![Vec::new(); count];
    for a in &specimen.atoms {
        let s = ((a.position[2] / dz) as usize).min(count - 1);
        members[s].push(a);
    }
    members.into_par_iter().map_init(|| tables.fft(), |fft, atoms| project(atoms, tables, fft)).collect()
}

/// The distinct elements of `atoms`.
pub fn elements_of(atoms: &[Atom]) -> Vec<Element> {
    let mut out: Vec<Element> = atoms.iter().map(|a| a.element).collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::super::crystal::Crystal;
    use super::*;

    fn grid_and_specimen() -> (Grid, Specimen) {
        let cell = Crystal::built_in("Si").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        let specimen = Specimen::build(&cell, [2, 2], 5.4310).unwrap();
        let d = 2.0 * 5.4310 / 64.0;
        (Grid { n: 64, dx: d, dy: d }, specimen)
    }

    /// The density's k = 0 coefficient is Σ Z / A exactly, so the pixel sum
    /// times the pixel area is the electron count: a check of the units and
    /// the grid's scaling (cutting the spectrum at Nyquist moves no charge).
    #[test]
    fn projected_density_integrates_to_the_electrons_in_the_cell() {
        let (grid, specimen) = grid_and_specimen();
        let tables = FactorTables::new(grid, Target::Density, elements_of(&specimen.atoms));
        let mut fft = tables.fft();
        let rho = project(&specimen.atoms, &tables, &mut fft);
        let total: f64 = rho.iter().map(|&v| f64::from(v)).sum::<f64>() * grid.dx * grid.dy;
        let want = specimen.electrons() as f64;
        assert!((total / want - 1.0).abs() < 0.01, "{total} electrons, want {want}");
        // Density peaks on atoms: the pixel of the atom at the origin beats
        // the mean by far.
        let mean = rho.iter().sum::<f32>() / rho.len() as f32;
        assert!(rho[0] > 10.0 * mean, "{} vs mean {mean}", rho[0]);
    }

    /// The projection is linear in the atoms: the structure factor of
    /// many atoms, a product over all of them, equals the sum of each
    /// atom's own projection (one-atom products), two elements mixed, on
    /// a grid side that is not a power of two.
    #[test]
    fn projecting_atoms_together_equals_the_sum_of_projecting_each() {
        let cell = Crystal::built_in("GaAs").unwrap().orthogonal_cell([0, 0, 1]).unwrap();
        let specimen = Specimen::build(&cell, [1, 1], 5.6533).unwrap();
        let n = 48;
        let d = cell.lengths[0] / n as f64;
        let grid = Grid { n, dx: d, dy: d };
        let tables = FactorTables::new(grid, Target::Potential, elements_of(&specimen.atoms));
        let mut fft = tables.fft();
        assert!(specimen.atoms.len() >= 4 && elements_of(&specimen.atoms).len() == 2);
        let together = project(&specimen.atoms, &tables, &mut fft);
        let mut each = vec![0.0f64; n * n];
        for atom in &specimen.atoms {
            for (sum, v) in each.iter_mut().zip(project([atom], &tables, &mut fft)) {
                *sum += f64::from(v);
            }
        }
        let peak = each.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (t, e) in together.iter().zip(&each) {
            assert!((f64::from(*t) - e).abs() <= 1e-4 * peak, "{t} against {e} (peak {peak})");
        }
    }

    /// The target is the thermal average (default displacement 0.076 Å):
    /// no pixel of any built-in crystal's density is negative beyond float
    /// noise, at sub-pixel offsets, where the at-rest density rang below
    /// zero, and it still holds every electron (the Debye-Waller factor is
    /// 1 at q = 0).
    #[test]
    fn the_thermally_averaged_density_is_never_negative_and_holds_every_electron() {
        for name in super::super::crystal::BUILT_IN {
            let cell = Crystal::built_in(name).unwrap().orthogonal_cell([0, 0, 1]).unwrap();
            for n in [64, 128, 256] {
                let repeats = [2, 2];
                let grid = Grid { n, dx: 2.0 * cell.lengths[0] / n as f64, dy: 2.0 * cell.lengths[1] / n as f64 };
                if grid.dx.max(grid.dy) > 0.1 {
                    continue;
                }
                let mut specimen = Specimen::build(&cell, repeats, 10.0).unwrap();
                specimen.shift(0.3137, 0.1234);
                let elements = elements_of(&specimen.atoms);
                let tables = FactorTables::thermal(grid, Target::Density, elements, &|_| 0.076);
                let rho = project(&specimen.atoms, &tables, &mut tables.fft());
                let max = rho.iter().copied().fold(f32::MIN, f32::max);
                let min = rho.iter().copied().fold(f32::MAX, f32::min);
                assert!(min > -1e-5 * max, "{name} at {:.3} Å: min {min}, max {max}", grid.dx.max(grid.dy));
                let total: f64 = rho.iter().map(|&v| f64::from(v)).sum::<f64>() * grid.dx * grid.dy;
                let want = specimen.electrons() as f64;
                assert!((total / want - 1.0).abs() < 1e-3, "{name}: {total} electrons, want {want}");
            }
        }
    }

    /// A single atom's projected potential against Kirkland's real-space
    /// formula at a distance well inside the band: v(r) = 4π² a0 e Σ a_i
    /// K0(2πr√b_i) + 2π² a0 e Σ (c_i/d_i) exp(-π² r²/d_i) is what the grid's
    /// Nyquist limit smooths; at 1 Å it changes slowly enough to agree to 3 %.
    #[test]
    fn one_atoms_potential_matches_the_real_space_formula_away_from_the_core() {
        let n = 256;
        let d = 0.05;
        let grid = Grid { n, dx: d, dy: d };
        let si = Element::from_symbol("Si").unwrap();
        let atom = Atom { element: si, position: [0.0, 0.0, 0.0] };
        let tables = FactorTables::new(grid, Target::Potential, [si]);
        let v = project([&atom], &tables, &mut tables.fft());
        // 1 Å along x is pixel 20. Kirkland's parameters for Si:
        let p = super::super::kirkland_table::PARAMETERS[13];
        let a0e = BOHR_ANGSTROM * ELECTRON_CHARGE_VOLT_ANGSTROM;
        let pi = std::f64::consts::PI;
        let r: f64 = 1.0;
        let mut want = 0.0;
        for i in 0..3 {
            want += 4.0 * pi * pi * a0e * p[i] * bessel_k0(2.0 * pi * r * p[3 + i].sqrt());
            want += 2.0 * pi * pi * a0e * p[6 + i] / p[9 + i] * (-pi * pi * r * r / p[9 + i]).exp();
        }
        // The periodic images and the mean potential offset the grid's
        // value; compare against the drop from the cell's far corner.
        let got = f64::from(v[20]) - f64::from(v[(n / 2) * n + n / 2]);
        assert!((got / want - 1.0).abs() < 0.03, "v(1 Å) = {got} V·Å, formula {want}");
    }

    /// K0 by its integral K0(x) = ∫_0^∞ exp(-x cosh t) dt (trapezoid), enough
    /// for a test reference.
    fn bessel_k0(x: f64) -> f64 {
        let h = 1e-3;
        (0..20_000).map(|i| (-(x * (f64::from(i) * h).cosh())).exp() * if i == 0 { 0.5 } else { 1.0 }).sum::<f64>() * h
    }

    #[test]
    fn slices_split_the_atoms_and_sum_to_the_whole_projection() {
        let (grid, specimen) = grid_and_specimen();
        let tables = FactorTables::new(grid, Target::Potential, elements_of(&specimen.atoms));
        let mut fft = tables.fft();
        let slices = slice_potentials(&specimen, &tables, 4);
        let whole = project(&specimen.atoms, &tables, &mut fft);
        for (p, w) in whole.iter().enumerate() {
            let sum: f32 = slices.iter().map(|s| s[p]).sum();
            assert!((sum - w).abs() < 1e-3 * w.abs().max(1.0), "pixel {p}: {sum} vs {w}");
        }
    }
}
