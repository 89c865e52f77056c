//! Training loss curves as a PNG a person can look at: loss against step
//! on a log scale, one colour per run with a legend, each run's loss
//! smoothed (and raw, faint, behind it), its validation loss per epoch on
//! the same axis (dots joined by a dashed line), and a grey line at each
//! epoch boundary when the runs share their epoch length. `trainer plot
//! REPORT...` draws it from training reports and `trainer train --plot`
//! from the run's own. Drawn with `plotters` into memory and encoded with
//! `png`; the labels use DejaVu Sans compiled into the binary, so no system
//! font is needed on a compute node.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;

const WIDTH: u32 = 800;
const HEIGHT: u32 = 480;
const EPOCH: RGBColor = RGBColor(170, 170, 170);
/// TensorBoard's default smoothing weight.
pub const DEFAULT_SMOOTHING: f32 = 0.6;
/// One colour per run, in order: the Tableau 10 palette (Tableau's and
/// matplotlib's default cycle), told apart by most readers.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One run's curves.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The legend's name for it.
    pub label: String,
    /// Loss per step (not a positive number: a gap).
    pub losses: Vec<f32>,
    /// Steps per epoch (0: unknown).
    pub steps_per_epoch: usize,
    /// Validation loss at each epoch's last step (0-based step index).
    pub validation: Vec<(usize, f32)>,
}

/// Why a report cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Not a training report.
    #[error("{path}: not a trainer report: {source}")]
    Report {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Its epochs hold more steps than its losses.
    #[error("{path}: its epochs hold {epochs} steps but it has {losses} losses")]
    Steps {
        /// The file.
        path: PathBuf,
        /// Steps in its epochs.
        epochs: u64,
        /// Losses.
        losses: usize,
    },
    /// Drawing or writing failed.
    #[error("{path}: {source}")]
    Write {
        /// The picture.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The part of a `trainer train` report a plot reads.
#[derive(serde::Deserialize)]
struct PlottedReport {
    /// NaN and infinite losses are written as `null`.
    losses: Vec<Option<f32>>,
    steps_per_epoch: u64,
    epochs: Vec<PlottedEpoch>,
}

#[derive(serde::Deserialize)]
struct PlottedEpoch {
    steps: u64,
    validation: Option<serde_json::Map<String, serde_json::Value>>,
}

impl Curve {
    /// The curve of a report's JSON `text` (read from `path`), its
    /// validation loss the figure named `validation` (`loss` for the
    /// models that report one) where the epochs have it.
    pub fn from_report(text: &str, path: &Path, label: String, validation: &str) -> Result<Curve, PlotError> {
        let report: PlottedReport =
            serde_json::from_str(text).map_err(|source| PlotError::Report { path: path.to_owned(), source })?;
        let losses: Vec<f32> = report.losses.iter().map(|l| l.unwrap_or(f32::NAN)).collect();
        // The report's epochs are this run's; its losses go back to the
        // start of training (a resumed run's included): count back from the end.
        let in_epochs: u64 = report.epochs.iter().map(|e| e.steps).sum();
        let Some(mut before) = (losses.len() as u64).checked_sub(in_epochs) else {
            return Err(PlotError::Steps { path: path.to_owned(), epochs: in_epochs, losses: losses.len() });
        };
        let mut points = Vec::new();
        for epoch in &report.epochs {
            before += epoch.steps;
            let value = epoch.validation.as_ref().and_then(|v| v.get(validation)).and_then(|v| v.as_f64());
            if let (Some(value), Some(last)) = (value, before.checked_sub(1)) {
                points.push((last as usize, value as f32));
            }
        }
        Ok(Curve { label, losses, steps_per_epoch: report.steps_per_epoch as usize, validation: points })
    }
}

/// Smooth `losses` as TensorBoard's scalar dashboard does: an exponential
/// moving average of weight `smoothing` in [0, 1), debiased for its start
/// (tensorboard/plugins/scalar's `smoothing` slider; 0 draws the raw
/// curve). Gaps stay gaps and do not enter the average.
pub fn smoothed(losses: &[f32], smoothing: f32) -> Vec<f32> {
    let (mut average, mut weight) = (0f32, 0f32);
    losses
        .iter()
        .map(|&l| {
            if !(l.is_finite() && l > 0.0) {
                return l;
            }
            average = average * smoothing + (1.0 - smoothing) * l;
            weight = weight * smoothing + (1.0 - smoothing);
            average / weight
        })
        .collect()
}

/// Write `curves` to `path`, each run's loss smoothed with `smoothing`.
pub fn draw(curves: &[Curve], smoothing: f32, path: &Path) -> Result<(), PlotError> {
    let write = |source| PlotError::Write { path: path.to_owned(), source };
    let rgb = render(curves, smoothing).map_err(|e| write(std::io::Error::other(e)))?;
    write_rgb(&rgb, (WIDTH, HEIGHT), path).map_err(write)
}

/// Encode RGB pixels, row by row, of `width` × `height` as the PNG `path`.
pub fn write_rgb(rgb: &[u8], (width, height): (u32, u32), path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer.write_image_data(rgb).map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

/// Register DejaVu Sans (compiled into the binary) as plotters'
/// "sans-serif", once.
pub fn use_embedded_font() {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        // DejaVu Sans is a valid font; if registering failed anyway, drawing
        // the labels fails later with plotters' error.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
}

/// `colour` at a quarter of its strength over white: the raw curve behind
/// the smoothed one.
pub fn faint(colour: RGBColor) -> RGBColor {
    let fade = |c: u8| 255 - (255 - c) / 4;
    RGBColor(fade(colour.0), fade(colour.1), fade(colour.2))
}

fn shown(l: &f32) -> bool {
    l.is_finite() && *l > 0.0
}

/// The plot as RGB pixels, row by row.
fn render(curves: &[Curve], smoothing: f32) -> Result<Vec<u8>, String> {
    use_embedded_font();
    let values = curves.iter().flat_map(|c| c.losses.iter().copied().chain(c.validation.iter().map(|v| v.1)));
    let (lo, hi) = values.filter(shown).fold((f32::MAX, f32::MIN), |(lo, hi), l| (lo.min(l), hi.max(l)));
    // Whole decades around the data (one decade either side of a flat curve).
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (1.0, 1.0) };
    let (lo, hi) = (10f32.powf(lo.log10().floor()), 10f32.powf(hi.log10().ceil()));
    let (lo, hi) = if lo < hi { (lo, hi) } else { (lo / 10.0, hi * 10.0) };
    let last_step = curves.iter().map(|c| c.losses.len()).max().unwrap_or(0).saturating_sub(1).max(1);
    let epoch_length = match curves.first() {
        Some(first) if curves.iter().all(|c| c.steps_per_epoch == first.steps_per_epoch) => first.steps_per_epoch,
        _ => 0,
    };

    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<_>| format!("drawing the loss curves: {e}");
        root.fill(&WHITE).map_err(e)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("training loss", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0..last_step, (lo..hi).log_scale().with_key_points(ticks(lo, hi)))
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("step")
            .y_desc("loss")
            .disable_x_mesh()
            .light_line_style(WHITE)
            .y_label_formatter(&tick_label)
            .draw()
            .map_err(e)?;
        if epoch_length > 0 {
            let steps = curves.iter().map(|c| c.losses.len()).max().unwrap_or(0);
            let boundaries = (epoch_length..steps).step_by(epoch_length);
            chart.draw_series(boundaries.map(|x| PathElement::new(vec![(x, lo), (x, hi)], EPOCH))).map_err(e)?;
        }
        // Raw curves first, all of them, so no faint line covers a run's
        // smoothed one.
        let mut line = |values: &[f32], style: ShapeStyle| -> Result<(), String> {
            for run in segments(values) {
                if let [point] = run[..] {
                    chart.draw_series(std::iter::once(Circle::new(point, 2, style.filled()))).map_err(e)?;
                } else {
                    chart.draw_series(LineSeries::new(run, style)).map_err(e)?;
                }
            }
            Ok(())
        };
        if smoothing > 0.0 {
            for (k, curve) in curves.iter().enumerate() {
                line(&curve.losses, faint(PALETTE[k % PALETTE.len()]).stroke_width(1))?;
            }
        }
        for (k, curve) in curves.iter().enumerate() {
            line(&smoothed(&curve.losses, smoothing), PALETTE[k % PALETTE.len()].stroke_width(2))?;
        }
        for (k, curve) in curves.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            // An empty series carries the run's legend entry.
            chart
                .draw_series(std::iter::empty::<PathElement<(usize, f32)>>())
                .map_err(e)?
                .label(&curve.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(3)));
            let validation: Vec<(usize, f32)> = curve.validation.iter().copied().filter(|(_, v)| shown(v)).collect();
            if !validation.is_empty() {
                chart
                    .draw_series(DashedLineSeries::new(validation.iter().copied(), 6, 4, colour.stroke_width(1)))
                    .map_err(e)?;
                chart
                    .draw_series(validation.iter().map(|&p| Circle::new(p, 4, colour.filled())))
                    .map_err(e)?
                    .label(format!("{} (validation)", curve.label))
                    .legend(move |(x, y)| Circle::new((x + 9, y), 4, colour.filled()));
            }
        }
        if curves.iter().any(|c| c.losses.iter().any(shown)) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(EPOCH)
                .label_font(("sans-serif", 14))
                .draw()
                .map_err(e)?;
        }
        root.present().map_err(e)?;
    }
    Ok(rgb)
}

/// The runs of plottable steps in `values` (a value that is not a
/// positive number breaks the line).
fn segments(values: &[f32]) -> Vec<Vec<(usize, f32)>> {
    let points: Vec<(usize, f32)> = values.iter().copied().enumerate().collect();
    points.split(|(_, v)| !shown(v)).filter(|run| !run.is_empty()).map(<[_]>::to_vec).collect()
}

/// 1, 2 and 5 times each power of ten from `lo` (a power of ten) up to `hi`.
fn ticks(lo: f32, hi: f32) -> Vec<f32> {
    let first = lo.log10().round() as i32;
    let mut ticks = Vec::new();
    for exponent in first..first + 40 {
        for m in [1.0, 2.0, 5.0] {
            let t = m * 10f32.powi(exponent);
            if t > hi * 1.0001 {
                return ticks;
            }
            ticks.push(t);
        }
    }
    ticks
}

/// A tick's value with as many decimals as its magnitude needs (0.05, 0.2, 1, 20).
fn tick_label(v: &f32) -> String {
    // Round to 4 significant digits first: 0.01f32 is 0.0099999998 in f64.
    let v = f64::from(*v);
    let scale = 10f64.powf(3.0 - v.abs().log10().floor());
    let v = (v * scale).round() / scale;
    let decimals = (-v.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(rgb: &[u8], colour: RGBColor) -> usize {
        rgb.chunks_exact(3).filter(|p| *p == [colour.0, colour.1, colour.2]).count()
    }

    fn curve(label: &str, scale: f32) -> Curve {
        let losses: Vec<f32> = (0..300).map(|s| scale * (0.5 * (-(s as f32) / 80.0).exp() + 1e-3)).collect();
        Curve {
            label: label.into(),
            losses,
            steps_per_epoch: 100,
            validation: vec![(99, scale * 0.2), (199, scale * 0.1)],
        }
    }

    #[test]
    fn the_curve_its_raw_loss_the_epoch_lines_and_dark_label_pixels_are_drawn() {
        let rgb = render(&[curve("a", 1.0)], DEFAULT_SMOOTHING).unwrap();
        assert_eq!(rgb.len(), (WIDTH * HEIGHT * 3) as usize);
        assert!(count(&rgb, PALETTE[0]) > 500, "the smoothed line, its validation dots and legend");
        assert!(count(&rgb, faint(PALETTE[0])) > 50, "the raw line behind it");
        assert!(count(&rgb, EPOCH) > 2 * 300, "two epoch boundaries");
        // Text: anti-aliased glyphs leave many dark, non-black grey pixels.
        let greys = rgb.chunks_exact(3).filter(|p| p[0] == p[1] && p[1] == p[2] && p[0] > 0 && p[0] < 128).count();
        assert!(greys > 200, "axis labels and caption");
    }

    #[test]
    fn two_runs_are_drawn_each_in_its_own_colour() {
        let rgb = render(&[curve("a", 1.0), curve("b", 3.0)], DEFAULT_SMOOTHING).unwrap();
        for colour in &PALETTE[..2] {
            assert!(count(&rgb, *colour) > 500, "{colour:?}");
        }
        assert_eq!(count(&rgb, PALETTE[2]), 0);
    }

    #[test]
    fn smoothing_is_a_debiased_moving_average_that_keeps_gaps() {
        assert_eq!(smoothed(&[2.0, 2.0, 2.0], 0.9), vec![2.0, 2.0, 2.0]);
        let s = smoothed(&[1.0, f32::NAN, 3.0], 0.5);
        assert_eq!(s[0], 1.0, "the first value is itself, not pulled towards 0");
        assert!(s[1].is_nan());
        // (0.5 * 0.5 * 1 + 0.5 * 3) / (0.5 * 0.5 + 0.5)
        assert!((s[2] - 1.75 / 0.75).abs() < 1e-6, "{s:?}");
        assert_eq!(smoothed(&[1.0, 4.0], 0.0), vec![1.0, 4.0]);
    }

    #[test]
    fn a_report_gives_its_losses_and_the_validation_loss_at_each_epochs_last_step() {
        let path = Path::new("run.json");
        let text = r#"{"losses": [1.0, null, 0.5, 0.25], "steps_per_epoch": 2,
            "epochs": [{"steps": 2, "validation": {"loss": 0.7}}, {"steps": 2, "validation": {"iou": 0.3}}]}"#;
        let c = Curve::from_report(text, path, "run".into(), "loss").unwrap();
        assert!(c.losses[1].is_nan());
        assert_eq!(c.validation, vec![(1, 0.7)]);
        // A resumed run's report: its losses go back to the first run's start.
        let resumed = r#"{"losses": [1, 1, 1, 1, 0.5, 0.4], "steps_per_epoch": 2,
            "epochs": [{"steps": 2, "validation": {"loss": 0.6}}]}"#;
        assert_eq!(Curve::from_report(resumed, path, "r".into(), "loss").unwrap().validation, vec![(5, 0.6)]);
        let short = r#"{"losses": [1], "steps_per_epoch": 2, "epochs": [{"steps": 2}]}"#;
        let error = Curve::from_report(short, path, "s".into(), "loss").unwrap_err().to_string();
        assert!(error.contains("run.json") && error.contains("2 steps"), "{error}");
        assert!(
            Curve::from_report("{}", path, "x".into(), "loss")
                .unwrap_err()
                .to_string()
                .contains("not a trainer report")
        );
    }

    #[test]
    fn ticks_are_one_two_five_per_decade_with_plain_labels() {
        let labels: Vec<String> = ticks(0.01, 1.0).iter().map(tick_label).collect();
        assert_eq!(labels, ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]);
        assert_eq!(
            ticks(1.0, 100.0).iter().map(tick_label).collect::<Vec<_>>(),
            ["1", "2", "5", "10", "20", "50", "100"]
        );
    }

    #[test]
    fn empty_flat_and_broken_curves_still_render() {
        for losses in [vec![], vec![0.3], vec![0.3; 10], vec![0.3, f32::NAN, 0.2, 0.0, 0.1, f32::INFINITY]] {
            let c = Curve { label: "x".into(), losses, steps_per_epoch: 4, validation: vec![] };
            let rgb = render(&[c], DEFAULT_SMOOTHING).unwrap();
            assert_eq!(rgb.len(), (WIDTH * HEIGHT * 3) as usize);
        }
        assert!(render(&[], DEFAULT_SMOOTHING).is_ok());
    }

    #[test]
    fn draw_writes_a_png_of_the_plot_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loss.png");
        draw(&[curve("a", 1.0)], DEFAULT_SMOOTHING, &path).unwrap();
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (WIDTH, HEIGHT));
    }
}
