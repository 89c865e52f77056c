//! Data augmentation by the symmetries of the cube. A simulated universe is
//! statistically isotropic, so a volume turned or mirrored is another
//! volume of the same cosmology: the 48 rotations and reflections of the
//! cube (6 orders of the axes × 8 sets of flipped axes) multiply the
//! training set without changing a target. Which one a sample gets is drawn
//! from (seed, epoch, sample id): a resumed run draws the same, and so does
//! a run on another number of ranks.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The orders of the three spatial axes.
const AXIS_ORDERS: [[usize; 3]; 6] = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];

/// One of the 48 symmetries of the cube: output axis `a` runs along input
/// axis `axes[a]`, backwards if `flip[a]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubeSymmetry {
    axes: [usize; 3],
    flip: [bool; 3],
}

impl CubeSymmetry {
    /// Symmetries there are.
    pub const COUNT: usize = 48;

    /// Symmetry number `k` (0 is the identity); `k` is taken modulo 48.
    pub fn nth(k: usize) -> Self {
        let k = k % Self::COUNT;
        let flips = k % 8;
        CubeSymmetry { axes: AXIS_ORDERS[k / 8], flip: [flips & 1 != 0, flips & 2 != 0, flips & 4 != 0] }
    }

    /// Write `src`, a cube of `d`³ voxels of `c` channels (channels last),
    /// turned by this symmetry into `dst`.
    ///
    /// # Panics
    /// If either slice does not hold `d³·c` values.
    pub fn apply(&self, src: &[f32], dst: &mut [f32], d: usize, c: usize) {
        assert!(src.len() == d * d * d * c && dst.len() == src.len(), "a cube of {d}³×{c} values");
        if d == 0 || c == 0 {
            return;
        }
        let strides = [d * d * c, d * c, c];
        // Where output axis a starts in `src` and how far one step along it moves.
        let (mut start, mut step) = ([0isize; 3], [0isize; 3]);
        for a in 0..3 {
            let stride = strides[self.axes[a]] as isize;
            (start[a], step[a]) = if self.flip[a] { ((d as isize - 1) * stride, -stride) } else { (0, stride) };
        }
        let base = start.iter().sum::<isize>();
        let mut out = dst.chunks_exact_mut(c);
        for i in 0..d as isize {
            for j in 0..d as isize {
                let row = base + i * step[0] + j * step[1];
                for k in 0..d as isize {
                    let at = (row + k * step[2]) as usize;
                    if let Some(voxel) = out.next() {
                        voxel.copy_from_slice(&src[at..at + c]);
                    }
                }
            }
        }
    }
}

/// The symmetry sample `id` gets in `epoch` of a run seeded `seed`.
pub fn symmetry_for(seed: u64, epoch: u64, id: usize) -> CubeSymmetry {
    let key = seed.rotate_left(17)
        ^ epoch.wrapping_mul(0xd6e8_feb8_6659_fd93)
        ^ (id as u64).wrapping_mul(0xa076_1d64_78bd_642f);
    CubeSymmetry::nth(ChaCha8Rng::seed_from_u64(key).random_range(0..CubeSymmetry::COUNT))
}

/// The batch `src` (`ids[k]` is sample k's id; the samples one after
/// another) with each sample turned by its [`symmetry_for`], written
/// straight into a new buffer (no copy of the batch first).
pub fn augment_batch(src: &[f32], d: usize, c: usize, (seed, epoch): (u64, u64), ids: &[usize]) -> Vec<f32> {
    let mut dst = vec![0f32; src.len()];
    let sample = d * d * d * c;
    if sample == 0 {
        return dst;
    }
    for ((from, to), &id) in src.chunks_exact(sample).zip(dst.chunks_exact_mut(sample)).zip(ids) {
        let symmetry = symmetry_for(seed, epoch, id);
        if symmetry == CubeSymmetry::nth(0) {
            to.copy_from_slice(from);
        } else {
            symmetry.apply(from, to, d, c);
        }
    }
    dst
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// A cube whose every value is distinct: voxel (i, j, k), channel ch.
    fn labelled(d: usize, c: usize) -> Vec<f32> {
        (0..d * d * d * c).map(|v| v as f32).collect()
    }

    fn turned(s: CubeSymmetry, src: &[f32], d: usize, c: usize) -> Vec<f32> {
        let mut dst = vec![f32::NAN; src.len()];
        s.apply(src, &mut dst, d, c);
        dst
    }

    #[test]
    fn the_identity_changes_nothing() {
        let src = labelled(5, 3);
        assert_eq!(turned(CubeSymmetry::nth(0), &src, 5, 3), src);
    }

    #[test]
    fn the_48_symmetries_are_distinct_permutations_of_whole_voxels() {
        let (d, c) = (4, 2);
        let src = labelled(d, c);
        let mut seen = HashSet::new();
        for k in 0..CubeSymmetry::COUNT {
            let out = turned(CubeSymmetry::nth(k), &src, d, c);
            let mut sorted = out.clone();
            sorted.sort_by(f32::total_cmp);
            assert_eq!(sorted, src, "symmetry {k} is not a permutation");
            for voxel in out.chunks(c) {
                // Channels travel together: channel 1 follows channel 0 of the same voxel.
                assert_eq!(voxel[1], voxel[0] + 1.0, "symmetry {k} split a voxel");
            }
            assert!(seen.insert(out.iter().map(|v| *v as u32).collect::<Vec<_>>()), "symmetry {k} repeats another");
        }
    }

    #[test]
    fn a_flip_mirrors_and_a_swap_transposes() {
        let d = 3;
        let src = labelled(d, 1);
        let at = |v: &[f32], i: usize, j: usize, k: usize| v[(i * d + j) * d + k];
        // nth(1) flips the first axis; nth(8) swaps the last two.
        let (flip, swap) = (turned(CubeSymmetry::nth(1), &src, d, 1), turned(CubeSymmetry::nth(8), &src, d, 1));
        for (i, j, k) in (0..d).flat_map(|i| (0..d).flat_map(move |j| (0..d).map(move |k| (i, j, k)))) {
            assert_eq!(at(&flip, i, j, k), at(&src, d - 1 - i, j, k));
            assert_eq!(at(&swap, i, j, k), at(&src, i, k, j));
        }
    }

    #[test]
    fn a_sample_gets_the_same_turn_in_the_same_epoch_wherever_it_sits() {
        let (d, c) = (4, 1);
        let batch: Vec<f32> = (0..8).flat_map(|_| labelled(d, c)).collect();
        let run = |epoch, ids: &[usize]| augment_batch(&batch, d, c, (3, epoch), ids);
        let ids: Vec<usize> = (10..18).collect();
        let first = run(5, &ids);
        assert_eq!(first, run(5, &ids));
        assert_ne!(first, run(6, &ids));
        assert_ne!(first, batch, "eight samples all drew the identity");
        // Sample 13 alone, in a batch of one: the same turn as inside the batch.
        let sample = d * d * d * c;
        let alone = augment_batch(&labelled(d, c), d, c, (3, 5), &[13]);
        assert_eq!(alone, first[3 * sample..4 * sample]);
    }
}
