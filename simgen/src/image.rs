//! Pictures a person can look at: slices of a volume and a log-log plot
//! of measured against expected P(k), as PNG files.

use std::path::Path;

use plotters::prelude::*;

use crate::heatmap::{Axes, Axis, Heatmap, Scale, register_font};
use crate::png::write_rgb;

/// The middle slice (first axis) of a g³ grid of particle counts in a box
/// of `box_size` Mpc/h, as a heatmap of log(1 + count) with axes in Mpc/h
/// and a colour bar. The logarithm shows filaments and voids next to
/// haloes whose counts are a hundred times larger.
pub fn slice_preview(counts: &[f32], grid: usize, box_size: f64, title: &str, path: &Path) -> std::io::Result<()> {
    let slice = &counts[grid / 2 * grid * grid..(grid / 2 + 1) * grid * grid];
    let logs: Vec<f32> = slice.iter().map(|&c| c.max(0.0).ln_1p()).collect();
    let axis = |label| Axis { label, range: (0.0, box_size) };
    Heatmap {
        title,
        unit: "ln(1 + particles per cell)",
        scale: Scale::Linear,
        axes: Some(Axes { x: axis("x (Mpc/h)"), y: axis("y (Mpc/h)") }),
        outlines: None,
    }
    .write(&logs, (grid, grid), path)
}

/// What [`power_spectrum_plot`] draws.
pub struct PowerSpectrumPlot<'a> {
    /// Above the plot (which sample, which cosmology).
    pub title: &'a str,
    /// (k in h/Mpc, P in (Mpc/h)³) measured from the counts.
    pub measured: &'a [(f64, f64)],
    /// The same k with linear theory at the sample's redshift.
    pub theory: &'a [(f64, f64)],
    /// The same k with halofit's nonlinear spectrum (empty: not drawn).
    pub nonlinear: &'a [(f64, f64)],
    /// Shot-noise level of the particle count, (Mpc/h)³.
    pub shot_noise: f64,
}

const PLOT_WIDTH: u32 = 800;
const PLOT_HEIGHT: u32 = 560;

/// 1, 2 and 5 times the powers of ten within [lo, hi]: tick marks on a log
/// axis spanning less than a decade or two (plotters' own stop at decades).
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    (-6..6).flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e))).filter(|t| (lo..=hi).contains(t)).collect()
}

/// Write the measured power spectrum against linear theory as a log-log
/// plot with labelled axes, a legend and the shot-noise level.
pub fn power_spectrum_plot(plot: &PowerSpectrumPlot<'_>, path: &Path) -> std::io::Result<()> {
    register_font();
    let positive = |s: &[(f64, f64)]| s.iter().copied().filter(|(k, p)| *k > 0.0 && *p > 0.0).collect::<Vec<_>>();
    let (measured, theory, nonlinear) = (positive(plot.measured), positive(plot.theory), positive(plot.nonlinear));
    let all = measured.iter().chain(&theory).chain(&nonlinear);
    let (k0, k1) = all.clone().fold((f64::MAX, f64::MIN), |(a, b), (k, _)| (a.min(*k), b.max(*k)));
    let (p0, p1) = all.fold((f64::MAX, f64::MIN), |(a, b), (_, p)| (a.min(*p), b.max(*p)));
    let p0 = if plot.shot_noise > 0.0 { p0.min(plot.shot_noise) } else { p0 };
    let (k0, k1, p0, p1) =
        if k0 < k1 && p0 < p1 { (k0 / 1.2, k1 * 1.2, p0 / 2.0, p1 * 2.0) } else { (0.01, 1.0, 1.0, 1e5) };
    let mut rgb = vec![0u8; (PLOT_WIDTH * PLOT_HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (PLOT_WIDTH, PLOT_HEIGHT)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<_>| std::io::Error::other(format!("drawing {}: {e}", path.display()));
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(plot.title, ("sans-serif", 18))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d((k0..k1).log_scale().with_key_points(one_two_five(k0, k1)), (p0..p1).log_scale())
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("k (h/Mpc)")
            .y_desc("P(k) ((Mpc/h)³)")
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .x_label_formatter(&|v| format!("{v}"))
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(e)?;
        let blue = RGBColor(30, 90, 200);
        let red = RGBColor(200, 40, 40);
        let grey = RGBColor(120, 120, 120);
        chart
            .draw_series(LineSeries::new(theory.iter().copied(), red.stroke_width(2)))
            .map_err(e)?
            .label("linear theory")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
        if !nonlinear.is_empty() {
            let orange = RGBColor(230, 140, 20);
            chart
                .draw_series(DashedLineSeries::new(nonlinear.iter().copied(), 10, 4, orange.stroke_width(2)))
                .map_err(e)?
                .label("halofit (nonlinear)")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], orange.stroke_width(2)));
        }
        chart
            .draw_series(LineSeries::new(measured.iter().copied(), blue.stroke_width(2)))
            .map_err(e)?
            .label("measured (particle counts)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2)));
        chart.draw_series(measured.iter().map(|&p| Circle::new(p, 3, blue.filled()))).map_err(e)?;
        if plot.shot_noise > 0.0 {
            let level = plot.shot_noise;
            chart
                .draw_series(DashedLineSeries::new([(k0, level), (k1, level)], 8, 5, grey.stroke_width(1)))
                .map_err(e)?
                .label("shot noise (box volume / particles)")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(180, 180, 180))
            .draw()
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    write_rgb(path, PLOT_WIDTH as usize, PLOT_HEIGHT as usize, &rgb)
}
