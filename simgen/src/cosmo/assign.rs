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
    let offset = |p: usize, axis: usize| {
        let mut v = d1 * disp.first[axis][p];
        if let Some(second) = &disp.second {
            v += d2 * second[axis][p];
        }
        v
    };
    assign_offsets(disp.n, box_size, grid, scheme, offset)
}

/// Particle counts on a g³ periodic grid (C order) of the n³ particles of
/// the lattice q = (i, j, k) L/n, particle p moved along `axis` by
/// `offset(p, axis)` Mpc/h.
pub fn assign_offsets(
    n: usize,
    box_size: f64,
    grid: usize,
    scheme: Assignment,
    offset: impl Fn(usize, usize) -> f32,
) -> Vec<f32> {
    let mut counts = vec![0f32; grid * grid * grid];
    let cells = CellMap::new(n, box_size, grid);
    cells.for_each_position(offset, |_, x| match scheme {
        Assignment::Ngp => counts[cells.nearest(x)] += 1.0,
        Assignment::Cic => {
            for (cell, weight) in cells.cic_corners(x) {
                counts[cell] += weight;
            }
        }
    });
    counts
}

/// Where a lattice particle sits on a periodic grid, in cells.
pub struct CellMap {
    n: usize,
    grid: usize,
    spacing: f32,
    to_cells: f32,
    origin: f32,
}

impl CellMap {
    /// Particles n per side in a box of `box_size`, on a grid of `grid` cells per side.
    pub fn new(n: usize, box_size: f64, grid: usize) -> Self {
        CellMap { n, grid, spacing: (box_size / n as f64) as f32, to_cells: grid as f32 / box_size as f32, origin: 0.0 }
    }

    /// The same map with the lattice moved half a cell along each axis, so
    /// an undisplaced particle sits midway between cell centres. Cloud in
    /// cell's weights have a kink at a cell centre: a particle that starts
    /// there deposits a forward difference of the displacement on one side
    /// and a backward one on the other, which no amplitude, however small,
    /// makes linear. Midway, small displacements stay on the kernel's
    /// straight part.
    pub fn staggered(self) -> Self {
        CellMap { origin: 0.5, ..self }
    }

    /// Call `f(p, x)` for every particle p in order, x its position in
    /// cells (not wrapped) after moving by `offset(p, axis)` Mpc/h.
    pub fn for_each_position(&self, offset: impl Fn(usize, usize) -> f32, mut f: impl FnMut(usize, [f32; 3])) {
        let n = self.n;
        let cell = |l: usize| l as f32 * self.spacing;
        let mut p = 0;
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let q = [cell(i), cell(j), cell(k)];
                    f(p, [0, 1, 2].map(|axis| (q[axis] + offset(p, axis)) * self.to_cells + self.origin));
                    p += 1;
                }
            }
        }
    }

    // Positions are shifted by 4 boxes so they are positive and `as i64`
    // (truncation) is floor; no displacement moves a particle 4 boxes.
    fn shifted(&self, v: f32) -> f32 {
        v + 4.0 * self.grid as f32
    }

    fn wrap(&self, v: i64) -> usize {
        (v % self.grid as i64) as usize
    }

    /// The index of the cell nearest to `x` (cells).
    pub fn nearest(&self, x: [f32; 3]) -> usize {
        let [a, b, c] = x.map(|v| self.wrap((self.shifted(v) + 0.5) as i64));
        (a * self.grid + b) * self.grid + c
    }

    /// The eight cells around `x` (cells) and their cloud-in-cell weights
    /// (Hockney & Eastwood 1988, §5-3), which sum to 1.
    pub fn cic_corners(&self, x: [f32; 3]) -> [(usize, f32); 8] {
        let grid = self.grid;
        let mut cells = [[0usize; 2]; 3];
        let mut weights = [[0f32; 2]; 3];
        for a in 0..3 {
            let shifted = self.shifted(x[a]);
            let base = shifted as i64;
            let frac = shifted - base as f32;
            let low = self.wrap(base);
            cells[a] = [low, if low + 1 == grid { 0 } else { low + 1 }];
            weights[a] = [1.0 - frac, frac];
        }
        std::array::from_fn(|corner| {
            let [u, v, w] = [corner & 1, (corner >> 1) & 1, (corner >> 2) & 1];
            ((cells[0][u] * grid + cells[1][v]) * grid + cells[2][w], weights[0][u] * weights[1][v] * weights[2][w])
        })
    }
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
