//! Smooth random fields on a longitude-latitude grid: the weather a
//! sample's background is made of.
//!
//! A field is white noise filtered in Fourier space to a red spectrum,
//! amplitude ∝ (1 + (k/k0)²)^(-slope/2): flat below the synoptic
//! wavenumber k0 and falling as k^-slope above it (the atmosphere's kinetic
//! energy spectrum falls as k^-3 at synoptic scales: G. D. Nastrom and
//! K. S. Gage, J. Atmos. Sci. 42, 950 (1985)). It is periodic in longitude
//! as the globe is; latitude is made periodic by synthesising twice the
//! height and keeping one half, so the poles do not wrap onto each other.
//! Fields are synthesised on a grid `COARSE` times smaller per axis and
//! interpolated up: the smallest scale kept, a few coarse pixels, is still
//! far below the synoptic scale, and the synthesis is `COARSE²` times
//! cheaper.

use rustfft::FftPlanner;
use rustfft::num_complex::Complex32;

use crate::random::Normals;

/// Coarsening of the synthesis grid per axis.
pub const COARSE: usize = 4;

/// Spectral shape of a field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spectrum {
    /// Wavenumber where the spectrum turns (cycles around the globe).
    pub k0: f64,
    /// Slope of the amplitude spectrum above k0 (amplitude ∝ k^-slope).
    pub slope: f64,
}

/// A unit-variance, zero-mean field of `height × width` (row-major, row 0
/// at the north pole) from `seed`.
pub fn random_field(height: usize, width: usize, spectrum: Spectrum, seed: u64) -> Vec<f32> {
    let (ch, cw) = (height.div_ceil(COARSE).max(2), width.div_ceil(COARSE).max(2));
    let (th, tw) = (2 * ch, cw);
    let mut noise = Normals::new(seed);
    let mut grid: Vec<Complex32> = (0..th * tw).map(|_| Complex32::new(noise.normal() as f32, 0.0)).collect();
    let mut planner = FftPlanner::<f32>::new();
    fft2(&mut grid, th, tw, &mut planner, false);
    for i in 0..th {
        let ky = signed(i, th) as f64 / 2.0;
        for j in 0..tw {
            let kx = signed(j, tw) as f64;
            let k2 = kx * kx + ky * ky;
            let amplitude = (1.0 + k2 / (spectrum.k0 * spectrum.k0)).powf(-spectrum.slope / 2.0);
            grid[i * tw + j] *= if i == 0 && j == 0 { 0.0 } else { amplitude as f32 };
        }
    }
    fft2(&mut grid, th, tw, &mut planner, true);
    let coarse: Vec<f32> = grid[..ch * cw].iter().map(|c| c.re).collect();
    // Normalised after interpolating, which smooths away part of the variance.
    let mut field = upsample(&coarse, ch, cw, height, width);
    let (mean, var) = moments(&field);
    let sd = var.sqrt().max(1e-12);
    for v in &mut field {
        *v = ((f64::from(*v) - mean) / sd) as f32;
    }
    field
}

fn signed(i: usize, n: usize) -> i64 {
    if i <= n / 2 { i as i64 } else { i as i64 - n as i64 }
}

fn moments(v: &[f32]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let var = v.iter().map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n;
    (mean, var)
}

/// 2-D FFT (unnormalised both ways) of an h × w row-major grid.
fn fft2(data: &mut [Complex32], h: usize, w: usize, planner: &mut FftPlanner<f32>, inverse: bool) {
    let (rows, cols) = if inverse {
        (planner.plan_fft_inverse(w), planner.plan_fft_inverse(h))
    } else {
        (planner.plan_fft_forward(w), planner.plan_fft_forward(h))
    };
    rows.process(data);
    let mut column = vec![Complex32::default(); h];
    for j in 0..w {
        for i in 0..h {
            column[i] = data[i * w + j];
        }
        cols.process(&mut column);
        for i in 0..h {
            data[i * w + j] = column[i];
        }
    }
}

/// Bilinear interpolation of an ch × cw grid (periodic in x, clamped in y)
/// up to h × w, pixel centres aligned.
fn upsample(coarse: &[f32], ch: usize, cw: usize, h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0f32; h * w];
    let (sy, sx) = (ch as f64 / h as f64, cw as f64 / w as f64);
    let columns: Vec<(usize, usize, f32)> = (0..w)
        .map(|x| {
            let fx = ((x as f64 + 0.5) * sx - 0.5).rem_euclid(cw as f64);
            let x0 = fx.floor() as usize % cw;
            (x0, (x0 + 1) % cw, (fx - fx.floor()) as f32)
        })
        .collect();
    for y in 0..h {
        let fy = ((y as f64 + 0.5) * sy - 0.5).clamp(0.0, (ch - 1) as f64);
        let y0 = fy.floor() as usize;
        let y1 = (y0 + 1).min(ch - 1);
        let ty = (fy - y0 as f64) as f32;
        let (r0, r1) = (&coarse[y0 * cw..(y0 + 1) * cw], &coarse[y1 * cw..(y1 + 1) * cw]);
        for (o, &(x0, x1, tx)) in out[y * w..(y + 1) * w].iter_mut().zip(&columns) {
            let top = r0[x0] + (r0[x1] - r0[x0]) * tx;
            let bottom = r1[x0] + (r1[x1] - r1[x0]) * tx;
            *o = top + (bottom - top) * ty;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SYNOPTIC: Spectrum = Spectrum { k0: 8.0, slope: 3.0 };

    #[test]
    fn fields_are_unit_variance_and_reproducible() {
        let a = random_field(96, 144, SYNOPTIC, 3);
        let (mean, var) = moments(&a);
        assert!(mean.abs() < 0.05 && (var - 1.0).abs() < 0.1, "mean {mean} var {var}");
        assert_eq!(a, random_field(96, 144, SYNOPTIC, 3));
        assert_ne!(a, random_field(96, 144, SYNOPTIC, 4));
    }

    /// Periodic in longitude: the last column continues into the first as
    /// smoothly as any neighbouring pair; not in latitude.
    #[test]
    fn fields_wrap_around_the_globe_and_are_smooth() {
        let (h, w) = (96, 144);
        let f = random_field(h, w, SYNOPTIC, 9);
        let step = |a: usize, b: usize| (0..h).map(|y| (f[y * w + a] - f[y * w + b]).abs()).sum::<f32>() / h as f32;
        let seam = step(w - 1, 0);
        let inner = (1..w).map(|x| step(x - 1, x)).sum::<f32>() / (w - 1) as f32;
        assert!(seam < 3.0 * inner, "seam {seam} vs neighbours {inner}");
        // Smooth: neighbouring pixels differ by far less than the spread.
        assert!(inner < 0.3, "{inner}");
    }
}
