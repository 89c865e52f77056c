//! Our CBED patterns of SrTiO3 [001] against abTEM 1.0.11's for the same
//! atoms (the fixture in `tests/fixtures/abtem`, made by
//! `make_abtem_fixture.sh` there from `examples/abtem_inputs.rs`; both take
//! the case from `tests/support/srtio3_reference.rs`). Every atom sits on a pixel, so neither
//! code interpolates positions; what is compared is the physics: Sr and
//! Ti are heavy enough that forming the transmission function from a
//! band-limited potential (instead of band-limiting the transmission
//! function) put the Sr column's pattern 6.5 % from abTEM's.

#![allow(clippy::unwrap_used)]

use std::path::Path;

#[path = "support/srtio3_reference.rs"]
mod srtio3_reference;

use srtio3_reference::config;

/// Relative L2 distance of our centred `[ky][kx]` pattern to abTEM's
/// `[kx][ky]` pattern cropped to `side` around k = 0, both normalised to
/// unit sum.
fn relative_l2(ours: &[f32], n: usize, theirs: &[f32], side: usize) -> f64 {
    let mut pairs = Vec::with_capacity(side * side);
    for i in 0..side {
        for j in 0..side {
            let (kx, ky) = (n / 2 + i - side / 2, n / 2 + j - side / 2);
            pairs.push((f64::from(ours[ky * n + kx]), f64::from(theirs[i * side + j])));
        }
    }
    let (sa, sb) = pairs.iter().fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (diff, norm) =
        pairs.iter().fold((0.0, 0.0), |(d, m), (x, y)| (d + (x / sa - y / sb).powi(2), m + (y / sb).powi(2)));
    (diff / norm).sqrt()
}

#[test]
fn srtio3_cbed_on_the_heavy_columns_is_within_two_percent_of_abtem() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/abtem");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("srtio3_001_cbed.json")).unwrap()).unwrap();
    let side = info["shape"][1].as_u64().unwrap() as usize;
    let theirs: Vec<f32> = std::fs::read(dir.join("srtio3_001_cbed.f32"))
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(theirs.len(), 2 * side * side);
    let plan = config().plan().unwrap();
    let sample = plan.sample(0).unwrap();
    assert_eq!(sample.slices, info["slices"].as_u64().unwrap() as usize);
    let n = plan.grid.n;
    // The fixture keeps positions 0 (Sr column) and 3 (Ti-O column).
    for (name, ours, theirs) in [
        ("Sr column", &sample.cbed[..n * n], &theirs[..side * side]),
        ("Ti-O column", &sample.cbed[3 * n * n..4 * n * n], &theirs[side * side..]),
    ] {
        let distance = relative_l2(ours, n, theirs, side);
        eprintln!("{name}: relative L2 to abTEM {:.3} %", 100.0 * distance);
        assert!(distance < 0.02, "{name}: {:.2} % from abTEM's pattern", 100.0 * distance);
    }
}
