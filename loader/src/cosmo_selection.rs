//! Which redshift channels of a CosmoFlow volume and which of its targets
//! a dataset gives: SC18's CosmoFlow (Mathuriya et al. 2018) trained on the
//! z = 0 snapshot alone and regressed three parameters (Ω_m, σ_8, n_s),
//! where the MLPerf HPC data hold four redshifts and four targets.
//!
//! ```
//! use formats::cosmoflow::CosmoShape;
//! use loader::cosmo_selection::CosmoSelection;
//! let shape = CosmoShape { size: 32, channels: 4 };
//! let sc18 = CosmoSelection::new(vec![0], vec![0, 1, 2], shape).unwrap();
//! assert_eq!((sc18.channels(), sc18.targets()), (&[0][..], &[0, 1, 2][..]));
//! assert!(CosmoSelection::new(vec![4], vec![0], shape).is_err());
//! ```

use formats::cosmoflow::{CosmoShape, TARGETS};

/// Channels and targets picked from every sample, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosmoSelection {
    channels: Vec<usize>,
    targets: Vec<usize>,
    all_channels: bool,
}

/// A selection a dataset of that shape cannot give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {index} is not one of the data's {available} (0 to {last}), or is empty or repeated", last = available.saturating_sub(1))]
pub struct SelectionError {
    /// `channel` or `target`.
    pub what: &'static str,
    /// The index that is wrong (the count when none is given).
    pub index: usize,
    /// How many the data have.
    pub available: usize,
}

impl CosmoSelection {
    /// Every channel and target, in the file's order.
    pub fn all(shape: CosmoShape) -> Self {
        CosmoSelection { channels: (0..shape.channels).collect(), targets: (0..TARGETS).collect(), all_channels: true }
    }

    /// `channels` of x and `targets` of y (indices into the file's), each
    /// non-empty, in range and without repeats.
    pub fn new(channels: Vec<usize>, targets: Vec<usize>, shape: CosmoShape) -> Result<Self, SelectionError> {
        check("channel", &channels, shape.channels)?;
        check("target", &targets, TARGETS)?;
        let all_channels = channels.iter().copied().eq(0..shape.channels);
        Ok(CosmoSelection { channels, targets, all_channels })
    }

    /// The channels, as indices into the file's.
    pub fn channels(&self) -> &[usize] {
        &self.channels
    }

    /// The targets, as indices into the file's.
    pub fn targets(&self) -> &[usize] {
        &self.targets
    }

    /// Whether x is the file's volume unchanged (every channel in order).
    pub fn keeps_every_channel(&self) -> bool {
        self.all_channels
    }

    /// Copy the selected channels of `raw` (little-endian int16 voxels,
    /// `channels` interleaved per voxel, as the files store them) into
    /// `out`, interleaved in the selection's order.
    pub fn gather_counts(&self, raw: &[u8], channels: usize, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(raw.len() / channels.max(1) * self.channels.len());
        for voxel in raw.chunks_exact(2 * channels) {
            for &c in &self.channels {
                out.extend_from_slice(&voxel[2 * c..2 * c + 2]);
            }
        }
    }

    /// Copy the selected targets of `y` into `out`.
    pub fn pick_targets(&self, y: &[f32], out: &mut [f32]) {
        for (o, &t) in out.iter_mut().zip(&self.targets) {
            *o = y[t];
        }
    }
}

/// `picked` is non-empty, without repeats and below `available`: what
/// [`CosmoSelection::new`] checks, for callers that check a pick before the
/// data's channel count is known (give `usize::MAX`).
pub fn check(what: &'static str, picked: &[usize], available: usize) -> Result<(), SelectionError> {
    if picked.is_empty() {
        return Err(SelectionError { what, index: 0, available });
    }
    for (i, &index) in picked.iter().enumerate() {
        if index >= available || picked[..i].contains(&index) {
            return Err(SelectionError { what, index, available });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: CosmoShape = CosmoShape { size: 2, channels: 4 };

    #[test]
    fn gathering_picks_each_voxels_channels_in_the_selections_order() {
        // 8 voxels × 4 channels, value = 10·voxel + channel.
        let raw: Vec<u8> = (0..8i16).flat_map(|v| (0..4i16).flat_map(move |c| (10 * v + c).to_le_bytes())).collect();
        let picked = CosmoSelection::new(vec![3, 0], vec![0], SHAPE).unwrap();
        let mut out = Vec::new();
        picked.gather_counts(&raw, 4, &mut out);
        let values: Vec<i16> = out.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
        let expected: Vec<i16> = (0..8).flat_map(|v| [10 * v + 3, 10 * v]).collect();
        assert_eq!(values, expected);
        assert!(!picked.keeps_every_channel());
        assert!(CosmoSelection::all(SHAPE).keeps_every_channel());
        assert!(CosmoSelection::new(vec![0, 1, 2, 3], vec![0], SHAPE).unwrap().keeps_every_channel());
    }

    #[test]
    fn targets_come_in_the_selections_order() {
        let picked = CosmoSelection::new(vec![0], vec![2, 0, 1], SHAPE).unwrap();
        let mut out = [0.0; 3];
        picked.pick_targets(&[0.1, 0.2, 0.3, 0.4], &mut out);
        assert_eq!(out, [0.3, 0.1, 0.2]);
    }

    #[test]
    fn out_of_range_repeated_or_empty_picks_are_refused() {
        for (channels, targets, what, index) in [
            (vec![4], vec![0], "channel", 4),
            (vec![0, 0], vec![0], "channel", 0),
            (vec![], vec![0], "channel", 0),
            (vec![0], vec![TARGETS], "target", TARGETS),
            (vec![0], vec![1, 1], "target", 1),
            (vec![0], vec![], "target", 0),
        ] {
            let e = CosmoSelection::new(channels.clone(), targets.clone(), SHAPE).unwrap_err();
            assert_eq!((e.what, e.index), (what, index), "{channels:?} {targets:?}: {e}");
        }
    }
}
