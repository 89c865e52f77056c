//! `--preview` of `simgen multislice`: the first sample's target and a few
//! of its patterns as PNGs.

use std::path::Path;

use simgen::heatmap::{Scale, heatmap};
use simgen::multislice::generate::{Mode, Plan};
use simgen::multislice::potential::Target;

/// Write the previews into `out`; the file names written.
pub fn write(plan: &Plan, out: &Path) -> anyhow::Result<Vec<String>> {
    let sample = plan.sample(0)?;
    let n = plan.grid.n;
    let mut names = Vec::new();
    let (what, unit) = match plan.config.target {
        Target::Density => ("projected electron density", "electrons/Å²"),
        Target::Potential => ("projected potential", "V·Å"),
    };
    let name = "preview_target.png".to_owned();
    let title = format!("{} [{}] {:.0} Å: {what}", plan.config.crystal.name, zone(plan), sample.variation.thickness);
    heatmap(&sample.target, n, &title, unit, Scale::Linear, &out.join(&name))?;
    names.push(name);
    let positions = plan.positions();
    let picks: Vec<usize> = match plan.config.mode {
        Mode::Hrtem => vec![0],
        // The first, the middle and the last position of the scan.
        Mode::Cbed => {
            let mut p = vec![0, positions / 2, positions - 1];
            p.dedup();
            p
        }
    };
    for p in picks {
        let pattern = &sample.cbed[p * n * n..(p + 1) * n * n];
        let name = format!("preview_pattern_{p}.png");
        let (title, scale, unit) = match plan.config.mode {
            Mode::Cbed => {
                let [x, y] = plan.scan_positions()[p];
                (format!("CBED, probe at ({x:.2}, {y:.2}) Å"), Scale::Log { decades: 6 }, "intensity")
            }
            Mode::Hrtem => ("bright-field image".to_owned(), Scale::Linear, "intensity"),
        };
        heatmap(pattern, n, &title, unit, scale, &out.join(&name))?;
        names.push(name);
    }
    Ok(names)
}

fn zone(plan: &Plan) -> String {
    plan.config.zone.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" ")
}
