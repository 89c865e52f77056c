//! The cases compared with abTEM: shared by `tests/abtem_cbed.rs` and
//! `examples/abtem_inputs.rs` (which writes the inputs the fixtures were
//! made from), so the two cannot drift apart.

use simgen::multislice::crystal::Crystal;
use simgen::multislice::generate::{Mode, MultisliceConfig};
use simgen::multislice::optics::{Aberrations, Beam};
use simgen::multislice::potential::Target;
use simgen::multislice::wave::Probe;

/// The cases by the name the fixture script and the example take.
pub const CASES: [&str; 2] = ["srtio3", "au"];

/// The case called `name` (one of [`CASES`]).
pub fn config(name: &str) -> Option<MultisliceConfig> {
    match name {
        "srtio3" => Some(srtio3_on_pixels()),
        "au" => Some(gold_between_pixels()),
        _ => None,
    }
}

/// SrTiO3 [001], every atom on a pixel: 4 × 4 cells of 3.905 Å on 256
/// pixels (a/2 is 32 pixels), 25 cells thick in slices of half a cell,
/// 200 kV, 20 mrad, a 2 × 2 scan over the Sr, O, O and Ti-O columns.
fn srtio3_on_pixels() -> MultisliceConfig {
    MultisliceConfig {
        random_offset: false,
        crystal: Crystal::built_in("SrTiO3").unwrap(),
        zone: [0, 0, 1],
        max_tilt: 0.0,
        thickness: (97.625, 97.625),
        beam: Beam::new(200e3).unwrap(),
        lens: Probe { semiangle: 0.020, aberrations: Aberrations::default() },
        grid: 256,
        sampling: 0.061,
        sampling_tolerance: simgen::multislice::specimen::SAMPLING_TOLERANCE,
        slice: 1.9525,
        scan: (2, 2),
        phonons: 0,
        phonon_sigma: 0.0,
        crystal_thermal: false,
        target: Target::Density,
        mode: Mode::Cbed,
        seed: 1,
    }
}

/// Au [001], the heaviest built-in crystal, shifted by the seed's random
/// offset so that its atoms sit between pixels, differently along x and
/// y: 5 × 5 cells of 4.0782 Å on 160 pixels, 10 cells thick in slices
/// of half a cell, 200 kV, 20 mrad, a 2 × 2 scan. abTEM's fixture for it
/// is made with exact structure factors (stock abTEM spreads atoms
/// bilinearly over pixels, which low-passes them: see
/// bench/peers/abtem_multislice.py).
fn gold_between_pixels() -> MultisliceConfig {
    MultisliceConfig {
        random_offset: true,
        crystal: Crystal::built_in("Au").unwrap(),
        thickness: (40.782, 40.782),
        grid: 160,
        sampling: 5.0 * 4.0782 / 160.0,
        slice: 4.0782 / 2.0,
        ..srtio3_on_pixels()
    }
}
