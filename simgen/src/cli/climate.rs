//! `simgen climate`: DeepCAM-layout HDF5 samples with cyclone and river masks.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use cluster::World;
use cluster::progress::Progress;
use formats::climate::{self, ChannelStats, ClimateShape, STATS_FILE};
use formats::manifest::Schema;
use simgen::climate::channels::CHANNELS;
use simgen::climate::generate::{ClimateConfig, is_validation, sample_path};
use simgen::climate::stats::Accumulator;
use simgen::heatmap::{Axes, Axis, Heatmap, Outlines, Scale};

use super::multislice::Usage;

#[derive(Args, Debug)]
pub struct ClimateArgs {
    #[command(flatten)]
    output: super::OutputArgs,
    /// Number of samples; divided among the ranks.
    #[arg(long)]
    samples: u64,
    /// Latitudes.
    #[arg(long, default_value_t = 768)]
    height: usize,
    /// Longitudes.
    #[arg(long, default_value_t = 1152)]
    width: usize,
    /// Channels stored: the first N of TMQ, U850, V850, UBOT, VBOT, QREFHT, PS, PSL, T200, T500, PRECT, TS, TREFHT, Z1000, Z200, ZBOT.
    #[arg(long, default_value_t = 16)]
    channels: usize,
    /// Tropical cyclones per sample, drawn uniformly: `0-4`, or one number.
    #[arg(long, default_value = "0-4")]
    cyclones: String,
    /// Atmospheric rivers per sample, drawn uniformly: `0-3`, or one number.
    #[arg(long, default_value = "0-3")]
    rivers: String,
    /// Fraction of the samples in `validation/` (spread evenly over the indices).
    #[arg(long, default_value_t = 0.1)]
    val_fraction: f64,
    /// Master seed: the same seed gives byte-identical samples on any number of ranks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write a PNG per sample: water vapour with the cyclone and river masks outlined.
    #[arg(long)]
    preview: bool,
}

/// The smallest cyclone's radius in degrees of latitude (200 km): a pixel
/// must be smaller for a storm to show.
const SMALLEST_FEATURE_DEGREES: f64 = 1.8;

fn range(text: &str, what: &str) -> Result<(usize, usize), Usage> {
    let bad = || Usage(format!("--{what} {text:?} is not a count or a range such as 0-4"));
    let parse = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
    let (lo, hi) = match text.split_once('-') {
        Some((a, b)) => (parse(a)?, parse(b)?),
        None => (parse(text)?, parse(text)?),
    };
    if lo > hi || hi > 64 {
        return Err(bad());
    }
    Ok((lo, hi))
}

impl ClimateArgs {
    fn config(&self) -> Result<ClimateConfig, Usage> {
        if self.samples == 0 {
            return Err(Usage("--samples must be at least 1".into()));
        }
        if !(1..=CHANNELS.len()).contains(&self.channels) {
            return Err(Usage(format!("--channels {} must be 1 to {} (the named set)", self.channels, CHANNELS.len())));
        }
        for (what, pixels, span) in [("height", self.height, 180.0), ("width", self.width, 360.0)] {
            let degrees = span / pixels.max(1) as f64;
            if degrees > SMALLEST_FEATURE_DEGREES || pixels > 16_384 {
                return Err(Usage(format!(
                    "--{what} {pixels}: a pixel spans {degrees:.2}° and the smallest cyclone {SMALLEST_FEATURE_DEGREES}°; \
                     use {} to 16384",
                    (span / SMALLEST_FEATURE_DEGREES).ceil()
                )));
            }
        }
        if !(0.0..1.0).contains(&self.val_fraction) {
            return Err(Usage(format!("--val-fraction {} must be in [0, 1)", self.val_fraction)));
        }
        Ok(ClimateConfig {
            height: self.height,
            width: self.width,
            channels: self.channels,
            cyclones: range(&self.cyclones, "cyclones")?,
            rivers: range(&self.rivers, "rivers")?,
            seed: self.seed,
        })
    }
}

pub fn run(args: &ClimateArgs) -> anyhow::Result<()> {
    let config = args.config()?;
    let shape = ClimateShape { height: config.height, width: config.width, channels: config.channels };
    // A sample, its 16-channel working copy and the background fields.
    let needed = (shape.pixels() * (16 + config.channels + 6) * 4) as f64;
    if let Some(reason) =
        cluster::memory::shortfall(needed, &format!("--height {} --width {}", config.height, config.width))
    {
        return Err(Usage(reason).into());
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let (out, out_dir) = args.output.claim(&world)?;
    let schema = Schema::deepcam(shape);
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mine = (rank * args.samples / size)..((rank + 1) * args.samples / size);
    for split in ["train", "validation"] {
        std::fs::create_dir_all(out.join(split)).with_context(|| format!("creating {}", out.join(split).display()))?;
    }
    let progress = Progress::start(
        &world,
        "generating",
        args.samples * (shape.values() * 4 + shape.pixels() * 4) as u64,
        args.samples,
    );
    let started = Instant::now();
    let mut stats = Accumulator::new(config.channels);
    // Every sample's (training and validation) range, for the report.
    let mut ranges = Accumulator::new(config.channels);
    let mut classes = [0u64; 3];
    let mut times = Times::default();
    let mut written = Vec::new();
    let described: Vec<(&str, &str)> = CHANNELS.iter().take(config.channels).map(|c| (c.name, c.units)).collect();
    for i in mine {
        let t = Instant::now();
        let sample = config.sample(i);
        times.synthesis += t.elapsed();
        let train = !is_validation(i, args.val_fraction);
        let rel = sample_path(i, args.val_fraction);
        let t = Instant::now();
        let result = climate::write_described_sample(&out.join(&rel), shape, &sample.data, &sample.labels, &described);
        times.writing += t.elapsed();
        let t = Instant::now();
        let result = result.map_err(anyhow::Error::from).and_then(|()| Ok(out_dir.describe(&rel, &schema)?));
        times.describing += t.elapsed();
        match result {
            Ok(entry) => written.push(entry),
            Err(e) => {
                world.fail(format!("writing {}: {}", out.join(&rel).display(), cluster::logging::chain(e.as_ref())))
            }
        }
        let t = Instant::now();
        if train {
            stats.add(&sample.data);
        }
        ranges.add(&sample.data);
        times.statistics += t.elapsed();
        for &l in &sample.labels {
            classes[l.clamp(0, 2) as usize] += 1;
        }
        if args.preview {
            let name = format!("preview-{i:06}.png");
            // TMQ is the first channel, so every --channels stores it.
            let tmq: Vec<f32> = sample.data.chunks(config.channels).map(|px| px[0]).collect();
            let title = format!("sample {i}: water vapour (TMQ), cyclones red, rivers white");
            let drawn = Heatmap {
                title: &title,
                unit: "kg/m²",
                scale: Scale::Linear,
                axes: Some(Axes {
                    x: Axis { label: "longitude (°E)", range: (0.0, 360.0) },
                    y: Axis { label: "latitude (°N)", range: (-90.0, 90.0) },
                }),
                outlines: Some(Outlines { labels: &sample.labels, colours: &[(255, 40, 40), (255, 255, 255)] }),
            }
            .write(&tmq, (config.height, config.width), &out.join(&name));
            match drawn.map_err(anyhow::Error::from).and_then(|()| Ok(out_dir.describe(&name, &schema)?)) {
                Ok(entry) => written.push(entry),
                Err(e) => world.fail(format!("writing {name}: {}", cluster::logging::chain(e.as_ref()))),
            }
        }
        progress.counters().add_bytes((shape.values() * 4 + shape.pixels() * 4) as u64);
        progress.counters().add_item();
    }
    progress.finish();
    // stats.h5 over the training samples of every rank.
    let gathered = world.all_gather_bytes(&stats.to_bytes());
    let mut all = Accumulator::new(config.channels);
    for bytes in &gathered {
        match Accumulator::from_bytes(bytes, config.channels) {
            Some(a) => all.merge(&a),
            None => world.fail("a rank's statistics arrived with the wrong length"),
        }
    }
    if world.is_root() {
        let stats_path = out.join(STATS_FILE);
        match all.stats() {
            Some(s) => {
                climate::write_stats(&stats_path, &s).with_context(|| format!("writing {}", stats_path.display()))?;
                written.push(out_dir.describe(STATS_FILE, &schema)?);
            }
            None => world.fail("no training samples to summarise: raise --samples or lower --val-fraction"),
        }
    }
    let mut all_ranges = Accumulator::new(config.channels);
    for bytes in &world.all_gather_bytes(&ranges.to_bytes()) {
        match Accumulator::from_bytes(bytes, config.channels) {
            Some(a) => all_ranges.merge(&a),
            None => world.fail("a rank's channel ranges arrived with the wrong length"),
        }
    }
    out_dir.write_manifest(&world, schema, written)?;
    report(&world, args, &classes, &times, all_ranges.stats().as_ref(), started.elapsed().as_secs_f64())
}

/// Where a rank's time went, summed over its samples.
#[derive(Default)]
struct Times {
    /// Making the sample's fields and labels.
    synthesis: Duration,
    /// Writing the HDF5 file.
    writing: Duration,
    /// Reading it back to hash it for the manifest.
    describing: Duration,
    /// Adding a training sample to the channel statistics.
    statistics: Duration,
}

fn report(
    world: &World,
    args: &ClimateArgs,
    classes: &[u64; 3],
    times: &Times,
    ranges: Option<&ChannelStats>,
    seconds: f64,
) -> anyhow::Result<()> {
    let mine = [
        classes[0] as f64,
        classes[1] as f64,
        classes[2] as f64,
        times.synthesis.as_secs_f64(),
        times.writing.as_secs_f64(),
        times.describing.as_secs_f64(),
        times.statistics.as_secs_f64(),
        cluster::memory::peak_rss_bytes() as f64,
    ];
    let Some(figures) = super::RankFigures::gather(world, &mine) else { return Ok(()) };
    let (sum, max) = (|i| figures.sum(i), |i| figures.max(i));
    let total = sum(0) + sum(1) + sum(2);
    let freq: Vec<f64> = (0..3).map(|k| sum(k) / total.max(1.0)).collect();
    let weights = |power: f64| freq.iter().map(|f| if *f > 0.0 { f.powf(power) } else { 0.0 }).collect::<Vec<_>>();
    let json = serde_json::json!({
        "ranks": world.size(),
        "samples": args.samples,
        "seconds": seconds,
        "samples_per_second": args.samples as f64 / seconds,
        "synthesis_seconds_per_sample": sum(3) / args.samples as f64,
        "writing_seconds_per_sample": sum(4) / args.samples as f64,
        "manifest_hash_seconds_per_sample": sum(5) / args.samples as f64,
        "statistics_seconds_per_sample": sum(6) / args.samples as f64,
        "peak_rss_bytes_max_rank": max(7),
        "class_frequencies": { "background": freq[0], "cyclone": freq[1], "river": freq[2] },
        "class_weights": {
            "inverse_sqrt_as_the_paper": weights(-0.5),
            "power_minus_0.125_as_mlperf": weights(-0.125),
        },
        // Each channel's range over every sample, beside the observed
        // extremes it is kept within (simgen::climate::bounds).
        "channels": CHANNELS.iter().take(args.channels).enumerate().map(|(k, c)| serde_json::json!({
            "name": c.name,
            "units": c.units,
            "min": ranges.map(|r| r.minval[k]),
            "max": ranges.map(|r| r.maxval[k]),
            "bounds": [c.bounds.low, c.bounds.high],
        })).collect::<Vec<_>>(),
    });
    args.output.write_report(&json)
}
