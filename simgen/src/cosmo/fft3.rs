//! In-place 3-D complex FFT of an n³ cube in C order (`(i * n + j) * n + k`),
//! built from `rustfft` 1-D transforms: rows along k directly, the other two
//! axes through an n × n transpose into a scratch plane so every 1-D
//! transform runs on contiguous memory.

use std::sync::Arc;

use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

/// Planned forward and inverse transforms for one cube size.
pub struct Fft3 {
    n: usize,
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    plane: Vec<Complex32>,
    scratch: Vec<Complex32>,
    elapsed: std::time::Duration,
}

impl Fft3 {
    /// Plan transforms of n³ cubes.
    pub fn new(n: usize) -> Self {
        let mut planner = FftPlanner::new();
        let forward = planner.plan_fft_forward(n);
        let inverse = planner.plan_fft_inverse(n);
        let scratch_len = forward.get_inplace_scratch_len().max(inverse.get_inplace_scratch_len());
        Fft3 {
            n,
            forward,
            inverse,
            plane: vec![Complex32::default(); n * n],
            scratch: vec![Complex32::default(); scratch_len],
            elapsed: std::time::Duration::ZERO,
        }
    }

    /// Side length.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Time spent transforming since the last [`reset_time`](Self::reset_time).
    pub fn time(&self) -> std::time::Duration {
        self.elapsed
    }

    /// Start timing afresh.
    pub fn reset_time(&mut self) {
        self.elapsed = std::time::Duration::ZERO;
    }

    /// Forward transform, unnormalised: X_k = Σ x_j e^{-2πi jk/n} per axis.
    pub fn forward(&mut self, cube: &mut [Complex32]) {
        let fft = self.forward.clone();
        self.transform(cube, &*fft);
    }

    /// Inverse transform, unnormalised (divide by n³ to invert `forward`).
    pub fn inverse(&mut self, cube: &mut [Complex32]) {
        let fft = self.inverse.clone();
        self.transform(cube, &*fft);
    }

    fn transform(&mut self, cube: &mut [Complex32], fft: &dyn Fft<f32>) {
        let n = self.n;
        assert_eq!(cube.len(), n * n * n, "cube of {} values is not {n}³", cube.len());
        let started = std::time::Instant::now();
        // Axis k: contiguous rows.
        fft.process_with_scratch(cube, &mut self.scratch);
        // Axis j: each i-plane (j, k) transposed to (k, j).
        for plane in cube.chunks_exact_mut(n * n) {
            transpose(plane, &mut self.plane, n);
            fft.process_with_scratch(&mut self.plane, &mut self.scratch);
            transpose(&self.plane, plane, n);
        }
        // Axis i: for each j, the (i, k) slab gathered as (k, i).
        for j in 0..n {
            for i in 0..n {
                let row = &cube[(i * n + j) * n..(i * n + j + 1) * n];
                for (k, v) in row.iter().enumerate() {
                    self.plane[k * n + i] = *v;
                }
            }
            fft.process_with_scratch(&mut self.plane, &mut self.scratch);
            for i in 0..n {
                let row = &mut cube[(i * n + j) * n..(i * n + j + 1) * n];
                for (k, v) in row.iter_mut().enumerate() {
                    *v = self.plane[k * n + i];
                }
            }
        }
        self.elapsed += started.elapsed();
    }
}

/// `to[c * n + r] = from[r * n + c]`, in cache-sized tiles.
fn transpose(from: &[Complex32], to: &mut [Complex32], n: usize) {
    const TILE: usize = 16;
    for r0 in (0..n).step_by(TILE) {
        for c0 in (0..n).step_by(TILE) {
            for r in r0..(r0 + TILE).min(n) {
                for c in c0..(c0 + TILE).min(n) {
                    to[c * n + r] = from[r * n + c];
                }
            }
        }
    }
}

/// The signed frequency of index `i` on an n-point axis: 0, 1, ..., n/2 - 1, -n/2, ..., -1.
pub fn frequency(i: usize, n: usize) -> i64 {
    if i < n.div_ceil(2) { i as i64 } else { i as i64 - n as i64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_matches_a_direct_dft_and_inverse_undoes_it() {
        let n = 6;
        let cube: Vec<Complex32> =
            (0..n * n * n).map(|v| Complex32::new(((v * 7) % 11) as f32 - 5.0, ((v * 3) % 5) as f32)).collect();
        let mut fast = cube.clone();
        let mut fft = Fft3::new(n);
        fft.forward(&mut fast);
        let tau = -2.0 * std::f64::consts::PI / n as f64;
        for (a, b, c) in [(0, 0, 0), (1, 2, 3), (5, 0, 4), (3, 3, 3)] {
            let mut want = rustfft::num_complex::Complex64::default();
            for i in 0..n {
                for j in 0..n {
                    for k in 0..n {
                        let v = cube[(i * n + j) * n + k];
                        let phase = tau * ((a * i + b * j + c * k) as f64);
                        want += rustfft::num_complex::Complex64::new(f64::from(v.re), f64::from(v.im))
                            * rustfft::num_complex::Complex64::from_polar(1.0, phase);
                    }
                }
            }
            let got = fast[(a * n + b) * n + c];
            assert!((f64::from(got.re) - want.re).abs() < 1e-3 && (f64::from(got.im) - want.im).abs() < 1e-3);
        }
        fft.inverse(&mut fast);
        for (x, y) in fast.iter().zip(&cube) {
            assert!((x / (n * n * n) as f32 - y).norm() < 1e-4);
        }
    }

    #[test]
    fn frequencies_wrap_at_the_nyquist_index() {
        assert_eq!((0..8).map(|i| frequency(i, 8)).collect::<Vec<_>>(), vec![0, 1, 2, 3, -4, -3, -2, -1]);
        assert_eq!((0..5).map(|i| frequency(i, 5)).collect::<Vec<_>>(), vec![0, 1, 2, -2, -1]);
    }
}
