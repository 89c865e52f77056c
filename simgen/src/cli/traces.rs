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
use simgen::traces::executor::{Executor, RunError};
use simgen::traces::remote::{self, RemoteSimulator};
use simgen::traces::store::{self, dictionary_order, store_name};
use simgen::traces::summary::Summary;
use simgen::traces::tau;

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
    /// The calorimeter's electronic noise per voxel, GeV (Gaussian); with
    /// --ppx, replaces the deviation the simulator states for its tensor
    /// observation. Give `trainer infer --noise` the same value. Default:
    /// 0.002 for the built-in simulator, the simulator's own with --ppx.
    #[arg(long)]
    noise: Option<f32>,
    /// Write `preview-observations.png` (a few calorimeter images) and
    /// `preview-trace-types.png` (the most frequent trace types).
    #[arg(long)]
    preview: bool,
    /// Record the traces of a simulator that speaks PPX (pyprob's protocol)
    /// at this ZeroMQ address instead of the built-in tau simulator; we
    /// draw every choice from its prior. A PPX simulator serves one system
    /// at a time: with several ranks, put `{rank}` in the address (each
    /// rank connects to its own simulator, for example
    /// `ipc:///tmp/sim-{rank}`).
    #[arg(long, value_name = "ADDRESS")]
    ppx: Option<String>,
    /// Seconds a PPX simulator may take to answer before the run fails.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    ppx_timeout: f64,
}

/// The simulator a rank records: built in, or over PPX.
enum Simulator {
    Tau,
    Remote(Box<RemoteSimulator>),
}

impl Simulator {
    fn run(&mut self, ex: &mut Executor<'_>) -> Result<(), RunError> {
        match self {
            Simulator::Tau => tau::simulate(ex),
            Simulator::Remote(remote) => remote.run(ex),
        }
    }
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
    if let Some(noise) = args.noise
        && !(noise.is_finite() && noise > 0.0)
    {
        return Err(Usage(format!("--noise must be a positive number of GeV, got {noise}")).into());
    }
    if args.ppx.is_some() && args.preview {
        return Err(Usage("--preview draws the calorimeter; a --ppx simulator observes what it likes".into()).into());
    }
    if !(args.ppx_timeout.is_finite() && args.ppx_timeout > 0.0) {
        return Err(
            Usage(format!("--ppx-timeout must be a positive number of seconds, got {}", args.ppx_timeout)).into()
        );
    }
    if args.files == Some(0) || args.files.is_some_and(|f| f > args.traces) {
        return Err(Usage(format!("--files must be 1 to --traces ({})", args.traces)).into());
    }
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    let files = args.files.unwrap_or((world.size() as u64).min(args.traces));
    let mut simulator = match &args.ppx {
        None => Simulator::Tau,
        Some(template) => {
            let address = remote::rank_address(template, world.rank(), world.size()).unwrap_or_else(|e| world.fail(e));
            let timeout = Duration::from_secs_f64(args.ppx_timeout);
            match RemoteSimulator::connect(&address, timeout) {
                Ok(remote) => Simulator::Remote(Box::new(remote)),
                Err(e) => world.fail(format!("--ppx: {e}")),
            }
        }
    };
    let noise = match &simulator {
        Simulator::Tau => Some(args.noise.unwrap_or(NOISE_GEV)),
        Simulator::Remote(_) => args.noise,
    };
    let (out, out_dir) = args.output.claim(&world)?;
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mine: Vec<u64> = (rank..files).step_by(size as usize).collect();
    let block = |f: u64| store::file_traces(f, files, args.traces);
    let my_traces: u64 = mine.iter().map(|&f| block(f).end - block(f).start).sum();
    // A PPX simulator's observation size is known once it has run; its
    // progress counts traces.
    let bytes_per_trace = if args.ppx.is_none() { VOXELS as u64 * 4 } else { 0 };
    let progress = Progress::start(&world, "simulating", args.traces * bytes_per_trace, args.traces);
    let mut shape: Option<Vec<usize>> = None;
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
        let mut other_shape = None;
        let on_trace = |i: u64, run: &simgen::traces::executor::Recorded| {
            if args.preview && i < 4 {
                previews.push((i, run.observation.clone()));
            }
            match &shape {
                None => shape = Some(run.observation_shape.clone()),
                Some(first) if *first != run.observation_shape => {
                    other_shape.get_or_insert((i, run.observation_shape.clone()));
                }
                Some(_) => {}
            }
            progress.counters().add_bytes(bytes_per_trace);
            progress.counters().add_item();
        };
        let mut program = |ex: &mut Executor<'_>| simulator.run(ex);
        let simulated =
            store::simulate_into(&mut writer, &mut program, (args.seed, noise), block(f), &mut summary, on_trace);
        if let (Some((i, other)), Some(first)) = (other_shape, &shape) {
            drop((writer, writers));
            world.fail(format!("trace {i} observes a tensor of shape {other:?}; the first trace's was {first:?}"));
        }
        match simulated {
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
    // Every rank's observations must have one shape: the manifest states it.
    let mut agreed: Option<Vec<usize>> = None;
    for (r, bytes) in world.all_gather_bytes(&serde_json::to_vec(&shape)?).iter().enumerate() {
        let theirs: Option<Vec<usize>> =
            serde_json::from_slice(bytes).with_context(|| format!("the shape rank {r} sent"))?;
        match (&agreed, theirs) {
            (Some(first), Some(theirs)) if *first != theirs => {
                world.fail(format!("rank {r}'s simulator observes shape {theirs:?}, a lower rank's {first:?}"))
            }
            (None, Some(theirs)) => agreed = Some(theirs),
            _ => {}
        }
    }
    let schema = Schema::traces(&agreed.unwrap_or_else(|| SHAPE.to_vec()));
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
    let simulator = match &simulator {
        Simulator::Tau => serde_json::json!({ "kind": "built-in tau decay" }),
        Simulator::Remote(remote) => serde_json::json!({
            "kind": "ppx",
            "address": args.ppx,
            "system_name": remote.system_name,
            "model_name": remote.model_name,
        }),
    };
    let figures = (my_traces, stored_bytes, encoded_bytes);
    report(&world, args, files, &total, &times, figures, (seconds, simulator, noise))
}

#[allow(clippy::too_many_arguments)]
fn report(
    world: &World,
    args: &TracesArgs,
    files: u64,
    summary: &Summary,
    times: &Times,
    (traces, stored_bytes, encoded_bytes): (u64, u64, u64),
    (seconds, simulator, noise): (f64, serde_json::Value, Option<f32>),
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
        "noise": noise,
        "simulator": simulator,
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
