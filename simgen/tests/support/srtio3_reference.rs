//! The SrTiO3 [001] case compared with abTEM: shared by
//! `tests/abtem_cbed.rs` and `examples/abtem_inputs.rs` (which writes the
//! inputs the fixture was made from), so the two cannot drift apart.

use simgen::multislice::crystal::Crystal;
use simgen::multislice::generate::{Mode, MultisliceConfig};
use simgen::multislice::optics::{Aberrations, Beam};
use simgen::multislice::potential::Target;
use simgen::multislice::wave::Probe;

/// SrTiO3 [001], every atom on a pixel: 4 × 4 cells of 3.905 Å on 256
/// pixels (a/2 is 32 pixels), 25 cells thick in slices of half a cell,
/// 200 kV, 20 mrad, a 2 × 2 scan over the Sr, O, O and Ti-O columns.
pub fn config() -> MultisliceConfig {
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
