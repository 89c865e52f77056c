//! `--preview` of `simgen traces`: a few calorimeter observations seen
//! along each axis, and the most frequent trace types as bars.

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::colors::colormaps::{ColorMap, ViridisRGB};
use simgen::heatmap::register_font;
use simgen::png::write_rgb;
use simgen::traces::calorimeter::{DEPTH, SIDE};
use simgen::traces::summary::TypeLine;

const PANEL: u32 = 210;
const TYPES_SHOWN: usize = 20;

/// Write the two previews into `out`; the file names written.
pub fn write(out: &Path, observations: &[(u64, Vec<f32>)], lines: &[TypeLine]) -> anyhow::Result<Vec<String>> {
    register_font();
    let mut names = Vec::new();
    if !observations.is_empty() {
        let name = "preview-observations.png";
        observations_png(&out.join(name), observations).with_context(|| format!("drawing {name}"))?;
        names.push(name.to_owned());
    }
    let name = "preview-trace-types.png";
    types_png(&out.join(name), lines).with_context(|| format!("drawing {name}"))?;
    names.push(name.to_owned());
    Ok(names)
}

/// The three projections of a (depth, y, x) grid: summed over depth (y, x),
/// over y (depth, x) and over x (depth, y); each row-major.
fn projections(grid: &[f32]) -> [(Vec<f64>, usize, usize); 3] {
    let mut front = vec![0f64; SIDE * SIDE];
    let mut top = vec![0f64; DEPTH * SIDE];
    let mut side = vec![0f64; DEPTH * SIDE];
    for d in 0..DEPTH {
        for y in 0..SIDE {
            for x in 0..SIDE {
                let v = f64::from(grid[(d * SIDE + y) * SIDE + x]);
                front[y * SIDE + x] += v;
                top[d * SIDE + x] += v;
                side[d * SIDE + y] += v;
            }
        }
    }
    [(front, SIDE, SIDE), (top, DEPTH, SIDE), (side, DEPTH, SIDE)]
}

fn observations_png(path: &Path, observations: &[(u64, Vec<f32>)]) -> anyhow::Result<()> {
    let rows = observations.len() as u32;
    let (width, height) = (3 * PANEL + 150, rows * PANEL + 70);
    let mut rgb = vec![0u8; (width * height * 3) as usize];
    let all: Vec<[(Vec<f64>, usize, usize); 3]> = observations.iter().map(|(_, g)| projections(g)).collect();
    // One colour scale for every panel: log10 of the summed energy, over
    // the three decades below the brightest cell (noise sums below that).
    let hi = all.iter().flatten().flat_map(|(v, _, _)| v.iter()).fold(f64::MIN, |a, &b| a.max(b)).max(1e-6).log10();
    let lo = hi - 3.0;
    let colour =
        |v: f64| ViridisRGB.get_color_normalized(v.max(1e-12).log10().clamp(lo, hi) as f32, lo as f32, hi as f32);
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        root.draw_text(
            "calorimeter observations (energy summed along the axis not shown)",
            &("sans-serif", 17).into_font().color(&BLACK),
            (10, 8),
        )?;
        let body = root.margin(35, 0, 0, 150);
        let panels = body.split_evenly((rows as usize, 3));
        let captions = ["front: y vs x", "top: depth vs x", "side: depth vs y"];
        let axes = [("x (cell)", "y (cell)"), ("x (cell)", "depth (X0)"), ("y (cell)", "depth (X0)")];
        for (r, ((index, _), views)) in observations.iter().zip(&all).enumerate() {
            for (c, (values, h, w)) in views.iter().enumerate() {
                let area = &panels[r * 3 + c];
                let mut chart = ChartBuilder::on(area)
                    .caption(format!("trace {index}, {}", captions[c]), ("sans-serif", 13))
                    .margin(4)
                    .x_label_area_size(28)
                    .y_label_area_size(34)
                    .build_cartesian_2d(0..*w as i32, 0..*h as i32)?;
                chart
                    .configure_mesh()
                    .disable_mesh()
                    .x_desc(axes[c].0)
                    .y_desc(axes[c].1)
                    .x_labels(5)
                    .y_labels(5)
                    .label_style(("sans-serif", 11))
                    .axis_desc_style(("sans-serif", 11))
                    .draw()?;
                chart.draw_series((0..*h).flat_map(|y| {
                    (0..*w).map(move |x| {
                        let v = values[y * w + x];
                        Rectangle::new([(x as i32, y as i32), (x as i32 + 1, y as i32 + 1)], colour(v).filled())
                    })
                }))?;
            }
        }
        // Colour bar.
        let bar = root.margin(45, 20, width - 130, 10);
        let mut chart = ChartBuilder::on(&bar).y_label_area_size(70).build_cartesian_2d(0f64..1f64, lo..hi)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_desc("log10 energy (GeV)")
            .y_labels(4)
            .label_style(("sans-serif", 12))
            .axis_desc_style(("sans-serif", 13))
            .draw()?;
        let steps = 100;
        chart.draw_series((0..steps).map(|i| {
            let (a, b) = (lo + (hi - lo) * i as f64 / steps as f64, lo + (hi - lo) * (i + 1) as f64 / steps as f64);
            Rectangle::new([(0.0, a), (0.6, b)], colour(10f64.powf(a)).filled())
        }))?;
        root.present()?;
    }
    write_rgb(path, width as usize, height as usize, &rgb)?;
    Ok(())
}

fn types_png(path: &Path, lines: &[TypeLine]) -> anyhow::Result<()> {
    let shown: Vec<&TypeLine> = lines.iter().take(TYPES_SHOWN).collect();
    let (width, height) = (900u32, 120 + 24 * shown.len().max(1) as u32);
    let mut rgb = vec![0u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let top = shown.first().map_or(1.0, |l| 100.0 * l.share);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("the {} most frequent trace types of {} (share of all traces)", shown.len(), lines.len()),
                ("sans-serif", 17),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(190)
            .build_cartesian_2d(0f64..top * 1.1, (0..shown.len() as i32).into_segmented())?;
        // Segment 0 is at the bottom: the most frequent type goes on top.
        let at = |i: i32| shown.len().checked_sub(1 + i as usize).and_then(|k| shown.get(k));
        let label =
            |i: i32| -> String { at(i).map_or_else(String::new, |l| format!("#{} ({} choices)", l.rank, l.length)) };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("share of traces (%)")
            .y_labels(shown.len().max(1))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => label(*i),
                _ => String::new(),
            })
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()?;
        chart.draw_series(shown.iter().enumerate().map(|(k, l)| {
            let i = (shown.len() - 1 - k) as i32;
            let mut bar = Rectangle::new(
                [(0.0, SegmentValue::Exact(i)), (100.0 * l.share, SegmentValue::Exact(i + 1))],
                RGBColor(68, 114, 196).filled(),
            );
            bar.set_margin(3, 3, 0, 0);
            bar
        }))?;
        root.present()?;
    }
    write_rgb(path, width as usize, height as usize, &rgb)?;
    Ok(())
}
