//! `simgen traces`: simulator traces into LMDB trace stores sorted by trace type.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use cluster::World;
use cluster::progress::Progress;
use formats::lmdb::TraceStoreWriter;
use formats::manifest::Schema;
use simgen::traces::calorimeter::{NOISE_GEV, SHAPE, VOXELS};
use simgen::traces::store::{self, dictionary_order, store_name};
use simgen::traces::summary::Summary;

use super::multislice::Usage;

#[derive(Args, Debug)]
pub struct TracesArgs {
    #[command(flatten)]
    output: super::OutputArgs,
    /// Number of traces.
    #[arg(long)]
    traces: u64,
    /// Trace stores to write (`traces-FFFFF.lmdb`), each sorted by trace
    /// type and holding a contiguous block of the traces; ranks take them
    /// in turn. Default: one per rank. The stores depend only on --seed,
    /// --traces and --files, so fixing --files gives the same bytes on any
    /// number of ranks.
    #[arg(long)]
    files: Option<u64>,
    /// Master seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The calorimeter's electronic noise per voxel, GeV (Gaussian). Give
    /// `trainer infer --noise` the same value.
    #[arg(long, default_value_t = NOISE_GEV)]
    noise: f32,
    /// Write `preview-observations.png` (a few calorimeter images) and
    /// `preview-trace-types.png` (the most frequent trace types).
    #[arg(long)]
    preview: bool,
}

/// Where a rank's time went.
#[derive(Default)]
struct Times {
    simulating: Duration,
    staging: Duration,
    sorting: Duration,
}

pub fn run(args: &TracesArgs) -> anyhow::Result<()> {
    if args.traces == 0 {
        return Err(Usage("--traces must be at least 1".into()).into());
    }
    if !(args.noise.is_finite() && args.noise > 0.0) {
        return Err(Usage(format!("--noise must be a positive number of GeV, got {}", args.noise)).into());
    }
    if args.files == Some(0) || args.files.is_some_and(|f| f > args.traces) {
        return Err(Usage(format!("--files must be 1 to --traces ({})", args.traces)).into());
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let files = args.files.unwrap_or((world.size() as u64).min(args.traces));
    let (out, out_dir) = args.output.claim(&world)?;
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mine: Vec<u64> = (rank..files).step_by(size as usize).collect();
    let block = |f: u64| store::file_traces(f, files, args.traces);
    let my_traces: u64 = mine.iter().map(|&f| block(f).end - block(f).start).sum();
    let progress = Progress::start(&world, "simulating", args.traces * (VOXELS as u64 * 4), args.traces);
    let started = Instant::now();
    let mut times = Times::default();
    let mut summary = Summary::default();
    let mut writers = Vec::new();
    let mut encoded_bytes = 0u64;
    let mut previews = Vec::new();
    for &f in &mine {
        let path = out.join(store_name(f));
        let mut writer = match TraceStoreWriter::create(&path) {
            Ok(w) => w,
            Err(e) => world.fail(format!("creating a trace store: {e}")),
        };
        let on_trace = |i: u64, run: &simgen::traces::executor::Recorded| {
            if args.preview && i < 4 {
                previews.push((i, run.observation.clone()));
            }
            progress.counters().add_bytes(VOXELS as u64 * 4);
            progress.counters().add_item();
        };
        match store::simulate_into(&mut writer, (args.seed, args.noise), block(f), &mut summary, on_trace) {
            Ok(spent) => {
                times.simulating += spent.simulating;
                times.staging += spent.staging;
            }
            Err(e) => {
                // Dropped writers remove their temporary stores; the abort
                // below would skip that.
                drop((writer, writers));
                world.fail(e.to_string())
            }
        }
        encoded_bytes += writer.staged_bytes();
        writers.push((f, writer));
    }
    progress.finish();

    // One dictionary for every store of the run, so an address id means
    // the same in all of them.
    let names: BTreeSet<String> = writers.iter().flat_map(|(_, w)| w.addresses()).collect();
    let gathered = world.all_gather_bytes(&serde_json::to_vec(&names)?);
    let mut all = BTreeSet::new();
    for (r, bytes) in gathered.iter().enumerate() {
        let theirs: BTreeSet<String> =
            serde_json::from_slice(bytes).with_context(|| format!("the addresses rank {r} sent"))?;
        all.extend(theirs);
    }
    let mut dictionary: Vec<String> = all.into_iter().collect();
    dictionary.sort_by_key(|a| dictionary_order(a));

    let t = Instant::now();
    let schema = Schema::traces(&SHAPE);
    let mut written = Vec::new();
    let mut unfinished = writers.into_iter();
    while let Some((f, writer)) = unfinished.next() {
        let name = store_name(f);
        if let Err(e) = writer.finish_with_dictionary(&dictionary) {
            drop(unfinished);
            world.fail(format!("sorting the traces: {e}"));
        }
        match out_dir.describe(&format!("{name}/data.mdb"), &schema) {
            Ok(entry) => written.push(entry),
            Err(e) => world.fail(format!("describing {name}: {e}")),
        }
    }
    times.sorting += t.elapsed();
    let stored_bytes: u64 = written.iter().map(|e| e.bytes).sum();

    let summaries = world.all_gather_bytes(&summary.to_bytes()?);
    let mut total = Summary::default();
    for (r, bytes) in summaries.iter().enumerate() {
        total.merge(Summary::from_bytes(bytes).with_context(|| format!("the trace types rank {r} counted"))?);
    }
    let lines = total.lines();
    if world.is_root() {
        let table = "trace-types.csv";
        write_type_table(&out.join(table), &lines)?;
        written.push(out_dir.describe(table, &schema)?);
        let lengths = "trace-lengths.csv";
        let text: String = std::iter::once("choices,traces\n".to_owned())
            .chain(total.lengths().iter().map(|(choices, n)| format!("{choices},{n}\n")))
            .collect();
        std::fs::write(out.join(lengths), text).with_context(|| format!("writing {lengths}"))?;
        written.push(out_dir.describe(lengths, &schema)?);
        // Rank 0 simulated the first traces: they are the previews.
        if args.preview {
            for name in super::traces_preview::write(&out, &previews, &lines)? {
                written.push(out_dir.describe(&name, &schema)?);
            }
        }
    }
    out_dir.write_manifest(&world, schema, written)?;
    let seconds = started.elapsed().as_secs_f64();
    report(&world, args, files, &total, &times, (my_traces, stored_bytes, encoded_bytes), seconds)
}

#[allow(clippy::too_many_arguments)]
fn report(
    world: &World,
    args: &TracesArgs,
    files: u64,
    summary: &Summary,
    times: &Times,
    (traces, stored_bytes, encoded_bytes): (u64, u64, u64),
    seconds: f64,
) -> anyhow::Result<()> {
    let mine = [
        traces as f64,
        stored_bytes as f64,
        encoded_bytes as f64,
        times.simulating.as_secs_f64(),
        times.staging.as_secs_f64(),
        times.sorting.as_secs_f64(),
        cluster::memory::peak_rss_bytes() as f64,
    ];
    let Some(figures) = super::RankFigures::gather(world, &mine) else { return Ok(()) };
    let total = summary;
    let (sum, max) = (|i| figures.sum(i), |i| figures.max(i));
    let n = sum(0).max(1.0);
    let lines = total.lines();
    print_summary(total, &lines);
    let json = serde_json::json!({
        "ranks": world.size(),
        "traces": args.traces,
        "files": files,
        "seconds": seconds,
        "traces_per_second": args.traces as f64 / seconds,
        "stored_bytes_per_trace": sum(1) / n,
        "encoded_bytes_per_trace": sum(2) / n,
        "simulating_seconds_per_trace": sum(3) / n,
        "staging_seconds_per_trace": sum(4) / n,
        "sorting_seconds_per_trace": sum(5) / n,
        "peak_rss_bytes_max_rank": max(6),
        "trace_types": {
            "distinct": total.distinct_types(),
            "seen_once": total.singletons(),
            "share_of_the_10_most_frequent": total.top_share(10),
            "most_frequent": lines.iter().take(10).collect::<Vec<_>>(),
            "table": "trace-types.csv",
            "lengths": "trace-lengths.csv",
        },
        "choices_per_trace": total.lengths(),
        "seed": args.seed,
    });
    args.output.write_report(&json)
}

/// `trace-types.csv` beside the stores: every type with its count, share and length.
fn write_type_table(path: &std::path::Path, lines: &[simgen::traces::summary::TypeLine]) -> anyhow::Result<()> {
    let mut text = String::from("rank,count,share,controlled_choices,type\n");
    for l in lines {
        text.push_str(&format!("{},{},{:.6},{},\"{}\"\n", l.rank, l.count, l.share, l.length, l.label));
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The summary a person reads, on stderr (the report is on stdout).
fn print_summary(total: &Summary, lines: &[simgen::traces::summary::TypeLine]) {
    eprintln!(
        "{} traces of {} types ({} seen once); the 10 most frequent types hold {:.1} %:",
        total.traces(),
        total.distinct_types(),
        total.singletons(),
        100.0 * total.top_share(10)
    );
    eprintln!("{:>5} {:>9} {:>7} {:>7}  type", "rank", "traces", "share", "length");
    for l in lines.iter().take(10) {
        let label: String = if l.label.chars().count() > 90 {
            l.label.chars().take(87).chain("...".chars()).collect()
        } else {
            l.label.clone()
        };
        eprintln!("{:>5} {:>9} {:>6.2}% {:>7}  {label}", l.rank, l.count, 100.0 * l.share, l.length);
    }
    let lengths = total.lengths();
    if let (Some(first), Some(last)) = (lengths.first(), lengths.last()) {
        eprintln!("choices per trace: {} to {}", first.0, last.0);
    }
}
