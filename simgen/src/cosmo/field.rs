//! The Gaussian linear density field and its Lagrangian displacements.
//!
//! Amplitude convention (as nbodykit's mockmaker): with the normalised
//! transform δ̂_k = FFT(δ)/N³ and box volume V = L³, ⟨|δ̂_k|²⟩ = P(k)/V.
//! The field is unit white noise in Fourier space times √(P(k)/V), the k = 0
//! mode zero. The noise is drawn cell by cell in real space and transformed,
//! so the field is real by construction. `fixed_amplitude` keeps each mode's
//! random phase but sets |noise| = 1, removing cosmic variance (for tests).
//!
//! Displacements (psi at D = 1): Zel'dovich psi1_k = i k δ̂_k / k² (so
//! δ = -∇·psi1); second order psi2 = ∇φ2 with ∇²φ2 = Σ_{i<j} (φ_ii φ_jj -
//! φ_ij²), φ_ij = ∂i∂j φ1, ∇²φ1 = δ. A particle at q moves to
//! q + D1 psi1 + D2 psi2 with D2 < 0 from [`Cosmology::growth`]. Nyquist
//! modes are zeroed in every gradient.

use rustfft::num_complex::Complex32;

use super::cosmology::LinearPower;
use super::fft3::{Fft3, frequency};
use crate::random::Normals;

/// How the initial conditions are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldConfig {
    /// Particles (and field cells) per side.
    pub n: usize,
    /// Box side in Mpc/h.
    pub box_size: f64,
    /// Seed of the noise.
    pub seed: u64,
    /// Unit-modulus noise (no cosmic variance).
    pub fixed_amplitude: bool,
}

/// δ̂_k of the linear field today, in FFT index order.
pub fn linear_modes(config: &FieldConfig, power: &LinearPower, fft: &mut Fft3) -> Vec<Complex32> {
    let n = config.n;
    let mut normals = Normals::new(config.seed);
    let mut modes: Vec<Complex32> = (0..n * n * n).map(|_| Complex32::new(normals.normal() as f32, 0.0)).collect();
    fft.forward(&mut modes);
    let volume = config.box_size.powi(3);
    let kf = 2.0 * std::f64::consts::PI / config.box_size;
    let white = 1.0 / ((n * n * n) as f64).sqrt();
    // √(P(k)/V) depends on the mode only through the integer |f|².
    let max_f2 = 3 * (n / 2 + 1).pow(2);
    let amplitude: Vec<f32> =
        (0..=max_f2).map(|f2| (power.at(kf * (f2 as f64).sqrt()) / volume).sqrt() as f32).collect();
    for_each_mode(n, |index, [fi, fj, fk]| {
        let f2 = (fi * fi + fj * fj + fk * fk) as usize;
        let mode = &mut modes[index];
        if f2 == 0 {
            *mode = Complex32::default();
            return;
        }
        let noise = if config.fixed_amplitude {
            let norm = mode.norm();
            if norm > 0.0 { *mode / norm } else { Complex32::new(1.0, 0.0) }
        } else {
            *mode * white as f32
        };
        *mode = noise * amplitude[f2];
    });
    modes
}

/// Call `f(index, [fi, fj, fk])` for every mode of an n³ cube.
pub fn for_each_mode(n: usize, mut f: impl FnMut(usize, [i64; 3])) {
    for i in 0..n {
        let fi = frequency(i, n);
        for j in 0..n {
            let fj = frequency(j, n);
            for k in 0..n {
                f((i * n + j) * n + k, [fi, fj, frequency(k, n)]);
            }
        }
    }
}

/// The real-space field of modes δ̂_k (inverse of `FFT/N³`).
pub fn to_real(modes: &[Complex32], fft: &mut Fft3) -> Vec<f32> {
    let mut cube = modes.to_vec();
    fft.inverse(&mut cube);
    cube.into_iter().map(|c| c.re).collect()
}

/// Particle displacements at unit growth, one array per axis.
pub struct Displacements {
    /// Particles per side.
    pub n: usize,
    /// Zel'dovich displacement in Mpc/h.
    pub first: [Vec<f32>; 3],
    /// Second-order displacement in Mpc/h (2LPT only).
    pub second: Option<[Vec<f32>; 3]>,
}

/// Displacements of order `lpt` (1 or 2) from the linear modes.
pub fn displacements(modes: &[Complex32], box_size: f64, lpt: u8, fft: &mut Fft3) -> Displacements {
    let n = fft.n();
    let kf = 2.0 * std::f64::consts::PI / box_size;
    let nyquist = -(n as i64) / 2;
    // ∂_a of a potential whose Laplacian is `source`: i k_a (-source_k / k²)... with the sign given.
    let gradient_pair = |source: &[Complex32], axes: [usize; 2], sign: f32, fft: &mut Fft3| -> [Vec<f32>; 2] {
        // Two real fields in one complex inverse transform: A + iB.
        let mut cube = vec![Complex32::default(); n * n * n];
        for_each_mode(n, |index, f| {
            let k2 = (f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) as f32 * (kf * kf) as f32;
            if k2 == 0.0 {
                return;
            }
            let s = source[index] * (sign / k2);
            let mut value = Complex32::default();
            for (slot, &axis) in axes.iter().enumerate() {
                if f[axis] == nyquist {
                    continue;
                }
                let ka = f[axis] as f32 * kf as f32;
                let component = Complex32::new(0.0, ka) * s; // i k_a s
                // Slot 0 -> real part, slot 1 -> imaginary part of the output.
                value += if slot == 0 { component } else { Complex32::new(0.0, 1.0) * component };
            }
            cube[index] = value;
        });
        fft.inverse(&mut cube);
        [cube.iter().map(|c| c.re).collect(), cube.iter().map(|c| c.im).collect()]
    };
    let [px, py] = gradient_pair(modes, [0, 1], 1.0, fft);
    let [pz, _] = gradient_pair(modes, [2, 2], 1.0, fft);
    let first = [px, py, pz];
    if lpt < 2 {
        return Displacements { n, first, second: None };
    }
    // φ_ij = ∂i∂j φ1 with φ1_k = -δ̂_k/k²: (φ_ij)_k = k_i k_j δ̂_k / k².
    let hessian_pair = |pairs: [(usize, usize); 2], fft: &mut Fft3| -> [Vec<f32>; 2] {
        let mut cube = vec![Complex32::default(); n * n * n];
        for_each_mode(n, |index, f| {
            let k2 = (f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) as f32;
            if k2 == 0.0 {
                return;
            }
            let mut value = Complex32::default();
            for (slot, &(a, b)) in pairs.iter().enumerate() {
                if f[a] == nyquist || f[b] == nyquist {
                    continue;
                }
                let v = modes[index] * ((f[a] * f[b]) as f32 / k2);
                value += if slot == 0 { v } else { Complex32::new(0.0, 1.0) * v };
            }
            cube[index] = value;
        });
        fft.inverse(&mut cube);
        [cube.iter().map(|c| c.re).collect(), cube.iter().map(|c| c.im).collect()]
    };
    let [p00, p11] = hessian_pair([(0, 0), (1, 1)], fft);
    let [p22, p01] = hessian_pair([(2, 2), (0, 1)], fft);
    let mut source: Vec<f32> =
        (0..n * n * n).map(|x| p00[x] * p11[x] + p00[x] * p22[x] + p11[x] * p22[x] - p01[x] * p01[x]).collect();
    drop((p00, p11, p22, p01));
    let [p02, p12] = hessian_pair([(0, 2), (1, 2)], fft);
    for (s, (a, b)) in source.iter_mut().zip(p02.iter().zip(&p12)) {
        *s -= a * a + b * b;
    }
    drop((p02, p12));
    let mut source_k: Vec<Complex32> = source.into_iter().map(|s| Complex32::new(s, 0.0)).collect();
    fft.forward(&mut source_k);
    let scale = 1.0 / (n * n * n) as f32;
    source_k.iter_mut().for_each(|s| *s *= scale);
    // psi2 = ∇φ2, φ2_k = -S_k/k²: psi2_k = i k (-S_k / k²).
    let [qx, qy] = gradient_pair(&source_k, [0, 1], -1.0, fft);
    let [qz, _] = gradient_pair(&source_k, [2, 2], -1.0, fft);
    Displacements { n, first, second: Some([qx, qy, qz]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// δ = A cos(k x0) + A cos(k x1) with k the fundamental: analytically
    /// φ1 = -(A/k²)(cos k x0 + cos k x1), so psi1_0 = -(A/k) sin(k x0), and
    /// the 2LPT source is φ_00 φ_11 = A² cos(k x0) cos(k x1), so
    /// φ2 = -A² cos(k x0) cos(k x1) / (2k²) and psi2_0 = A² sin(k x0) cos(k x1) / (2k).
    #[test]
    fn displacements_of_two_plane_waves_match_the_analytic_first_and_second_order() {
        let (n, box_size, amp) = (16, 100.0, 0.3f32);
        let mut modes = vec![Complex32::default(); n * n * n];
        for index in [(1, 0), (n - 1, 0), (0, 1), (0, n - 1)].map(|(i, j)| (i * n + j) * n) {
            modes[index] = Complex32::new(amp / 2.0, 0.0);
        }
        let mut fft = Fft3::new(n);
        let d = displacements(&modes, box_size, 2, &mut fft);
        let second = d.second.as_ref().unwrap();
        let k = (2.0 * std::f64::consts::PI / box_size) as f32;
        let cell = box_size as f32 / n as f32;
        for i in 0..n {
            for j in 0..n {
                for l in [0, 5] {
                    let p = (i * n + j) * n + l;
                    let (x0, x1) = (i as f32 * cell, j as f32 * cell);
                    let psi1 = -(amp / k) * (k * x0).sin();
                    let psi2 = amp * amp * (k * x0).sin() * (k * x1).cos() / (2.0 * k);
                    assert!((d.first[0][p] - psi1).abs() < 1e-4 * (amp / k), "psi1 at {i},{j}");
                    assert!(d.first[2][p].abs() < 1e-5, "no motion along axis 2");
                    assert!(
                        (second[0][p] - psi2).abs() < 1e-3 * (amp * amp / k),
                        "psi2 at {i},{j}: {} vs {psi2}",
                        second[0][p]
                    );
                }
            }
        }
    }

    #[test]
    fn a_single_plane_wave_has_no_second_order_displacement() {
        let n = 8;
        let mut modes = vec![Complex32::default(); n * n * n];
        modes[(2 * n) * n] = Complex32::new(0.1, 0.05);
        modes[((n - 2) * n) * n] = Complex32::new(0.1, -0.05);
        let mut fft = Fft3::new(n);
        let d = displacements(&modes, 50.0, 2, &mut fft);
        let largest = d.second.unwrap().iter().flatten().fold(0f32, |m, v| m.max(v.abs()));
        assert!(largest < 1e-6, "{largest}");
    }
}
