//! The training loss curve as a PNG a person can look at: loss against
//! step on a log scale, a light grid line at every decade, and a darker
//! line at each epoch boundary. Drawn directly into pixels (no font
//! needed: the report carries the numbers).

use std::io::BufWriter;
use std::path::Path;

const WIDTH: usize = 800;
const HEIGHT: usize = 480;
const MARGIN: usize = 20;

/// Write the curve of `losses` (one per step) with epoch boundaries every
/// `steps_per_epoch` steps to `path`.
pub fn loss_curve(losses: &[f32], steps_per_epoch: usize, path: &Path) -> std::io::Result<()> {
    let mut rgb = vec![255u8; WIDTH * HEIGHT * 3];
    let mut put = |x: usize, y: usize, colour: [u8; 3]| {
        if x < WIDTH && y < HEIGHT {
            rgb[(y * WIDTH + x) * 3..][..3].copy_from_slice(&colour);
        }
    };
    let finite: Vec<f64> =
        losses.iter().filter(|l| l.is_finite() && **l > 0.0).map(|&l| f64::from(l).log10()).collect();
    let (lo, hi) = finite.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo < hi { (lo.floor(), hi.ceil()) } else { (lo.floor() - 1.0, lo.floor() + 1.0) };
    let (plot_w, plot_h) = (WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN);
    let y_of = |log: f64| MARGIN + plot_h - (((log - lo) / (hi - lo)) * plot_h as f64).round() as usize;
    let x_of = |step: usize| MARGIN + step * plot_w / losses.len().max(2).saturating_sub(1).max(1);
    for decade in (lo as i32)..=(hi as i32) {
        let y = y_of(f64::from(decade));
        (MARGIN..WIDTH - MARGIN).for_each(|x| put(x, y, [220, 220, 220]));
    }
    if steps_per_epoch > 0 {
        for boundary in (steps_per_epoch..losses.len()).step_by(steps_per_epoch) {
            let x = x_of(boundary);
            (MARGIN..HEIGHT - MARGIN).for_each(|y| put(x, y, [170, 170, 170]));
        }
    }
    (MARGIN..WIDTH - MARGIN).for_each(|x| put(x, HEIGHT - MARGIN, [0, 0, 0]));
    (MARGIN..HEIGHT - MARGIN).for_each(|y| put(MARGIN, y, [0, 0, 0]));
    let mut last: Option<(usize, usize)> = None;
    for (step, loss) in losses.iter().enumerate() {
        if !(loss.is_finite() && *loss > 0.0) {
            last = None;
            continue;
        }
        let point = (x_of(step), y_of(f64::from(*loss).log10()));
        if let Some((x0, y0)) = last {
            // A straight segment from the previous point.
            let n = x0.abs_diff(point.0).max(y0.abs_diff(point.1)).max(1);
            for k in 0..=n {
                let x = x0 as f64 + (point.0 as f64 - x0 as f64) * k as f64 / n as f64;
                let y = y0 as f64 + (point.1 as f64 - y0 as f64) * k as f64 / n as f64;
                put(x.round() as usize, y.round() as usize, [30, 90, 200]);
            }
        }
        put(point.0, point.1, [30, 90, 200]);
        last = Some(point);
    }
    let file = std::fs::File::create(path)?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), WIDTH as u32, HEIGHT as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer.write_image_data(&rgb).map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}
