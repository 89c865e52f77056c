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

use std::io::Write as _;
use std::path::PathBuf;

#[path = "../tests/support/srtio3_reference.rs"]
mod srtio3_reference;

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: abtem_inputs DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let config = srtio3_reference::config();
    let (beam, semiangle) = (config.beam, config.lens.semiangle);
    let plan = config.plan().unwrap();
    let sample = plan.sample(0).unwrap();
    let specimen = plan.specimen(&sample.variation).unwrap();
    let mut atoms = std::io::BufWriter::new(std::fs::File::create(dir.join("atoms.txt")).unwrap());
    for a in &specimen.atoms {
        writeln!(atoms, "{} {} {} {}", a.position[0], a.position[1], a.position[2], a.element.z()).unwrap();
    }
    drop(atoms);
    let positions: String = plan.scan_positions().iter().map(|[x, y]| format!("{x} {y}\n")).collect();
    std::fs::write(dir.join("positions.txt"), positions).unwrap();
    let settings = serde_json::json!({
        "cell": specimen.lengths, "grid": plan.grid.n, "slice_thickness": specimen.lengths[2] / sample.slices as f64,
        "volts": beam.volts(), "semiangle_mrad": semiangle * 1e3,
    });
    std::fs::write(dir.join("config.json"), settings.to_string()).unwrap();
    let bytes: Vec<u8> = sample.cbed.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(dir.join("ours_patterns.f32"), bytes).unwrap();
    eprintln!("{} slices, sampling {:.5} Å, {} positions", sample.slices, plan.grid.dx, plan.positions());
}
