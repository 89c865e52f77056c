//! CosmoFlow samples: the zero-copy view and the decoded sample, for a
//! shape taken from the first byte. A sample that decodes re-encodes to
//! bytes that decode to the same sample.

use formats::cosmoflow::{CosmoSample, CosmoSampleView, CosmoShape};

/// One input, as the fuzz target `cosmoflow` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let Some((&shape_byte, bytes)) = input.split_first() else { return };
    let shape = CosmoShape { size: usize::from(shape_byte & 7), channels: usize::from(shape_byte >> 3 & 7) };
    let view = CosmoSampleView::parse(bytes, shape);
    let sample = CosmoSample::from_example_bytes(bytes, shape);
    assert_eq!(view.is_ok(), sample.is_ok());
    if let Ok(sample) = sample {
        assert_eq!(sample.x().len(), shape.voxels() * shape.channels);
        let again = CosmoSample::from_example_bytes(&sample.to_example_bytes(), shape).expect("re-encoded sample");
        assert_eq!(again.x(), sample.x());
        assert_eq!(again.y().map(f32::to_bits), sample.y().map(f32::to_bits));
    }
}
