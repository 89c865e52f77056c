//! Waves through a specimen: the probe, the transmission functions and
//! propagator of each slice, the multislice recursion, and what is recorded
//! at the end (a CBED pattern, or an image through the objective lens).
//!
//! The recursion (Kirkland 2010, ch. 6): for each slice, multiply the wave
//! by the slice's transmission function t = exp(iσ v_z), then propagate it
//! over the slice thickness Δz with the Fresnel propagator
//! P(k) = exp(-iπλΔz k² + 2πiΔz (kx tan θx + ky tan θy)) applied in
//! reciprocal space (the second term tilts the specimen by θ; ibid., the
//! propagator with specimen tilt). Both are cut to the antialiasing disc
//! ([`grid`](super::grid)); the transmission function is formed from the
//! potential at the grid's full resolution and cut afterwards (cutting the
//! potential first blunts heavy atoms' cores, and their patterns part from
//! abTEM's: `tests/abtem_cbed.rs`).

use rustfft::num_complex::Complex32;

use super::fft2::Fft2;
use super::grid::Grid;
use super::optics::{Aberrations, Beam};

/// Everything that does not depend on the probe position, made once per
/// specimen configuration and shared read-only by every position.
pub struct Slices {
    grid: Grid,
    /// The grid's band rows, found once (the propagation loop needs them every slice).
    band: (usize, usize),
    /// Band-limited transmission function of each slice, real space `[y][x]`.
    transmissions: Vec<Vec<Complex32>>,
    /// Propagator over one slice, transposed spectrum `[kx][ky]`, zero
    /// outside the disc, scaled by 1/n² (the inverse FFT does not divide).
    propagator: Vec<Complex32>,
}

impl Slices {
    /// Transmission functions of `potentials` (projected potential of each
    /// slice, V·Å, `[y][x]`) and the propagator over slices `dz` Å thick,
    /// for a specimen tilted by `tilt` (rad, about y then x).
    /// The slices are independent and made in parallel on the current rayon
    /// pool.
    pub fn new(potentials: &[Vec<f32>], dz: f64, beam: Beam, grid: Grid, tilt: [f64; 2]) -> Slices {
        use rayon::prelude::*;
        let n = grid.n;
        let sigma = beam.interaction_constant();
        let inside = grid.k2_in_band();
        let scale = 1.0 / (n * n) as f32;
        let transmissions = potentials
            .par_iter()
            .map_init(
                || Fft2::new(n, grid.band()),
                |fft, v| {
                    let mut t: Vec<Complex32> = v.iter().map(|&v| unit_phase(sigma * f64::from(v), 1.0)).collect();
                    fft.forward(&mut t);
                    for (c, k2) in t.iter_mut().zip(&inside) {
                        *c = if k2.is_some() { *c * scale } else { Complex32::default() };
                    }
                    fft.inverse(&mut t);
                    t
                },
            )
            .collect();
        let lambda = beam.wavelength();
        let (tx, ty) = (tilt[0].tan(), tilt[1].tan());
        let propagator_scale = f64::from(scale) / round_trip_gain(grid, &mut Fft2::new(n, grid.band())).sqrt();
        let mut propagator = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                propagator.push(match inside[i * n + j] {
                    None => Complex32::default(),
                    Some(k2) => {
                        let chi = -std::f64::consts::PI * lambda * dz * k2
                            + 2.0 * std::f64::consts::PI * dz * (grid.kx(i) * tx + grid.ky(j) * ty);
                        unit_phase(chi, propagator_scale)
                    }
                });
            }
        }
        Slices { grid, band: grid.band(), transmissions, propagator }
    }

    /// Slices in the specimen.
    pub fn len(&self) -> usize {
        self.transmissions.len()
    }

    /// Whether there are no slices.
    pub fn is_empty(&self) -> bool {
        self.transmissions.is_empty()
    }

    /// The grid.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// Send the real-space wave `psi` (`[y][x]`) through every slice. It
    /// comes back as the exit wave's transposed spectrum (`[kx][ky]`), scaled
    /// so that Σ|Ψ|² · n² = Σ|ψ|²; the last propagation is applied as a
    /// phase only, which leaves diffraction intensities unchanged.
    pub fn propagate(&self, psi: &mut [Complex32], fft: &mut Fft2) {
        let last = self.transmissions.len().saturating_sub(1);
        for (s, t) in self.transmissions.iter().enumerate() {
            for (p, t) in psi.iter_mut().zip(t) {
                *p *= t;
            }
            fft.forward(psi);
            multiply_band(psi, &self.propagator, self.band, self.grid.n);
            if s != last {
                fft.inverse(psi);
            }
        }
    }
}

/// `scale · exp(iθ)`, rounded to f32 from f64: f32 sine and cosine of
/// their own leave |exp(iθ)| short of 1 by ~7e-8 on average, and a
/// propagator applied 100 times then loses 1.4e-5 of the electrons.
fn unit_phase(theta: f64, scale: f64) -> Complex32 {
    let (s, c) = theta.sin_cos();
    Complex32::new((scale * c) as f32, (scale * s) as f32)
}

/// Power gain of one round trip of the f32 transforms (inverse, then
/// forward, divided by n²) on a wave band-limited to the disc: 1 in exact
/// arithmetic, but rustfft's f32 butterflies lose ~1.4e-7 of the power per
/// round trip on a 128² grid, so a probe through 100 empty slices came out
/// with 1.4e-5 of its electrons missing. The propagator divides the
/// measured gain out. The wave is deterministic noise, so the figure (and
/// every sample's bytes) never varies between runs.
fn round_trip_gain(grid: Grid, fft: &mut Fft2) -> f64 {
    let n = grid.n;
    let mut draw = crate::random::Normals::new(0x5eed);
    let mut wave: Vec<Complex32> = grid
        .k2_in_band()
        .into_iter()
        .map(|k2| match k2 {
            Some(_) => Complex32::new(draw.normal() as f32, draw.normal() as f32),
            None => Complex32::default(),
        })
        .collect();
    let power = |w: &[Complex32]| w.iter().map(|c| f64::from(c.norm_sqr())).sum::<f64>();
    let before = power(&wave);
    fft.inverse(&mut wave);
    fft.forward(&mut wave);
    let n2 = (n * n) as f64;
    let after = power(&wave) / (n2 * n2);
    if before > 0.0 { after / before } else { 1.0 }
}

/// `a *= b` over the kx rows inside the band; the rest of `a` is zero.
fn multiply_band(a: &mut [Complex32], b: &[Complex32], band: (usize, usize), n: usize) {
    for range in [0..band.0 * n, band.1 * n..n * n] {
        for (x, y) in a[range.clone()].iter_mut().zip(&b[range]) {
            *x *= y;
        }
    }
}

/// A focused probe: the condenser aperture's semi-angle (rad) and the
/// condenser lens's aberrations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// Aperture semi-angle, rad.
    pub semiangle: f64,
    /// Aberrations of the probe-forming lens.
    pub aberrations: Aberrations,
}

impl Probe {
    /// The probe's spectrum, transposed (`[kx][ky]`): A(k) exp(-iχ(k)) with
    /// A = 1 inside the aperture and the antialiasing disc (Kirkland 2010,
    /// ch. 5, the STEM probe), normalised so its real-space intensity sums
    /// to 1 once inverse-transformed without division.
    pub fn spectrum(&self, beam: Beam, grid: Grid) -> Vec<Complex32> {
        let lambda = beam.wavelength();
        let kmax2 = (self.semiangle / lambda).powi(2);
        let mut out: Vec<Complex32> = grid
            .k2_in_band()
            .into_iter()
            .map(|k2| match k2 {
                Some(k2) if k2 <= kmax2 => {
                    Complex32::from_polar(1.0, -self.aberrations.chi(k2.sqrt() * lambda, lambda) as f32)
                }
                _ => Complex32::default(),
            })
            .collect();
        // Parseval for an unnormalised inverse: Σ|ψ|² = n² Σ|Ψ|².
        let power: f64 = out.iter().map(|c| f64::from(c.norm_sqr())).sum();
        let n2 = (grid.n * grid.n) as f64;
        let scale = if power > 0.0 { (1.0 / (n2 * power)).sqrt() as f32 } else { 0.0 };
        for c in &mut out {
            *c *= scale;
        }
        out
    }
}

/// The real-space probe centred at `(x, y)` Å, from its spectrum: a phase
/// ramp exp(-2πi k·r0) and one inverse transform.
pub fn probe_at(spectrum: &[Complex32], grid: Grid, x: f64, y: f64, out: &mut [Complex32], fft: &mut Fft2) {
    let n = grid.n;
    let ey: Vec<Complex32> = (0..n).map(|j| ramp(grid.ky(j) * y)).collect();
    for i in 0..n {
        let ex = ramp(grid.kx(i) * x);
        for j in 0..n {
            out[i * n + j] = spectrum[i * n + j] * ex * ey[j];
        }
    }
    fft.inverse(out);
}

fn ramp(t: f64) -> Complex32 {
    let (s, c) = (-2.0 * std::f64::consts::PI * t.fract()).sin_cos();
    Complex32::new(c as f32, s as f32)
}

/// Add `weight` × the diffraction intensity of an exit spectrum from
/// [`Slices::propagate`] into `pattern`: row-major `[ky][kx]` with k = 0 at
/// `(n/2, n/2)` (centred, as a detector sees it), each pixel the fraction
/// of the incident electrons scattered there.
pub fn add_pattern(exit: &[Complex32], n: usize, weight: f32, pattern: &mut [f32]) {
    let scale = weight * (n * n) as f32;
    let half = n / 2;
    for i in 0..n {
        let col = (i + half) % n;
        for j in 0..n {
            let row = (j + half) % n;
            pattern[row * n + col] += exit[i * n + j].norm_sqr() * scale;
        }
    }
}

/// The bright-field image of an exit spectrum through an objective lens:
/// multiply by the lens's transfer function exp(-iχ(k)) inside its aperture
/// (Kirkland 2010, ch. 3, coherent image formation), transform back, and
/// take |ψ|², `[y][x]`. `exit` is consumed as scratch.
pub fn lens_image(exit: &mut [Complex32], beam: Beam, grid: Grid, lens: &Probe, fft: &mut Fft2) -> Vec<f32> {
    let lambda = beam.wavelength();
    let kmax2 = (lens.semiangle / lambda).powi(2);
    // The exit spectrum carries the 1/n² of the propagator, so the
    // unnormalised inverse gives the wave itself.
    for (c, k2) in exit.iter_mut().zip(grid.k2_in_band()) {
        *c = match k2 {
            Some(k2) if k2 <= kmax2 => {
                *c * Complex32::from_polar(1.0, -lens.aberrations.chi(k2.sqrt() * lambda, lambda) as f32)
            }
            _ => Complex32::default(),
        };
    }
    fft.inverse(exit);
    exit.iter().map(|c| c.norm_sqr()).collect()
}
