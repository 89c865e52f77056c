//! `--preview` of `simgen multislice`: the first sample's target and a few
//! of its patterns as PNGs.

use std::path::Path;

use simgen::heatmap::{Axes, Axis, Heatmap, Scale};
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
    let (width, height) = (n as f64 * plan.grid.dx, n as f64 * plan.grid.dy);
    let real_space =
        Axes { x: Axis { label: "x (Å)", range: (0.0, width) }, y: Axis { label: "y (Å)", range: (0.0, height) } };
    Heatmap { title: &title, unit, scale: Scale::Linear, axes: Some(real_space), outlines: None }.write(
        &sample.target,
        (n, n),
        &out.join(&name),
    )?;
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
        // Patterns are centred: pixel spacing 1/(n dx) in k, times the
        // wavelength in angle; an image spans the real-space window.
        let axes = match plan.config.mode {
            Mode::Cbed => {
                let mrad = |d: f64| 1e3 * plan.config.beam.wavelength() / (2.0 * d);
                let (ax, ay) = (mrad(plan.grid.dx), mrad(plan.grid.dy));
                Axes {
                    x: Axis { label: "scattering angle x (mrad)", range: (-ax, ax) },
                    y: Axis { label: "scattering angle y (mrad)", range: (-ay, ay) },
                }
            }
            Mode::Hrtem => Axes {
                x: Axis { label: "x (Å)", range: (0.0, width) },
                y: Axis { label: "y (Å)", range: (0.0, height) },
            },
        };
        Heatmap { title: &title, unit, scale, axes: Some(axes), outlines: None }.write(
            pattern,
            (n, n),
            &out.join(&name),
        )?;
        names.push(name);
    }
    Ok(names)
}

fn zone(plan: &Plan) -> String {
    plan.config.zone.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" ")
}
