//! Mass assignment of displaced particles to a periodic grid, and the cut
//! into CosmoFlow sub-volumes of int16 counts.

use super::field::Displacements;

/// Mass-assignment scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignment {
    /// Nearest grid point (integer counts, as the CosmoFlow histograms).
    Ngp,
    /// Cloud in cell (fractional counts: `simgen cosmo` refuses to round
    /// them into int16 samples; `simgen pk --compensate cic` measures
    /// spectra of CIC fields made elsewhere).
    Cic,
}

impl Assignment {
    /// The window exponent p of W(k) = Π sinc(k_i H/2)^p.
    pub fn window_power(self) -> i32 {
        match self {
            Assignment::Ngp => 1,
            Assignment::Cic => 2,
        }
    }
}

/// Particle counts on a g³ periodic grid (C order), particles of the
/// lattice q = (i, j, k) L/n moved by `d1 psi1 + d2 psi2`.
pub fn assign(disp: &Displacements, box_size: f64, d1: f32, d2: f32, grid: usize, scheme: Assignment) -> Vec<f32> {
    let n = disp.n;
    let mut counts = vec![0f32; grid * grid * grid];
    let spacing = (box_size / n as f64) as f32;
    let to_cells = grid as f32 / box_size as f32;
    let g = grid as i64;
    // Positions are shifted by 4 boxes so they are positive and `as i64`
    // (truncation) is floor; no displacement moves a particle 4 boxes.
    let shift = 4.0 * grid as f32;
    let wrap = |v: i64| (v % g) as usize;
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let p = (i * n + j) * n + k;
                let q = [i as f32 * spacing, j as f32 * spacing, k as f32 * spacing];
                let mut x = [0f32; 3];
                for a in 0..3 {
                    let mut v = q[a] + d1 * disp.first[a][p];
                    if let Some(second) = &disp.second {
                        v += d2 * second[a][p];
                    }
                    x[a] = v * to_cells;
                }
                match scheme {
                    Assignment::Ngp => {
                        let [a, b, c] = x.map(|v| wrap((v + shift + 0.5) as i64));
                        counts[(a * grid + b) * grid + c] += 1.0;
                    }
                    Assignment::Cic => {
                        let shifted = x.map(|v| v + shift);
                        let base = shifted.map(|v| v as i64);
                        let frac = [0, 1, 2].map(|a| shifted[a] - base[a] as f32);
                        for corner in 0..8 {
                            let mut w = 1.0;
                            let mut cell = [0usize; 3];
                            for a in 0..3 {
                                let up = (corner >> a) & 1 == 1;
                                w *= if up { frac[a] } else { 1.0 - frac[a] };
                                cell[a] = wrap(base[a] + i64::from(up));
                            }
                            counts[(cell[0] * grid + cell[1]) * grid + cell[2]] += w;
                        }
                    }
                }
            }
        }
    }
    counts
}

/// Writes channel `channel` of the `split³` sub-volumes of a g³ grid of
/// counts into `samples` (each (s, s, s, channels) C order, s = g/split),
/// rounding and saturating at int16; returns the number of saturated voxels.
pub fn cut_into(
    counts: &[f32],
    grid: usize,
    split: usize,
    channel: usize,
    channels: usize,
    samples: &mut [Vec<i16>],
) -> u64 {
    let s = grid / split;
    let mut saturated = 0;
    for (index, sample) in samples.iter_mut().enumerate() {
        let (bi, bj, bk) = (index / (split * split), (index / split) % split, index % split);
        for i in 0..s {
            for j in 0..s {
                for k in 0..s {
                    // Counts are >= 0, so adding 0.5 and truncating rounds.
                    let v = (counts[((bi * s + i) * grid + bj * s + j) * grid + bk * s + k] + 0.5) as i64;
                    if v > i64::from(i16::MAX) {
                        saturated += 1;
                    }
                    sample[((i * s + j) * s + k) * channels + channel] = v.min(i64::from(i16::MAX)) as i16;
                }
            }
        }
    }
    saturated
}

#[cfg(test)]
mod tests {
    use super::*;

    fn still(n: usize) -> Displacements {
        Displacements { n, first: [vec![0.0; n * n * n], vec![0.0; n * n * n], vec![0.0; n * n * n]], second: None }
    }

    #[test]
    fn every_particle_is_counted_once_whatever_the_scheme() {
        let n = 8;
        let mut d = still(n);
        // Large displacements that wrap around the box in every direction.
        for a in 0..3 {
            for (p, v) in d.first[a].iter_mut().enumerate() {
                *v = ((p * (a + 3)) % 17) as f32 * 7.3 - 60.0;
            }
        }
        for scheme in [Assignment::Ngp, Assignment::Cic] {
            let counts = assign(&d, 100.0, 1.0, 0.0, 4, scheme);
            let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
            assert!((total - 512.0).abs() < 1e-3, "{scheme:?}: {total}");
        }
    }

    #[test]
    fn an_undisplaced_lattice_fills_a_matching_grid_evenly() {
        let counts = assign(&still(4), 64.0, 1.0, 0.0, 4, Assignment::Ngp);
        assert!(counts.iter().all(|&c| c == 1.0));
        let counts = assign(&still(4), 64.0, 1.0, 0.0, 2, Assignment::Cic);
        assert!(counts.iter().all(|&c| (c - 8.0).abs() < 1e-5));
    }

    #[test]
    fn sub_volumes_tile_the_grid_and_saturate_at_int16() {
        let grid = 4;
        let mut counts: Vec<f32> = (0..64).map(|v| v as f32).collect();
        counts[63] = 40_000.0;
        let mut samples = vec![vec![0i16; 8 * 2]; 8];
        let saturated = cut_into(&counts, grid, 2, 1, 2, &mut samples);
        assert_eq!(saturated, 1);
        // Sub-volume 7 is the (1, 1, 1) corner; its last voxel is cell 63.
        assert_eq!(samples[7][7 * 2 + 1], i16::MAX);
        assert_eq!(samples[0][1], 0);
        assert_eq!(samples[1][1], 2); // (0, 0, 1) block starts at k = 2
        let all: i64 = samples.iter().flat_map(|s| s.iter().skip(1).step_by(2)).map(|&v| i64::from(v)).sum();
        assert_eq!(all, (0..63).sum::<i64>() + i64::from(i16::MAX));
    }
}
