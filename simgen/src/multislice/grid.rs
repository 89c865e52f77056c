//! The sampling grid shared by potentials, waves and patterns, and its
//! antialiasing band limit.
//!
//! **Band limit.** A product of two functions holds frequencies up to the
//! sum of theirs, and the FFT folds whatever passes Nyquist back onto the
//! grid. Multislice multiplies the wave by a transmission function every
//! slice, so every transmission function and propagator is cut to a disc of
//! radius 2/3 of the (smaller) Nyquist frequency: the product then reaches
//! at most 4/3, its folded part lands beyond 2/3, and the next propagator
//! removes it (Kirkland 2010, ch. 6, aliasing in multislice; abTEM's
//! `antialias.cutoff` of 2/3 with no taper). Patterns and images are only
//! meaningful inside the disc.

use super::fft2::{band_rows, frequency};

/// Fraction of Nyquist kept by the antialiasing aperture.
pub const ANTIALIAS_FRACTION: f64 = 2.0 / 3.0;

/// An n × n grid of pixels `dx × dy` Å covering the field of view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    /// Pixels per side.
    pub n: usize,
    /// Pixel width, Å.
    pub dx: f64,
    /// Pixel height, Å.
    pub dy: f64,
}

impl Grid {
    /// Field of view area, Å².
    pub fn area(&self) -> f64 {
        self.n as f64 * self.dx * self.n as f64 * self.dy
    }

    /// Radius of the antialiasing disc, 1/Å.
    pub fn cutoff(&self) -> f64 {
        ANTIALIAS_FRACTION / (2.0 * self.dx.max(self.dy))
    }

    /// Spatial frequency of column index `i` (x), 1/Å.
    pub fn kx(&self, i: usize) -> f64 {
        frequency(i, self.n, self.dx)
    }

    /// Spatial frequency of row index `j` (y), 1/Å.
    pub fn ky(&self, j: usize) -> f64 {
        frequency(j, self.n, self.dy)
    }

    /// The kx rows that reach inside the disc, for [`Fft2`](super::fft2::Fft2).
    pub fn band(&self) -> (usize, usize) {
        band_rows(self.n, self.dx, self.cutoff())
    }

    /// Every kx row, for an [`Fft2`](super::fft2::Fft2) over the whole
    /// spectrum.
    pub fn full_band(&self) -> (usize, usize) {
        (self.n, self.n)
    }

    /// k² at every point of a transposed spectrum (`[kx][ky]`), or `None`
    /// outside the antialiasing disc.
    pub fn k2_in_band(&self) -> Vec<Option<f64>> {
        let cut2 = self.cutoff().powi(2);
        let mut out = Vec::with_capacity(self.n * self.n);
        for i in 0..self.n {
            let kx = self.kx(i);
            for j in 0..self.n {
                let k2 = kx * kx + self.ky(j).powi(2);
                out.push((k2 < cut2).then_some(k2));
            }
        }
        out
    }

    /// Largest scattering angle inside the disc at wavelength `lambda`, rad.
    pub fn max_angle(&self, lambda: f64) -> f64 {
        self.cutoff() * lambda
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disc_keeps_two_thirds_of_nyquist_along_the_coarser_axis() {
        let g = Grid { n: 64, dx: 0.1, dy: 0.05 };
        assert!((g.cutoff() - 1.0 / 0.3).abs() < 1e-12);
        let k2 = g.k2_in_band();
        let kept = k2.iter().filter(|k| k.is_some()).count();
        // The disc's area over the spectrum's: π (2/3 · 5)² / (10 · 20).
        let want = std::f64::consts::PI * (g.cutoff()).powi(2) / (1.0 / 0.1 * 1.0 / 0.05) * 64.0 * 64.0;
        assert!((kept as f64 / want - 1.0).abs() < 0.05, "{kept} vs {want}");
        let (low, high) = g.band();
        for i in low..high {
            assert!((0..64).all(|j| k2[i * 64 + j].is_none()), "row {i} should be outside");
        }
    }
}
