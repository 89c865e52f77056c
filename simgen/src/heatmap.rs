//! A 2-D array as a PNG a physicist would look at: the image in the
//! viridis colour map, a title, and a colour bar with its scale, drawn with
//! `plotters` (DejaVu Sans compiled in, as the trainer's loss curve, so a
//! compute node needs no system font).

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::colors::colormaps::{ColorMap, ViridisRGB};

/// Largest image side drawn; bigger arrays are shown at every k-th pixel.
const SHOWN: usize = 800;
/// Smallest image side drawn; smaller arrays are magnified by a whole
/// factor (a 32 x 32 slice would otherwise be a thumbnail).
const SMALLEST: usize = 400;
const BAR: u32 = 170;
const TITLE: u32 = 40;

/// Make DejaVu Sans the `sans-serif` of every plot (once per process).
pub fn register_font() {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        // A valid built-in font; a failure would show as a drawing error later.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
}

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

/// What a [`Heatmap`] draws besides the image.
pub struct Heatmap<'a> {
    /// Above the image.
    pub title: &'a str,
    /// Beside the colour bar.
    pub unit: &'a str,
    /// How values map to colours.
    pub scale: Scale,
    /// Labelled axes along the left and bottom edges; none draws the bare image.
    pub axes: Option<Axes<'a>>,
    /// Class outlines over the image.
    pub outlines: Option<Outlines<'a>>,
}

/// The physical extent of an image: what its columns and rows measure.
pub struct Axes<'a> {
    /// Along the columns, left to right.
    pub x: Axis<'a>,
    /// Along the rows, bottom to top (row 0 is the top).
    pub y: Axis<'a>,
}

/// One axis: its label with the unit, and the values at the image's two edges.
pub struct Axis<'a> {
    /// Label, with the unit, as `longitude (°E)`.
    pub label: &'a str,
    /// Value at the first edge (left, bottom) and at the last (right, top).
    pub range: (f64, f64),
}

/// Write `values` (`n × n`, row-major, row 0 at the top) to `path` with
/// `title` above it and a colour bar labelled `unit` beside it.
pub fn heatmap(values: &[f32], n: usize, title: &str, unit: &str, scale: Scale, path: &Path) -> std::io::Result<()> {
    Heatmap { title, unit, scale, axes: None, outlines: None }.write(values, (n, n), path)
}

/// Class outlines drawn over a [`Heatmap`]: a label per value (0 draws
/// nothing) and a colour per label.
pub struct Outlines<'a> {
    /// Labels, the values' shape.
    pub labels: &'a [i32],
    /// Colour of label k at index k - 1.
    pub colours: &'a [(u8, u8, u8)],
}

/// Room for the axes' tick labels and descriptions.
const LEFT_AXIS: u32 = 70;
const BOTTOM_AXIS: u32 = 50;

impl Heatmap<'_> {
    /// Draw a `rows × columns` array (row-major, row 0 at the top) to the
    /// PNG `path`. A pixel on the edge of an outlined region (a neighbour
    /// has another label) is drawn in its label's colour.
    pub fn write(&self, values: &[f32], (rows, columns): (usize, usize), path: &Path) -> std::io::Result<()> {
        let Heatmap { title, unit, scale, ref axes, ref outlines } = *self;
        register_font();
        let step = rows.max(columns).div_ceil(SHOWN).max(1);
        let zoom = (SMALLEST / rows.max(columns).max(1)).max(1);
        let (shown_rows, shown_columns) = (rows.div_ceil(step) * zoom, columns.div_ceil(step) * zoom);
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
        let (left, bottom) = if axes.is_some() { (LEFT_AXIS, BOTTOM_AXIS) } else { (0, 0) };
        let (image_x, image_y) = (10 + left as i32, TITLE as i32);
        let (width, height) =
            ((left + shown_columns as u32 + BAR + 20).max(420), shown_rows as u32 + TITLE + bottom + 20);
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
                    let (sy, sx) = (y / zoom * step, x / zoom * step);
                    let v = shown(values[sy * columns + sx]);
                    let c = match edge(sy, sx) {
                        Some(c) => c,
                        None if v.is_finite() => colour(v),
                        None => RGBColor(0, 0, 0),
                    };
                    root.draw_pixel((image_x + x as i32, image_y + y as i32), &c).map_err(e)?;
                }
            }
            if let Some(axes) = axes {
                // A chart whose plotting area is exactly the image drawn above:
                // only its axes are drawn.
                let area = root.clone().shrink((10, TITLE), (left + shown_columns as u32, shown_rows as u32 + bottom));
                let mut chart = ChartBuilder::on(&area)
                    .x_label_area_size(bottom)
                    .y_label_area_size(left)
                    .build_cartesian_2d(axes.x.range.0..axes.x.range.1, axes.y.range.0..axes.y.range.1)
                    .map_err(e)?;
                chart
                    .configure_mesh()
                    .disable_mesh()
                    .x_desc(axes.x.label)
                    .y_desc(axes.y.label)
                    .x_labels(7)
                    .y_labels(5)
                    .x_label_formatter(&|v| tick(*v, axes.x.range))
                    .y_label_formatter(&|v| tick(*v, axes.y.range))
                    .label_style(("sans-serif", 14))
                    .axis_desc_style(("sans-serif", 15))
                    .draw()
                    .map_err(e)?;
            }
            let bar = root.margin(TITLE, 10 + bottom, left + shown_columns as u32 + 20, 10);
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
                    let (a, b) =
                        (lo + (hi - lo) * i as f64 / rows as f64, lo + (hi - lo) * (i + 1) as f64 / rows as f64);
                    Rectangle::new([(0.0, a), (0.5, b)], colour(a).filled())
                }))
                .map_err(e)?;
            root.present().map_err(e)?;
        }
        crate::png::write_rgb(path, width as usize, height as usize, &rgb)
    }
}

/// A tick label with as many decimals as the axis's span needs.
fn tick(value: f64, (a, b): (f64, f64)) -> String {
    let span = (b - a).abs();
    let decimals = if span >= 20.0 {
        0
    } else if span >= 2.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}")
}
