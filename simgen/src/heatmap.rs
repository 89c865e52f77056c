//! A 2-D array as a PNG a physicist would look at: the image in the
//! viridis colour map, a title, and a colour bar with its scale, drawn with
//! `plotters` (DejaVu Sans compiled in, as the trainer's loss curve, so a
//! compute node needs no system font).

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::colors::colormaps::{ColorMap, ViridisRGB};

/// Largest image side drawn; bigger arrays are shown at every k-th pixel.
const SHOWN: usize = 512;
const BAR: u32 = 170;
const TITLE: u32 = 40;

/// How values map to colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear from the minimum to the maximum.
    Linear,
    /// log10, over the top `decades` below the maximum (diffraction
    /// patterns span many decades; the weakest are noise).
    Log {
        /// Decades shown.
        decades: u32,
    },
}

/// Write `values` (`n × n`, row-major, row 0 at the top) to `path` with
/// `title` above it and a colour bar labelled `unit` beside it.
pub fn heatmap(values: &[f32], n: usize, title: &str, unit: &str, scale: Scale, path: &Path) -> std::io::Result<()> {
    heatmap_with_outlines(values, (n, n), None, title, unit, scale, path)
}

/// Class outlines drawn over a [`heatmap`]: a label per value (0 draws
/// nothing) and a colour per label.
pub struct Outlines<'a> {
    /// Labels, the values' shape.
    pub labels: &'a [i32],
    /// Colour of label k at index k - 1.
    pub colours: &'a [(u8, u8, u8)],
}

/// [`heatmap`] of a `rows × columns` array, with optional class outlines:
/// a pixel on the edge of a labelled region (a neighbour has another label)
/// is drawn in its label's colour.
pub fn heatmap_with_outlines(
    values: &[f32],
    (rows, columns): (usize, usize),
    outlines: Option<Outlines<'_>>,
    title: &str,
    unit: &str,
    scale: Scale,
    path: &Path,
) -> std::io::Result<()> {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        // A valid built-in font; a failure would show as a drawing error below.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
    let step = rows.max(columns).div_ceil(SHOWN).max(1);
    let (shown_rows, shown_columns) = (rows.div_ceil(step), columns.div_ceil(step));
    let shown = |v: f32| match scale {
        Scale::Linear => f64::from(v),
        Scale::Log { .. } => f64::from(v.max(f32::MIN_POSITIVE)).log10(),
    };
    let finite = values.iter().map(|&v| shown(v)).filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let lo = match scale {
        Scale::Log { decades } => lo.max(hi - f64::from(decades)),
        Scale::Linear => lo,
    };
    let (lo, hi) = if lo < hi { (lo, hi) } else { (lo - 1.0, lo + 1.0) };
    let (width, height) = ((shown_columns as u32 + BAR + 20).max(420), shown_rows as u32 + TITLE + 20);
    let mut rgb = vec![0u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<_>| std::io::Error::other(format!("drawing {}: {e}", path.display()));
        root.fill(&WHITE).map_err(e)?;
        root.draw_text(title, &("sans-serif", 18).into_font().color(&BLACK), (10, 10)).map_err(e)?;
        let colour = |v: f64| ViridisRGB.get_color_normalized(v.clamp(lo, hi) as f32, lo as f32, hi as f32);
        let edge = |y: usize, x: usize| -> Option<RGBColor> {
            let o = outlines.as_ref()?;
            let label = o.labels[y * columns + x];
            if label <= 0 {
                return None;
            }
            let differs = |yy: usize, xx: usize| o.labels[yy * columns + xx] != label;
            let boundary = (y >= step && differs(y - step, x))
                || (y + step < rows && differs(y + step, x))
                || differs(y, (x + columns - step % columns) % columns)
                || differs(y, (x + step) % columns);
            let (r, g, b) = *o.colours.get(label as usize - 1)?;
            boundary.then_some(RGBColor(r, g, b))
        };
        for y in 0..shown_rows {
            for x in 0..shown_columns {
                let (sy, sx) = (y * step, x * step);
                let v = shown(values[sy * columns + sx]);
                let c = match edge(sy, sx) {
                    Some(c) => c,
                    None if v.is_finite() => colour(v),
                    None => RGBColor(0, 0, 0),
                };
                root.draw_pixel((10 + x as i32, TITLE as i32 + y as i32), &c).map_err(e)?;
            }
        }
        let bar = root.margin(TITLE, 10, shown_columns as u32 + 20, 10);
        let mut chart =
            ChartBuilder::on(&bar).y_label_area_size(90).build_cartesian_2d(0f64..1f64, lo..hi).map_err(e)?;
        let label = match scale {
            Scale::Linear => unit.to_owned(),
            Scale::Log { .. } => format!("log10 {unit}"),
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_desc(label)
            .y_labels(6)
            .y_label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(e)?;
        let rows = 200;
        chart
            .draw_series((0..rows).map(|i| {
                let (a, b) = (lo + (hi - lo) * i as f64 / rows as f64, lo + (hi - lo) * (i + 1) as f64 / rows as f64);
                Rectangle::new([(0.0, a), (0.5, b)], colour(a).filled())
            }))
            .map_err(e)?;
        root.present().map_err(e)?;
    }
    crate::image::write_rgb(path, width as usize, height as usize, &rgb)
}
