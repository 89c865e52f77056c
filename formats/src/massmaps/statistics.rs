//! What mass maps are judged by, for the data as generated and for a
//! generator's maps beside held-out real ones (Mustafa et al. 2019, §2.3
//! and Figs. 3-4: the power spectrum and the pixel-intensity histogram):
//!
//! - [`SpectrumEstimator`]: the azimuthally averaged power spectrum of a
//!   map, P(m) = ⟨|X_m|²⟩ / S² over the modes m of each ring |m| ≈ 1, 2, …,
//!   S/2 (X the discrete Fourier transform of the map; for white noise of
//!   variance σ², P = σ²). m counts cycles per map side; a map of side L
//!   Mpc/h has k = 2πm/L and P_phys = P·(L/S)².
//! - [`PixelHistogram`]: the pixels' distribution in the transformed
//!   values the network sees ([`to_unit`]), and the Kolmogorov-Smirnov
//!   distance between two such distributions ([`ks_distance`]).

use std::sync::Arc;

use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner};

/// a in s(x) = 2x/(x + a) − 1, the transform that takes ρ/ρ̄ ∈ [0, ∞) to
/// [−1, 1) for a generator ending in tanh: CosmoGAN's maps are prepared
/// with a = 4 (LBANN's ExaGAN, `applications/physics/cosmology/ExaGAN`,
/// inverts them as x = a(1 + s)/(1 − s) with `datascale = 4`).
pub const TRANSFORM_SCALE: f32 = 4.0;

/// Bins of [`PixelHistogram`], evenly over s ∈ [−1, 1).
pub const HISTOGRAM_BINS: usize = 50;

/// s(x) = 2x/(x + a) − 1: 0 → −1, a → 0, ∞ → 1.
pub fn to_unit(x: f32) -> f32 {
    let x = x.max(0.0);
    2.0 * x / (x + TRANSFORM_SCALE) - 1.0
}

/// The largest s [`from_unit`] inverts: a tanh in float32 reaches 1.0
/// exactly, which has no finite density.
const LARGEST_UNIT: f32 = 1.0 - 1e-6;

/// The inverse of [`to_unit`]: x = a(1 + s)/(1 − s), for s clamped into
/// [−1, 1 − 10⁻⁶] (at most 8·10⁶ times the mean density).
pub fn from_unit(s: f32) -> f32 {
    let s = s.clamp(-1.0, LARGEST_UNIT);
    TRANSFORM_SCALE * (1.0 + s) / (1.0 - s)
}

/// The power spectrum of square maps of one side, as sums over maps (so
/// ranks can add theirs).
pub struct SpectrumEstimator {
    side: usize,
    fft: Arc<dyn Fft<f32>>,
    buffer: Vec<Complex32>,
    transposed: Vec<Complex32>,
    scratch: Vec<Complex32>,
    /// The ring of each mode (0: the mean and the corners beyond S/2).
    ring: Vec<usize>,
    /// Modes per ring.
    modes: Vec<u64>,
}

impl std::fmt::Debug for SpectrumEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpectrumEstimator").field("side", &self.side).finish()
    }
}

/// The signed frequency of index `i` of an `n`-point transform.
fn frequency(i: usize, n: usize) -> i64 {
    if i <= n / 2 { i as i64 } else { i as i64 - n as i64 }
}

impl SpectrumEstimator {
    /// An estimator for maps of `side`² pixels.
    pub fn new(side: usize) -> Self {
        let fft = FftPlanner::new().plan_fft_forward(side);
        let rings = side / 2;
        let mut ring = vec![0; side * side];
        let mut modes = vec![0u64; rings + 1];
        for (i, r) in ring.iter_mut().enumerate() {
            let (a, b) = (frequency(i / side, side), frequency(i % side, side));
            let m = ((a * a + b * b) as f64).sqrt().round() as usize;
            if (1..=rings).contains(&m) {
                *r = m;
                modes[m] += 1;
            }
        }
        let scratch = vec![Complex32::default(); fft.get_inplace_scratch_len()];
        SpectrumEstimator {
            side,
            fft,
            buffer: vec![Complex32::default(); side * side],
            transposed: vec![Complex32::default(); side * side],
            scratch,
            ring,
            modes,
        }
    }

    /// Rings 1..=S/2: the length of the sums [`add`](Self::add) fills.
    pub fn rings(&self) -> usize {
        self.side / 2
    }

    /// Add the power of `map` (side² values, C order) in each ring to
    /// `sums[ring − 1]`; the spectrum of n maps is the sums over n.
    ///
    /// # Panics
    /// If `map` is not side² values or `sums` not [`rings`](Self::rings)
    /// long: the caller sizes both from this estimator.
    pub fn add(&mut self, map: &[f32], sums: &mut [f64]) {
        let n = self.side;
        assert_eq!((map.len(), sums.len()), (n * n, self.rings()), "map or sums of another size");
        self.buffer.iter_mut().zip(map).for_each(|(c, &v)| *c = Complex32::new(v, 0.0));
        self.fft.process_with_scratch(&mut self.buffer, &mut self.scratch);
        for (i, row) in self.buffer.chunks_exact(n).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                self.transposed[j * n + i] = v;
            }
        }
        self.fft.process_with_scratch(&mut self.transposed, &mut self.scratch);
        // The transposed layout swaps the two frequencies of each mode,
        // which leaves |m| and so its ring unchanged.
        let mut power = vec![0f64; self.rings() + 1];
        for (v, &r) in self.transposed.iter().zip(&self.ring) {
            power[r] += f64::from(v.norm_sqr());
        }
        let area = (n * n) as f64;
        for (m, sum) in sums.iter_mut().enumerate() {
            *sum += power[m + 1] / self.modes[m + 1] as f64 / area;
        }
    }
}

/// The pixels of maps, counted in [`HISTOGRAM_BINS`] bins of the
/// transformed value s ∈ [−1, 1).
#[derive(Debug, Clone, PartialEq)]
pub struct PixelHistogram {
    counts: Vec<f64>,
}

impl Default for PixelHistogram {
    fn default() -> Self {
        PixelHistogram { counts: vec![0.0; HISTOGRAM_BINS] }
    }
}

impl PixelHistogram {
    /// Count a pixel of transformed value `s` (clamped into [−1, 1)).
    pub fn add(&mut self, s: f32) {
        let bin = ((s + 1.0) / 2.0 * HISTOGRAM_BINS as f32).floor();
        let bin = if bin.is_nan() { 0 } else { (bin.max(0.0) as usize).min(HISTOGRAM_BINS - 1) };
        self.counts[bin] += 1.0;
    }

    /// The counts, bin by bin (to sum over ranks).
    pub fn counts(&self) -> &[f64] {
        &self.counts
    }

    /// Counts summed elsewhere; `None` unless [`HISTOGRAM_BINS`] of them.
    pub fn from_counts(counts: Vec<f64>) -> Option<Self> {
        (counts.len() == HISTOGRAM_BINS).then_some(PixelHistogram { counts })
    }

    /// The lower edge of each bin in s, and in ρ/ρ̄.
    pub fn edges() -> Vec<(f32, f32)> {
        (0..HISTOGRAM_BINS)
            .map(|b| {
                let s = -1.0 + 2.0 * b as f32 / HISTOGRAM_BINS as f32;
                (s, from_unit(s))
            })
            .collect()
    }
}

/// The Kolmogorov-Smirnov distance between the distributions two
/// histograms count: the largest difference of their cumulative
/// fractions at a bin edge (0 alike, 1 apart). `None` if either is empty
/// or they have different bins.
pub fn ks_distance(a: &PixelHistogram, b: &PixelHistogram) -> Option<f64> {
    let (total_a, total_b): (f64, f64) = (a.counts.iter().sum(), b.counts.iter().sum());
    if total_a == 0.0 || total_b == 0.0 || a.counts.len() != b.counts.len() {
        return None;
    }
    let (mut ca, mut cb, mut largest) = (0.0, 0.0, 0f64);
    for (x, y) in a.counts.iter().zip(&b.counts) {
        ca += x / total_a;
        cb += y / total_b;
        largest = largest.max((ca - cb).abs());
    }
    Some(largest)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_cosine_puts_its_power_in_its_own_ring() {
        let side = 32;
        let mut estimator = SpectrumEstimator::new(side);
        let map: Vec<f32> = (0..side * side)
            .map(|i| (2.0 * std::f32::consts::PI * 3.0 * (i % side) as f32 / side as f32).cos())
            .collect();
        let mut sums = vec![0.0; estimator.rings()];
        estimator.add(&map, &mut sums);
        let (ring, _) = sums.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
        assert_eq!(ring + 1, 3);
        let elsewhere: f64 = sums.iter().enumerate().filter(|(r, _)| *r != 2).map(|(_, p)| p).sum();
        assert!(elsewhere < 1e-6 * sums[2], "{sums:?}");
    }

    #[test]
    fn white_noise_has_a_flat_spectrum_at_its_variance() {
        let side = 64;
        let mut estimator = SpectrumEstimator::new(side);
        let mut sums = vec![0.0; estimator.rings()];
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let maps = 20;
        for _ in 0..maps {
            // Uniform on [−1, 1): variance 1/3.
            let map: Vec<f32> = (0..side * side)
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                })
                .collect();
            estimator.add(&map, &mut sums);
        }
        let spectrum: Vec<f64> = sums.iter().map(|s| s / maps as f64).collect();
        let mean = spectrum[4..].iter().sum::<f64>() / (spectrum.len() - 4) as f64;
        assert!((mean - 1.0 / 3.0).abs() < 0.01, "{mean}");
        // No ring with many modes strays far from it.
        assert!(spectrum[8..].iter().all(|p| (p / mean - 1.0).abs() < 0.2), "{spectrum:?}");
    }

    #[test]
    fn the_transform_takes_densities_to_the_unit_interval_and_back() {
        assert_eq!(to_unit(0.0), -1.0);
        assert_eq!(to_unit(TRANSFORM_SCALE), 0.0);
        assert!(to_unit(1e4) < 1.0 && to_unit(1e4) > 0.999);
        assert!(from_unit(1.0).is_finite() && from_unit(1.0) > 1e6);
        for x in [0.1f32, 1.0, 3.0, 40.0] {
            assert!((from_unit(to_unit(x)) - x).abs() < 1e-4 * x.max(1.0), "{x}");
        }
    }

    #[test]
    fn ks_distance_is_zero_for_one_distribution_and_one_for_disjoint_ones() {
        let (mut low, mut high) = (PixelHistogram::default(), PixelHistogram::default());
        for i in 0..100 {
            low.add(-0.9 + i as f32 * 1e-3);
            high.add(0.5 + i as f32 * 1e-3);
        }
        assert_eq!(ks_distance(&low, &low), Some(0.0));
        assert!((ks_distance(&low, &high).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(ks_distance(&low, &PixelHistogram::default()), None);
        high.add(f32::NAN);
        high.add(7.0);
        assert_eq!(high.counts().iter().sum::<f64>(), 102.0);
        assert_eq!(PixelHistogram::edges()[0], (-1.0, 0.0));
    }
}
