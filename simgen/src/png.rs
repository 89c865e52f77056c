//! Writing an RGB image as PNG: what the previews and plots of every
//! generator end in.

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
