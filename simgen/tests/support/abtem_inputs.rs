//! The inputs of `bench/peers/abtem_multislice.py` for one of our samples:
//! its atoms, probe positions and settings, so abTEM images the very same
//! atoms. Shared by the multislice bench and `examples/abtem_inputs.rs`.

use std::io::Write as _;
use std::path::Path;

use simgen::multislice::generate::{Plan, Sample};

/// Write `atoms.txt` (x y z Z per line, Å), `positions.txt` (x y per line)
/// and `config.json` for `sample` of `plan` into `dir`.
pub fn write_inputs(dir: &Path, plan: &Plan, sample: &Sample) {
    std::fs::create_dir_all(dir).unwrap();
    let specimen = plan.specimen(&sample.variation).unwrap();
    let mut atoms = std::io::BufWriter::new(std::fs::File::create(dir.join("atoms.txt")).unwrap());
    for a in &specimen.atoms {
        writeln!(atoms, "{} {} {} {}", a.position[0], a.position[1], a.position[2], a.element.z()).unwrap();
    }
    drop(atoms);
    let positions: String = plan.scan_positions().iter().map(|[x, y]| format!("{x} {y}\n")).collect();
    std::fs::write(dir.join("positions.txt"), positions).unwrap();
    let c = &plan.config;
    let settings = serde_json::json!({
        "cell": specimen.lengths, "grid": plan.grid.n, "slice_thickness": specimen.lengths[2] / sample.slices as f64,
        "volts": c.beam.volts(), "semiangle_mrad": c.lens.semiangle * 1e3,
    });
    std::fs::write(dir.join("config.json"), settings.to_string()).unwrap();
}
