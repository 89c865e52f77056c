//! The training loss curve as a PNG a person can look at: loss against
//! step on a log scale, labelled axes, and a grey line at each epoch
//! boundary. Drawn with `plotters` into memory and encoded with `png`; the
//! labels use DejaVu Sans compiled into the binary, so no system font is
//! needed on a compute node.

use std::io::BufWriter;
use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;

const WIDTH: u32 = 800;
const HEIGHT: u32 = 480;
const LINE: RGBColor = RGBColor(30, 90, 200);
const EPOCH: RGBColor = RGBColor(170, 170, 170);

/// Write the curve of `losses` (one per step) with epoch boundaries every
/// `steps_per_epoch` steps to `path`. Steps whose loss is not a positive
/// number break the line.
pub fn loss_curve(losses: &[f32], steps_per_epoch: usize, path: &Path) -> std::io::Result<()> {
    let rgb = render(losses, steps_per_epoch).map_err(std::io::Error::other)?;
    let file = std::fs::File::create(path)?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer.write_image_data(&rgb).map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

/// The plot as RGB pixels, row by row.
fn render(losses: &[f32], steps_per_epoch: usize) -> Result<Vec<u8>, String> {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        // DejaVu Sans is a valid font; if registering failed anyway, drawing
        // the labels fails below with plotters' error.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
    let shown = |l: &f32| l.is_finite() && *l > 0.0;
    let (lo, hi) = losses.iter().filter(|l| shown(l)).fold((f32::MAX, f32::MIN), |(lo, hi), &l| (lo.min(l), hi.max(l)));
    // Whole decades around the data (one decade either side of a flat curve).
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (1.0, 1.0) };
    let (lo, hi) = (10f32.powf(lo.log10().floor()), 10f32.powf(hi.log10().ceil()));
    let (lo, hi) = if lo < hi { (lo, hi) } else { (lo / 10.0, hi * 10.0) };
    let last_step = losses.len().saturating_sub(1).max(1);

    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<_>| format!("drawing the loss curve: {e}");
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
        if steps_per_epoch > 0 {
            let boundaries = (steps_per_epoch..losses.len()).step_by(steps_per_epoch);
            chart.draw_series(boundaries.map(|x| PathElement::new(vec![(x, lo), (x, hi)], EPOCH))).map_err(e)?;
        }
        // One line per run of plottable steps; a lone step is a dot.
        let points: Vec<(usize, f32)> = losses.iter().copied().enumerate().collect();
        for run in points.split(|(_, loss)| !shown(loss)).filter(|run| !run.is_empty()) {
            if let [point] = run {
                chart.draw_series(std::iter::once(Circle::new(*point, 2, LINE.filled()))).map_err(e)?;
            } else {
                chart.draw_series(LineSeries::new(run.iter().copied(), LINE.stroke_width(2))).map_err(e)?;
            }
        }
        root.present().map_err(e)?;
    }
    Ok(rgb)
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

    #[test]
    fn the_curve_the_epoch_lines_and_dark_label_pixels_are_drawn() {
        let losses: Vec<f32> = (0..300).map(|s| 0.5 * (-(s as f32) / 80.0).exp() + 1e-3).collect();
        let rgb = render(&losses, 100).unwrap();
        assert_eq!(rgb.len(), (WIDTH * HEIGHT * 3) as usize);
        assert!(count(&rgb, LINE) > 500, "the loss line");
        assert!(count(&rgb, EPOCH) > 2 * 300, "two epoch boundaries");
        // Text: anti-aliased glyphs leave many dark, non-black grey pixels.
        let greys = rgb.chunks_exact(3).filter(|p| p[0] == p[1] && p[1] == p[2] && p[0] > 0 && p[0] < 128).count();
        assert!(greys > 200, "axis labels and caption");
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
            let rgb = render(&losses, 4).unwrap();
            assert_eq!(rgb.len(), (WIDTH * HEIGHT * 3) as usize);
        }
    }

    #[test]
    fn loss_curve_writes_a_png_of_the_plot_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loss.png");
        loss_curve(&[0.4, 0.2, 0.1], 2, &path).unwrap();
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (WIDTH, HEIGHT));
    }
}
