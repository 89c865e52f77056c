//! Writes the inputs of `bench/peers/abtem_multislice.py` (atoms, probe
//! positions, settings) and our own CBED patterns for SrTiO3 [001], every
//! atom on a pixel: what `simgen/tests/fixtures/abtem/make_abtem_fixture.sh`
//! runs abTEM on to make the fixture of `tests/abtem_cbed.rs` (the case
//! is `tests/support/srtio3_reference.rs`, shared with that test).
//!
//! ```sh
//! cargo run --release -p stagehand-simgen --example abtem_inputs -- DIR
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

#[path = "../tests/support/abtem_inputs.rs"]
mod abtem_inputs;
#[path = "../tests/support/srtio3_reference.rs"]
mod srtio3_reference;

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: abtem_inputs DIR"));
    let plan = srtio3_reference::config().plan().unwrap();
    let sample = plan.sample(0).unwrap();
    abtem_inputs::write_inputs(&dir, &plan, &sample);
    let bytes: Vec<u8> = sample.cbed.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("ours_patterns.f32"), bytes).unwrap();
    eprintln!("{} slices, sampling {:.5} Å, {} positions", sample.slices, plan.grid.dx, plan.positions());
}
