//! Samples made in memory, of a model's shapes, for runs that separate
//! compute and communication from I/O (the "dummy data" runs of Mathuriya
//! et al. 2018, section V-C): no file is opened and no byte read.
//!
//! ```
//! use loader::dataset::Dataset;
//! use loader::synthetic::{SyntheticDataset, Target};
//!
//! let data = SyntheticDataset::new(8, 3, 2, Target::Classes(3));
//! let (mut x, mut y) = (vec![0.0; 3], vec![0.0; 2]);
//! assert_eq!(data.read_into(5, &mut x, &mut y).unwrap(), 0);
//! assert!(x.iter().all(|v| (0.0..1.0).contains(v)));
//! assert!(y.iter().all(|c| [0.0, 1.0, 2.0].contains(c)));
//! ```

use crate::dataset::{Dataset, DatasetError};

/// What a synthetic sample's target holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Values drawn uniformly from [low, high) (regression targets).
    Values {
        /// Smallest value.
        low: f32,
        /// Bound above.
        high: f32,
    },
    /// Class indices 0..n as `f32` (segmentation labels).
    Classes(usize),
}

/// `len` samples of `x_len` inputs uniform in [0, 1) and `y_len` targets,
/// each a pure function of its index.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticDataset {
    len: usize,
    x_len: usize,
    y_len: usize,
    target: Target,
    /// Uniform values in [0, 1) each sample copies a stretch of, from a
    /// place of its own: making a sample costs a copy, so the loader's
    /// wait is what it is with data already in memory.
    block: Vec<f32>,
}

/// Values in [`SyntheticDataset`]'s block (256 KiB).
const BLOCK: usize = 1 << 16;

impl SyntheticDataset {
    /// A dataset of `len` samples of these shapes.
    pub fn new(len: usize, x_len: usize, y_len: usize, target: Target) -> Self {
        let block = (0..BLOCK as u64).map(|k| unit(splitmix(k))).collect();
        SyntheticDataset { len, x_len, y_len, target, block }
    }

    /// `out` filled from the block, starting at a place drawn from `key`.
    fn fill(&self, key: u64, out: &mut [f32]) {
        let mut at = (splitmix(key) % BLOCK as u64) as usize;
        for chunk in out.chunks_mut(BLOCK) {
            let (head, tail) = chunk.split_at_mut((BLOCK - at).min(chunk.len()));
            head.copy_from_slice(&self.block[at..at + head.len()]);
            tail.copy_from_slice(&self.block[..tail.len()]);
            at = tail.len();
        }
    }
}

/// SplitMix64 (Steele et al. 2014), the mix of a counter: the same values
/// for a sample on every rank and at every read, without a generator's
/// state to share between workers.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform value in [0, 1) from 24 random bits (exact in `f32`).
fn unit(bits: u64) -> f32 {
    (bits >> 40) as f32 / (1u64 << 24) as f32
}

impl Dataset for SyntheticDataset {
    fn len(&self) -> usize {
        self.len
    }

    fn x_len(&self) -> usize {
        self.x_len
    }

    fn y_len(&self) -> usize {
        self.y_len
    }

    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        if index >= self.len {
            return Err(DatasetError::OutOfRange { index, len: self.len });
        }
        let (x_len, y_len) = (self.x_len.min(x.len()), self.y_len.min(y.len()));
        self.fill(2 * index as u64, &mut x[..x_len]);
        let y = &mut y[..y_len];
        self.fill(2 * index as u64 + 1, y);
        match self.target {
            Target::Values { low, high } => y.iter_mut().for_each(|v| *v = low + (high - low) * *v),
            Target::Classes(n) => {
                y.iter_mut().for_each(|v| *v = ((*v * n as f32) as usize).min(n.saturating_sub(1)) as f32)
            }
        }
        Ok(0)
    }

    fn locate(&self, index: usize) -> String {
        format!("synthetic sample {index}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A sample is the same at every read; two samples differ; targets
    /// stay in their range; past the end is an error.
    #[test]
    fn samples_are_pure_functions_of_their_index_within_their_ranges() {
        let data = SyntheticDataset::new(4, 100, 10, Target::Values { low: -1.0, high: 1.0 });
        let read = |i| {
            let (mut x, mut y) = (vec![0.0; 100], vec![0.0; 10]);
            data.read_into(i, &mut x, &mut y).unwrap();
            (x, y)
        };
        assert_eq!(read(2), read(2));
        assert_ne!(read(2).0, read(3).0);
        let (x, y) = read(1);
        assert!(x.iter().all(|v| (0.0..1.0).contains(v)));
        assert!(y.iter().all(|v| (-1.0..1.0).contains(v)));
        assert!(matches!(
            data.read_into(4, &mut [0.0; 100], &mut [0.0; 10]),
            Err(DatasetError::OutOfRange { index: 4, len: 4 })
        ));
        let classes = SyntheticDataset::new(1, 0, 1000, Target::Classes(3));
        let mut y = vec![0.0; 1000];
        classes.read_into(0, &mut [], &mut y).unwrap();
        for c in [0.0, 1.0, 2.0] {
            assert!(y.contains(&c), "class {c} never drawn");
        }
        assert!(y.iter().all(|c| [0.0, 1.0, 2.0].contains(c)));
    }
}
