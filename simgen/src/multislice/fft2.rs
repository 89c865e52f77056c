//! 2-D FFTs of an n × n complex grid for multislice, built on `rustfft`
//! 1-D transforms, with two savings a general 2-D FFT cannot make:
//!
//! - **Transposed reciprocal space.** [`Fft2::forward`] leaves the spectrum
//!   transposed (`[kx][ky]`, index `kx * n + ky`) and [`Fft2::inverse`]
//!   takes it so, which is all a multislice step needs (multiply by a
//!   propagator stored the same way): one transpose each way instead of two.
//! - **Band-limited rows.** Every spectrum multislice uses is multiplied by
//!   an aperture at 2/3 of Nyquist, so whole rows of constant kx outside it
//!   are zero. The forward transform skips their second pass (they are set
//!   to zero) and the inverse skips their first: a third fewer 1-D FFTs on
//!   half of the passes.
//!
//! Real space is row-major `[y][x]`. Neither direction normalises; callers
//! fold the 1/n² into a kernel.

use std::ops::Range;
use std::sync::Arc;

use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

/// Side of the square blocks the transpose swaps (fits L1 twice over).
const TILE: usize = 32;

/// Planned transforms of one grid size, with scratch for one thread.
pub struct Fft2 {
    n: usize,
    forward: Arc<dyn Fft<f32>>,
    inverse: Arc<dyn Fft<f32>>,
    scratch: Vec<Complex32>,
    /// Rows of constant kx that may be non-zero: `0..low` and `high..n`.
    low: usize,
    high: usize,
    /// Time spent transforming, for the report's FFT share.
    elapsed: std::time::Duration,
}

impl Fft2 {
    /// Plan n × n transforms whose spectra are only ever needed in the kx
    /// rows `band` says (see [`band_rows`]).
    pub fn new(n: usize, band: (usize, usize)) -> Fft2 {
        let mut planner = FftPlanner::new();
        let forward = planner.plan_fft_forward(n);
        let inverse = planner.plan_fft_inverse(n);
        let len = forward.get_inplace_scratch_len().max(inverse.get_inplace_scratch_len());
        Fft2 {
            n,
            forward,
            inverse,
            scratch: vec![Complex32::default(); len],
            low: band.0,
            high: band.1,
            elapsed: Default::default(),
        }
    }

    /// Grid side.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Time spent in transforms since planning.
    pub fn elapsed(&self) -> std::time::Duration {
        self.elapsed
    }

    /// Real space `[y][x]` to its spectrum, transposed `[kx][ky]`; rows
    /// outside the band come back zero.
    pub fn forward(&mut self, data: &mut [Complex32]) {
        let n = self.n;
        assert_eq!(data.len(), n * n, "grid of the wrong size");
        let started = std::time::Instant::now();
        self.forward.process_with_scratch(data, &mut self.scratch);
        transpose(data, n);
        for rows in self.band_ranges() {
            self.forward.process_with_scratch(&mut data[rows.start * n..rows.end * n], &mut self.scratch);
        }
        data[self.low * n..self.high * n].fill(Complex32::default());
        self.elapsed += started.elapsed();
    }

    /// A transposed spectrum `[kx][ky]` (zero outside the band rows) back to
    /// real space `[y][x]`, scaled by n².
    pub fn inverse(&mut self, data: &mut [Complex32]) {
        let n = self.n;
        assert_eq!(data.len(), n * n, "grid of the wrong size");
        let started = std::time::Instant::now();
        for rows in self.band_ranges() {
            self.inverse.process_with_scratch(&mut data[rows.start * n..rows.end * n], &mut self.scratch);
        }
        transpose(data, n);
        self.inverse.process_with_scratch(data, &mut self.scratch);
        self.elapsed += started.elapsed();
    }

    fn band_ranges(&self) -> [Range<usize>; 2] {
        [0..self.low, self.high..self.n]
    }
}

/// The kx rows `(low, high)` of an n-point axis with sampling `dx` (Å) that
/// reach inside a circular aperture of radius `cutoff` (1/Å): rows `0..low`
/// and `high..n` in FFT order. With no cutoff inside the grid, all rows.
pub fn band_rows(n: usize, dx: f64, cutoff: f64) -> (usize, usize) {
    let inside = |i: usize| frequency(i, n, dx).abs() < cutoff;
    let low = (0..n).take_while(|&i| inside(i)).count();
    let high = n - (0..n).rev().take_while(|&i| i >= low && inside(i)).count();
    (low, high)
}

/// Spatial frequency (1/Å) of FFT index `i` on an n-point axis of sampling
/// `d` (numpy's `fftfreq`).
pub fn frequency(i: usize, n: usize, d: f64) -> f64 {
    let signed = if i < n.div_ceil(2) { i as f64 } else { i as f64 - n as f64 };
    signed / (n as f64 * d)
}

/// In-place transpose of an n × n row-major matrix, tile by tile.
fn transpose(data: &mut [Complex32], n: usize) {
    // Each pair of mirrored tiles is copied out row by row, then written
    // back transposed row by row. Swapping element by element walks a
    // column of the other tile, n elements apart: with n a power of two
    // (the usual grids) those rows fall in the same few L1 sets and evict
    // each other before the next column reuses them (the swap loop had a
    // third of a 512² scan's time).
    let mut upper = [Complex32::default(); TILE * TILE];
    let mut lower = [Complex32::default(); TILE * TILE];
    for bi in (0..n).step_by(TILE) {
        let rows = TILE.min(n - bi);
        for bj in (bi..n).step_by(TILE) {
            let cols = TILE.min(n - bj);
            copy_tile(data, n, [bi, bj], [rows, cols], &mut upper);
            if bi == bj {
                write_transposed(&upper, [rows, cols], data, n, [bi, bj]);
                continue;
            }
            copy_tile(data, n, [bj, bi], [cols, rows], &mut lower);
            write_transposed(&upper, [rows, cols], data, n, [bj, bi]);
            write_transposed(&lower, [cols, rows], data, n, [bi, bj]);
        }
    }
}

/// The `rows` × `cols` block of `data` (n wide) at `[row, col]` into
/// `tile`, rows TILE apart.
fn copy_tile(data: &[Complex32], n: usize, [row, col]: [usize; 2], [rows, cols]: [usize; 2], tile: &mut [Complex32]) {
    for r in 0..rows {
        tile[r * TILE..r * TILE + cols].copy_from_slice(&data[(row + r) * n + col..][..cols]);
    }
}

/// `tile` (`rows` × `cols`, rows TILE apart) transposed into the `cols` ×
/// `rows` block of `data` at `[row, col]`.
fn write_transposed(
    tile: &[Complex32],
    [rows, cols]: [usize; 2],
    data: &mut [Complex32],
    n: usize,
    [row, col]: [usize; 2],
) {
    for c in 0..cols {
        let out = &mut data[(row + c) * n + col..][..rows];
        for (r, value) in out.iter_mut().enumerate() {
            *value = tile[r * TILE + c];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct O(n⁴) DFT, the reference.
    fn dft(data: &[Complex32], n: usize) -> Vec<Complex32> {
        let mut out = vec![Complex32::default(); n * n];
        for ky in 0..n {
            for kx in 0..n {
                let mut sum = rustfft::num_complex::Complex64::default();
                for y in 0..n {
                    for x in 0..n {
                        let phase = -2.0 * std::f64::consts::PI * ((kx * x + ky * y) as f64) / n as f64;
                        let v = data[y * n + x];
                        sum += rustfft::num_complex::Complex64::new(f64::from(v.re), f64::from(v.im))
                            * rustfft::num_complex::Complex64::from_polar(1.0, phase);
                    }
                }
                out[ky * n + kx] = Complex32::new(sum.re as f32, sum.im as f32);
            }
        }
        out
    }

    fn test_grid(n: usize) -> Vec<Complex32> {
        (0..n * n)
            .map(|i| Complex32::new(((i * 7919) % 97) as f32 / 97.0, ((i * 104_729) % 89) as f32 / 89.0))
            .collect()
    }

    #[test]
    fn forward_matches_a_direct_dft_transposed_and_zero_outside_the_band() {
        for n in [8, 12, 40] {
            let data = test_grid(n);
            let want = dft(&data, n);
            let band = band_rows(n, 1.0, 0.3);
            let mut got = data.clone();
            Fft2::new(n, band).forward(&mut got);
            for kx in 0..n {
                let inside = kx < band.0 || kx >= band.1;
                for ky in 0..n {
                    let g = got[kx * n + ky];
                    let w = if inside { want[ky * n + kx] } else { Complex32::default() };
                    assert!((g - w).norm() < 1e-3 * n as f32, "n {n} ({kx}, {ky}): {g} vs {w}");
                }
            }
        }
    }

    #[test]
    fn inverse_undoes_forward_for_band_limited_grids() {
        let n = 36;
        let band = band_rows(n, 0.5, 2.0 / 3.0);
        let mut fft = Fft2::new(n, band);
        let mut data = test_grid(n);
        fft.forward(&mut data);
        let spectrum = data.clone();
        fft.inverse(&mut data);
        fft.forward(&mut data);
        for (a, b) in data.iter().zip(&spectrum) {
            assert!((a / (n * n) as f32 - b).norm() < 1e-3, "{a} vs {b}");
        }
    }

    #[test]
    fn band_rows_follow_fftfreq_order() {
        // n 8, d 1: frequencies 0, .125, .25, .375, -.5, -.375, -.25, -.125.
        assert_eq!(band_rows(8, 1.0, 0.3), (3, 6));
        assert_eq!(band_rows(8, 1.0, 10.0), (8, 8));
        assert_eq!(frequency(5, 8, 1.0), -0.375);
    }

    #[test]
    fn transpose_swaps_every_pair_for_odd_sizes_whole_tiles_and_one_tile() {
        for n in [1, 5, 32, 37, 64, 100] {
            let mut m: Vec<Complex32> = (0..n * n).map(|i| Complex32::new(i as f32, -(i as f32))).collect();
            transpose(&mut m, n);
            for i in 0..n {
                for j in 0..n {
                    let expected = (j * n + i) as f32;
                    assert_eq!(m[i * n + j], Complex32::new(expected, -expected), "n {n}, ({i}, {j})");
                }
            }
        }
    }
}
