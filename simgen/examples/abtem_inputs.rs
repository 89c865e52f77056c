//! Writes the inputs of `bench/peers/abtem_multislice.py` (atoms, probe
//! positions, settings) and our own CBED patterns for one of the cases of
//! `tests/support/abtem_references.rs` (SrTiO3 with every atom on a
//! pixel, Au with its atoms between pixels): what
//! `simgen/tests/fixtures/abtem/make_abtem_fixture.sh` runs abTEM on to
//! make the fixtures of `tests/abtem_cbed.rs`.
//!
//! ```sh
//! cargo run --release -p stagehand-simgen --example abtem_inputs -- DIR srtio3|au
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

#[path = "../tests/support/abtem_inputs.rs"]
mod abtem_inputs;
#[path = "../tests/support/abtem_references.rs"]
mod abtem_references;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = format!("usage: abtem_inputs DIR CASE (CASE one of {:?})", abtem_references::CASES);
    let dir = PathBuf::from(args.next().expect(&usage));
    let config = args.next().and_then(|name| abtem_references::config(&name)).expect(&usage);
    let plan = config.plan().unwrap();
    let sample = plan.sample(0).unwrap();
    abtem_inputs::write_inputs(&dir, &plan, &sample);
    let bytes: Vec<u8> = sample.cbed.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("ours_patterns.f32"), bytes).unwrap();
    eprintln!("{} slices, sampling {:.5} Å, {} positions", sample.slices, plan.grid.dx, plan.positions());
}
