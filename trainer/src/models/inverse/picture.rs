//! `--plot`'s picture of the inverse model: for a few validation samples,
//! the target density beside the network's reconstruction, one sample a
//! row, on one colour scale, so a reader sees at a glance what the network
//! gets and what it misses.

use std::path::Path;

use simgen::heatmap::{Heatmap, Scale};

/// Sides smaller than this are enlarged by whole pixels to be seen.
const LEGIBLE_SIDE: usize = 160;

/// The samples' targets and predictions (`samples × h × w` each, in the
/// targets' units) as one array: row k holds sample k's target, a gap and
/// its prediction, each pixel repeated `zoom` times. Gaps take the smallest
/// value shown. Returns the array and its (rows, columns).
pub fn side_by_side(targets: &[f32], predictions: &[f32], (h, w): (usize, usize)) -> (Vec<f32>, (usize, usize)) {
    let samples = targets.len() / (h * w).max(1);
    let zoom = (LEGIBLE_SIDE / h.max(w).max(1)).max(1);
    let (zh, zw) = (h * zoom, w * zoom);
    let gap = (zw / 32).max(2);
    let (rows, columns) = (samples * zh + samples.saturating_sub(1) * gap, 2 * zw + gap);
    let lowest = targets.iter().chain(predictions).copied().filter(|v| v.is_finite()).fold(f32::INFINITY, f32::min);
    let mut grid = vec![if lowest.is_finite() { lowest } else { 0.0 }; rows * columns];
    for k in 0..samples {
        for (image, left) in [(targets, 0), (predictions, zw + gap)] {
            for r in 0..zh {
                let source = &image[(k * h + r / zoom) * w..][..w];
                let row = &mut grid[(k * (zh + gap) + r) * columns + left..][..zw];
                for (c, v) in row.iter_mut().enumerate() {
                    *v = source[c / zoom];
                }
            }
        }
    }
    (grid, (rows, columns))
}

/// Draw [`side_by_side`] to the PNG `path`.
pub fn write(targets: &[f32], predictions: &[f32], size: (usize, usize), path: &Path) -> std::io::Result<()> {
    let samples = targets.len() / (size.0 * size.1).max(1);
    let (grid, shape) = side_by_side(targets, predictions, size);
    let title = format!("{samples} validation samples: target (left), reconstruction (right)");
    Heatmap {
        title: &title,
        unit: "target (simgen multislice --target)",
        scale: Scale::Linear,
        axes: None,
        outlines: None,
    }
    .write(&grid, shape, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two 2 × 3 samples: each row holds the target, then the gap, then
    /// the prediction, every pixel enlarged alike; gaps take the minimum.
    #[test]
    fn targets_sit_left_of_their_predictions() {
        let targets: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let predictions: Vec<f32> = (0..12).map(|v| 100.0 + v as f32).collect();
        let (grid, (rows, columns)) = side_by_side(&targets, &predictions, (2, 3));
        let zoom = LEGIBLE_SIDE / 3;
        let (zh, zw, gap) = (2 * zoom, 3 * zoom, (3 * zoom / 32).max(2));
        assert_eq!((rows, columns), (2 * zh + gap, 2 * zw + gap));
        let at = |k: usize, r: usize, c: usize| grid[(k * (zh + gap) + r * zoom) * columns + c];
        for k in 0..2 {
            for r in 0..2 {
                for c in 0..3 {
                    assert_eq!(at(k, r, c * zoom), targets[(k * 2 + r) * 3 + c]);
                    assert_eq!(at(k, r, zw + gap + c * zoom), predictions[(k * 2 + r) * 3 + c]);
                }
            }
        }
        assert_eq!(grid[zh * columns], 0.0, "the gap between samples");
        assert_eq!(grid[zw], 0.0, "the gap between target and prediction");
    }
}
