//! `simgen jets`: collision events as three-channel calorimeter images in
//! the HEP-CNN benchmark's HDF5 layout, many events per file.

use std::time::Instant;

use anyhow::Context;
use clap::Args;
use cluster::World;
use cluster::progress::Progress;
use formats::jets::{EventShape, Events, write_events};
use formats::manifest::Schema;
use simgen::climate::generate::is_validation;
use simgen::heatmap::{Axes, Axis, Heatmap, Scale};
use simgen::jets::generate::JetsConfig;
use simgen::jets::process::Processes;

use super::multislice::Usage;

#[derive(Args, Debug)]
pub struct JetsArgs {
    #[command(flatten)]
    output: super::OutputArgs,
    /// Number of events; whole files of --per-file events are divided among the ranks.
    #[arg(long)]
    events: u64,
    /// Events per HDF5 file (the last file may hold fewer); a rank holds one file's events in memory
    /// (1024 of 224×224: 0.6 GB).
    #[arg(long, default_value_t = 1024)]
    per_file: u64,
    /// Image size: N bins of η over |η| < 2.5 by N bins of φ (224 as HEP-CNN's large images, 64 its small ones).
    #[arg(long, default_value_t = 224)]
    size: usize,
    /// Mean number of pile-up interactions per event (ATLAS 2016: 24).
    #[arg(long, default_value_t = 24.0)]
    pileup: f64,
    /// Fraction of the events that are signal (gluino pairs).
    #[arg(long, default_value_t = 0.5)]
    signal_fraction: f64,
    /// Gluino mass, GeV.
    #[arg(long, default_value_t = Processes::DEFAULT.gluino_mass)]
    gluino_mass: f64,
    /// Neutralino mass, GeV (below the gluino's).
    #[arg(long, default_value_t = Processes::DEFAULT.neutralino_mass)]
    neutralino_mass: f64,
    /// Background's leading-pT threshold, GeV: lower makes the classes easier to tell apart by energy alone.
    #[arg(long, default_value_t = Processes::DEFAULT.background_pt_min)]
    background_pt_min: f64,
    /// Fraction of the files in `validation/` (spread evenly over the files).
    #[arg(long, default_value_t = 0.1)]
    val_fraction: f64,
    /// Master seed: the same seed gives byte-identical files on any number of ranks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also draw the first event of each class in the first file as a PNG (each channel beside the others).
    #[arg(long)]
    preview: bool,
}

impl JetsArgs {
    fn config(&self) -> Result<JetsConfig, Usage> {
        if self.events == 0 || self.per_file == 0 {
            return Err(Usage("--events and --per-file must be at least 1".into()));
        }
        if !(8..=1024).contains(&self.size) {
            return Err(Usage(format!("--size {} must be 8 to 1024 bins", self.size)));
        }
        if !(self.pileup.is_finite() && (0.0..=200.0).contains(&self.pileup)) {
            return Err(Usage(format!("--pileup {} must be 0 to 200 interactions", self.pileup)));
        }
        if !(0.0..=1.0).contains(&self.signal_fraction) {
            return Err(Usage(format!("--signal-fraction {} must be in [0, 1]", self.signal_fraction)));
        }
        if !(self.neutralino_mass > 0.0 && self.neutralino_mass < self.gluino_mass && self.gluino_mass < 6000.0) {
            return Err(Usage(format!(
                "masses {} GeV (gluino) and {} GeV (neutralino): need 0 < neutralino < gluino < 6000",
                self.gluino_mass, self.neutralino_mass
            )));
        }
        if !(self.background_pt_min.is_finite() && self.background_pt_min >= 20.0) {
            return Err(Usage(format!("--background-pt-min {} must be at least 20 GeV", self.background_pt_min)));
        }
        if !(0.0..1.0).contains(&self.val_fraction) {
            return Err(Usage(format!("--val-fraction {} must be in [0, 1)", self.val_fraction)));
        }
        Ok(JetsConfig {
            height: self.size,
            width: self.size,
            pileup: self.pileup,
            signal_fraction: self.signal_fraction,
            processes: Processes {
                gluino_mass: self.gluino_mass,
                neutralino_mass: self.neutralino_mass,
                background_pt_min: self.background_pt_min,
            },
            seed: self.seed,
        })
    }
}

/// Where file `file` goes: `train/events-00003.h5` or `validation/...`.
fn file_path(file: u64, val_fraction: f64) -> String {
    let split = if is_validation(file, val_fraction) { "validation" } else { "train" };
    format!("{split}/events-{file:05}.h5")
}

pub fn run(args: &JetsArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    let shape = EventShape { channels: 3, height: config.height, width: config.width };
    // A file's events are held until the file is written.
    let needed = (args.per_file.min(args.events) * (shape.values() * 4) as u64) as f64;
    let what = format!("--per-file {} of {}×{} images", args.per_file, shape.height, shape.width);
    if let Some(reason) = cluster::memory::shortfall(needed, &what) {
        return Err(Usage(format!("{reason}: lower --per-file")).into());
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let (out, out_dir) = args.output.claim(&world)?;
    let schema = Schema::jets(shape);
    for split in ["train", "validation"] {
        std::fs::create_dir_all(out.join(split)).with_context(|| format!("creating {}", out.join(split).display()))?;
    }
    let files = args.events.div_ceil(args.per_file);
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let event_bytes = (shape.values() * 4) as u64;
    let progress = Progress::start(&world, "generating", args.events * event_bytes, args.events);
    let started = Instant::now();
    let mut written = Vec::new();
    // [events, signal, selected signal, selected background, particles, seconds making, seconds writing]
    let mut figures = [0f64; 7];
    let mut previewed = [false; 2];
    for file in (0..files).filter(|f| f % size == rank) {
        let events = (file * args.per_file)..((file + 1) * args.per_file).min(args.events);
        let count = (events.end - events.start) as usize;
        let mut data = Vec::with_capacity(count * shape.values());
        let (mut labels, mut psr) = (Vec::with_capacity(count), Vec::with_capacity(count));
        let t = Instant::now();
        for index in events {
            let event = config.event(index);
            figures[0] += 1.0;
            figures[1] += f64::from(event.label);
            figures[2 + usize::from(event.label == 0)] += f64::from(u8::from(event.selected));
            figures[4] += event.particles as f64;
            // From the first file only, so one rank draws each picture.
            if args.preview && file == 0 && !previewed[event.label as usize] {
                previewed[event.label as usize] = true;
                let name = format!("preview-{}.png", if event.label == 1 { "signal" } else { "background" });
                match preview(&event.image, shape, index, event.label, &out.join(&name))
                    .and_then(|()| Ok(out_dir.describe(&name, &schema)?))
                {
                    Ok(entry) => written.push(entry),
                    Err(e) => world.fail(format!("writing {name}: {}", cluster::logging::chain(e.as_ref()))),
                }
            }
            data.extend_from_slice(&event.image);
            labels.push(event.label);
            psr.push(f32::from(u8::from(event.selected)));
            progress.counters().add_bytes(event_bytes);
            progress.counters().add_item();
        }
        figures[5] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let rel = file_path(file, args.val_fraction);
        // Events are generated as they occur, not reweighted: weight 1.
        let weights = vec![1f32; count];
        let result =
            write_events(&out.join(&rel), shape, Events { data: &data, labels: &labels, weights: &weights, psr: &psr })
                .map_err(anyhow::Error::from)
                .and_then(|()| Ok(out_dir.describe(&rel, &schema)?));
        match result {
            Ok(entry) => written.push(entry),
            Err(e) => {
                world.fail(format!("writing {}: {}", out.join(&rel).display(), cluster::logging::chain(e.as_ref())))
            }
        }
        figures[6] += t.elapsed().as_secs_f64();
    }
    progress.finish();
    out_dir.write_manifest(&world, schema, written)?;
    let Some(all) = super::RankFigures::gather(&world, &figures) else { return Ok(()) };
    let seconds = started.elapsed().as_secs_f64();
    let (events, signal) = (all.sum(0), all.sum(1));
    let background = events - signal;
    let json = serde_json::json!({
        "ranks": world.size(),
        "events": args.events,
        "files": files,
        "image": [shape.channels, shape.height, shape.width],
        "channels": ["ECAL E_T (GeV)", "HCAL E_T (GeV)", "tracks"],
        "signal_events": signal,
        "background_events": background,
        "mean_particles_per_event": all.sum(4) / events.max(1.0),
        // The cut-based baseline on the whole run, as the network's
        // validation reports it on held-out events.
        "selection": {
            "signal_efficiency": all.sum(2) / signal.max(1.0),
            "background_efficiency": all.sum(3) / background.max(1.0),
            "accuracy": (all.sum(2) + background - all.sum(3)) / events.max(1.0),
        },
        "physics": config,
        "seconds": seconds,
        "events_per_second": events / seconds,
        "making_seconds_per_event": all.sum(5) / events.max(1.0),
        "writing_seconds_per_event": all.sum(6) / events.max(1.0),
    });
    args.output.write_report(&json)
}

/// The event's three channels side by side (ECAL | HCAL | tracks), each on
/// a logarithmic scale.
fn preview(image: &[f32], shape: EventShape, index: u64, label: i32, path: &std::path::Path) -> anyhow::Result<()> {
    let (h, w) = (shape.height, shape.width);
    let mut wide = vec![0f32; h * 3 * w];
    for channel in 0..3 {
        for row in 0..h {
            let from = &image[channel * h * w + row * w..channel * h * w + (row + 1) * w];
            // Row 0 is η = -2.5; draw η upwards.
            let to = (h - 1 - row) * 3 * w + channel * w;
            wide[to..to + w].copy_from_slice(from);
        }
    }
    let what = if label == 1 { "signal (gluino pair)" } else { "background (QCD multi-jet)" };
    let title = format!("event {index}, {what}: ECAL E_T | HCAL E_T | tracks");
    Heatmap {
        title: &title,
        unit: "GeV or tracks",
        scale: Scale::Log { decades: 4 },
        axes: Some(Axes {
            x: Axis { label: "φ, three channels side by side", range: (0.0, 3.0) },
            y: Axis { label: "η", range: (-2.5, 2.5) },
        }),
        outlines: None,
    }
    .write(&wide, (h, 3 * w), path)?;
    Ok(())
}
