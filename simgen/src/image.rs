//! Pictures a person can look at: grayscale slices of a volume and a
//! log-log plot of measured against expected P(k), as PNG files.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// Write an 8-bit RGB image of `width` x `height` to `path`.
pub fn write_rgb(path: &Path, width: usize, height: usize, rgb: &[u8]) -> std::io::Result<()> {
    let file = BufWriter::new(File::create(path)?);
    let mut encoder = png::Encoder::new(file, width as u32, height as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer.write_image_data(rgb).map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

/// The middle slice (first axis) of a g³ grid of counts as a grayscale
/// image, brightness ∝ log(1 + count) scaled to the slice's maximum.
pub fn slice_preview(counts: &[f32], grid: usize, path: &Path) -> std::io::Result<()> {
    let slice = &counts[grid / 2 * grid * grid..(grid / 2 + 1) * grid * grid];
    let logs: Vec<f32> = slice.iter().map(|&c| c.max(0.0).ln_1p()).collect();
    let max = logs.iter().copied().fold(0.0, f32::max).max(1e-6);
    let rgb: Vec<u8> = logs.iter().flat_map(|&v| [(255.0 * v / max) as u8; 3]).collect();
    write_rgb(path, grid, grid, &rgb)
}

/// Points of one curve and its colour.
pub type Series<'a> = (&'a [(f64, f64)], [u8; 3]);

/// A log-log plot of `series` (each a list of (x, y) with a colour), with
/// grid lines at every decade. No text: the caller says what is what.
pub fn loglog_plot(series: &[Series<'_>], path: &Path) -> std::io::Result<()> {
    const W: usize = 640;
    const H: usize = 480;
    const MARGIN: usize = 30;
    let points = series.iter().flat_map(|(s, _)| s.iter()).filter(|(x, y)| *x > 0.0 && *y > 0.0);
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in points {
        (x0, x1, y0, y1) = (x0.min(x.log10()), x1.max(x.log10()), y0.min(y.log10()), y1.max(y.log10()));
    }
    if x0 >= x1 || y0 >= y1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    let mut rgb = vec![255u8; W * H * 3];
    let mut put = |px: i64, py: i64, colour: [u8; 3]| {
        if px >= 0 && py >= 0 && (px as usize) < W && (py as usize) < H {
            let i = (py as usize * W + px as usize) * 3;
            rgb[i..i + 3].copy_from_slice(&colour);
        }
    };
    let to_px = |lx: f64, ly: f64| {
        let px = MARGIN as f64 + (lx - x0) / (x1 - x0) * (W - 2 * MARGIN) as f64;
        let py = (H - MARGIN) as f64 - (ly - y0) / (y1 - y0) * (H - 2 * MARGIN) as f64;
        (px.round() as i64, py.round() as i64)
    };
    let grey = [210, 210, 210];
    for decade in (x0.floor() as i64)..=(x1.ceil() as i64) {
        let (px, _) = to_px(decade as f64, y0);
        for py in MARGIN..H - MARGIN {
            put(px, py as i64, grey);
        }
    }
    for decade in (y0.floor() as i64)..=(y1.ceil() as i64) {
        let (_, py) = to_px(x0, decade as f64);
        for px in MARGIN..W - MARGIN {
            put(px as i64, py, grey);
        }
    }
    for (s, colour) in series {
        let mut last: Option<(i64, i64)> = None;
        for &(x, y) in s.iter().filter(|(x, y)| *x > 0.0 && *y > 0.0) {
            let (px, py) = to_px(x.log10(), y.log10());
            if let Some((lx, ly)) = last {
                let steps = (px - lx).abs().max((py - ly).abs()).max(1);
                for t in 0..=steps {
                    put(lx + (px - lx) * t / steps, ly + (py - ly) * t / steps, *colour);
                }
            }
            for (dx, dy) in [(0, 0), (1, 0), (0, 1), (-1, 0), (0, -1)] {
                put(px + dx, py + dy, *colour);
            }
            last = Some((px, py));
        }
    }
    write_rgb(path, W, H, &rgb)
}
