//! `--plot`'s pictures of CosmoGAN: real maps beside generated ones (one
//! pair a row, on one logarithmic colour scale) at the path asked for, and
//! their mean power spectra on log-log axes beside it (`NAME-spectra.png`),
//! so a reader sees whether the generator makes the filaments and voids
//! of the real maps and at which scales it falls short.

use std::path::{Path, PathBuf};

use formats::massmaps::statistics::SpectrumEstimator;
use plotters::prelude::*;
use simgen::heatmap::{Heatmap, Scale};

use crate::plot::{PALETTE, use_embedded_font, write_rgb};

const WIDTH: u32 = 640;
const HEIGHT: u32 = 440;

/// Where the spectra of the maps drawn at `path` go: `NAME-spectra.png`
/// beside it.
pub fn spectra_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "cosmogan".into());
    path.with_file_name(format!("{stem}-spectra.png"))
}

/// Draw `real` and `generated` maps (ρ/ρ̄, side² values each, as many of
/// each) side by side at `path`, and their mean spectra at
/// [`spectra_path`].
pub fn write(real: &[f32], generated: &[f32], side: usize, path: &Path) -> std::io::Result<()> {
    let maps = real.len() / (side * side).max(1);
    let (grid, shape) = crate::models::inverse::picture::side_by_side(real, generated, (side, side));
    let title = format!("{maps} maps: held-out real (left), generated (right)");
    Heatmap { title: &title, unit: "ρ/ρ̄", scale: Scale::Log { decades: 3 }, axes: None, outlines: None }
        .write(&grid, shape, path)?;
    let mut estimator = SpectrumEstimator::new(side);
    let spectrum = |maps: &[f32], estimator: &mut SpectrumEstimator| {
        let mut sums = vec![0f64; estimator.rings()];
        let count = maps.chunks_exact(side * side).map(|m| estimator.add(m, &mut sums)).count().max(1);
        sums.iter().map(|s| s / count as f64).collect::<Vec<f64>>()
    };
    let curves = [("real", spectrum(real, &mut estimator)), ("generated", spectrum(generated, &mut estimator))];
    let rgb = render(&curves).map_err(std::io::Error::other)?;
    write_rgb(&rgb, (WIDTH, HEIGHT), &spectra_path(path))
}

/// 1, 2, 4, … up to `top`: ticks that do not crowd on a log axis.
fn powers_of_two(top: f64) -> Vec<f64> {
    std::iter::successors(Some(1.0), |k| Some(k * 2.0)).take_while(|&k| k <= top).collect()
}

/// The spectra as RGB pixels: P against ring, both axes logarithmic.
fn render(curves: &[(&str, Vec<f64>)]) -> Result<Vec<u8>, String> {
    use_embedded_font();
    let positive = curves.iter().flat_map(|(_, p)| p.iter().copied()).filter(|p| p.is_finite() && *p > 0.0);
    let (lo, hi) = positive.fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p), hi.max(p)));
    let (lo, hi) = if lo < hi { (lo / 2.0, hi * 2.0) } else { (1e-3, 1e3) };
    let rings = curves.iter().map(|(_, p)| p.len()).max().unwrap_or(1).max(2) as f64;
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<_>| format!("drawing the spectra: {e}");
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("power spectrum of the maps", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d((1.0..rings).log_scale().with_key_points(powers_of_two(rings)), (lo..hi).log_scale())
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("k (cycles per map side)")
            .y_desc("P(k) (pixels²)")
            .light_line_style(WHITE)
            .draw()
            .map_err(e)?;
        for (k, (label, power)) in curves.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let points =
                power.iter().enumerate().map(|(m, &p)| ((m + 1) as f64, p)).filter(|(_, p)| p.is_finite() && *p > 0.0);
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                .map_err(e)?
                .label(*label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    Ok(rgb)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn maps_and_spectra_are_drawn_as_two_pngs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cosmogan.png");
        let side = 16;
        let real: Vec<f32> = (0..2 * side * side).map(|i| 1.0 + (i as f32 * 0.37).sin()).collect();
        let generated: Vec<f32> = real.iter().map(|v| v * 0.5 + 0.5).collect();
        write(&real, &generated, side, &path).unwrap();
        for p in [path.clone(), spectra_path(&path)] {
            let bytes = std::fs::read(&p).unwrap();
            assert_eq!(&bytes[1..4], b"PNG", "{}", p.display());
        }
        assert!(spectra_path(&path).ends_with("cosmogan-spectra.png"));
        assert_eq!(powers_of_two(32.0), [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
    }
}
