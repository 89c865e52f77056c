//! `stager`: stage a dataset into node-local storage, or plan and simulate it.

mod report;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use cluster::World;
use formats::placement::Policy;
use stager::files::ReadMethod;
use stager::plan::Plan;
use stager::serve::{ServeConfig, ServeError};
use stager::simulate::{Dataset, Machine, predict};
use stager::stage::{StageConfig, StageError};
use stager::units::{human_bytes, parse_bytes, parse_rate};

/// Stage datasets from the parallel file system into node-local storage.
///
/// Run `stage` and `verify` under mpirun or srun; `plan` and `simulate` run
/// anywhere. Node-local destinations are templates: `/tmp/bb/node{node}`,
/// `'$TMPDIR/data'`; `STAGEHAND_RANKS_PER_NODE=k` makes pretend nodes.
#[derive(Parser, Debug)]
#[command(version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Copy the dataset into node-local storage: each file read once, sent to every node that needs it.
    Stage(StageArgs),
    /// Stage while training runs: one rank per node stages in the order
    /// training will read, and the node's training processes wait only for
    /// files not in place yet (over a socket in the destination). Runs
    /// until `stager stop` or SIGTERM.
    Serve(ServeArgs),
    /// Print what a node's staging service has placed, what its clients
    /// wait for, and the time left.
    Status(StatusArgs),
    /// Stop a node's staging service (and with it every node's).
    Stop(StopArgs),
    /// Check what is staged on each node against the manifest.
    Verify(VerifyArgs),
    /// Print the staging plan for a dataset on a given topology (no I/O besides the manifest).
    Plan(PlanArgs),
    /// Predict staging times of the plan and of the naive copy at any scale.
    Simulate(SimulateArgs),
}

/// Where the data is and what each node gets: shared by `stage` and `verify`,
/// which must be given the same values.
#[derive(Args, Debug)]
struct Placement {
    /// Dataset directory on the source (parallel) file system.
    #[arg(long)]
    source: PathBuf,
    /// Manifest (default: SOURCE/manifest.json; if absent, rank 0 scans SOURCE once).
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// Node-local destination template ({node}, {rank}, {local_rank}, $VAR).
    #[arg(long)]
    dest: String,
    /// replicate | shard | per-node=N
    #[arg(long, default_value = "replicate")]
    policy: Policy,
    /// Seed of the per-node file choice (the loader must use the same).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Args, Debug)]
struct StageArgs {
    #[command(flatten)]
    placement: Placement,
    /// Read threads per rank.
    #[arg(long, default_value_t = 8)]
    threads: usize,
    /// Bytes per chunk: per map or read, and per MPI message. Each chunk is
    /// hashed and written 256 KiB at a time; larger chunks mean fewer maps
    /// and messages, smaller ones less memory per message (see
    /// docs/tuning.md).
    #[arg(long, value_parser = parse_bytes, default_value = "2MiB")]
    chunk_size: u64,
    /// Cap on bytes read but not yet sent, per rank (chunks in buffers or
    /// maps). A larger pool only touches more fresh memory, which costs
    /// more than it saves (see docs/tuning.md).
    #[arg(long, value_parser = parse_bytes, default_value = "128MiB")]
    max_inflight: u64,
    /// How to read the source: `mmap` maps each chunk and sends it from the
    /// map (one copy fewer; a source file truncated while mapped ends the job
    /// with a SIGBUS message), `read` reads it into a buffer, `auto` maps files of
    /// 1 MiB or more on local file systems (ext4, XFS, Btrfs, F2FS, tmpfs) and
    /// reads smaller files and those on parallel and network file systems
    /// (Lustre, GPFS, NFS, ...).
    #[arg(long, default_value = "auto")]
    read_method: ReadMethod,
    /// Run the baseline instead: every node reads what it needs from the source.
    #[arg(long)]
    naive: bool,
    /// Re-hash the files the journal says are staged instead of trusting it
    /// (and their size); any that differ from the manifest are staged again.
    /// What to run after `stager verify` finds a corrupt file.
    #[arg(long)]
    recheck: bool,
    /// Testing aid: emulate a shared file system of this aggregate bandwidth (e.g. 500MB/s).
    #[arg(long, value_parser = parse_rate)]
    source_bandwidth: Option<f64>,
    /// Also write the JSON report to this file.
    #[arg(long)]
    report: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    stage: StageArgs,
    /// Training processes per node: the service stages in the order these
    /// read the node's samples (a different count only costs waiting).
    #[arg(long, default_value_t = 1)]
    train_ranks_per_node: usize,
    /// Only files under this prefix hold training samples (e.g. `train/`);
    /// the others are staged after them.
    #[arg(long)]
    train_under: Option<String>,
    #[command(flatten)]
    global: GlobalArgs,
}

/// A global shuffle served from other nodes (`stager serve`).
#[derive(Args, Debug)]
struct GlobalArgs {
    /// Serve a global shuffle over a sharded dataset (--policy shard): every
    /// epoch the training ranks read one permutation of the whole dataset,
    /// and each node fetches the files its ranks will read from the nodes
    /// holding them, ahead of need, into a bounded cache. Train with
    /// `--staged` on the same destination, with the same batch and seed.
    #[arg(long)]
    global_shuffle: bool,
    /// Epochs the training reads (the service fetches ahead for these).
    #[arg(long, requires = "global_shuffle")]
    epochs: Option<u64>,
    /// Samples per rank per step (the trainer's --batch).
    #[arg(long, requires = "global_shuffle")]
    batch: Option<usize>,
    /// The training shuffle's seed (the trainer's --seed).
    #[arg(long, default_value_t = 0, requires = "global_shuffle")]
    shuffle_seed: u64,
    /// Storage per node for its shard and the cache: what does not fit of
    /// the shard is read from the source again when needed.
    #[arg(long, value_parser = parse_bytes, requires = "global_shuffle", conflicts_with = "tiers")]
    capacity: Option<u64>,
    /// Of --capacity, the room for other nodes' files (default: a
    /// sixteenth of it; all that is needed without --capacity).
    #[arg(long, value_parser = parse_bytes, requires = "global_shuffle", conflicts_with = "tiers")]
    cache: Option<u64>,
    /// Two tiers, e.g. ram=8GiB,nvme=1TiB: the shard on the destination's
    /// storage (nvme), other nodes' files cached in memory (ram, in --ram-dir).
    #[arg(long, value_parser = parse_tiers, requires = "global_shuffle")]
    tiers: Option<Tiers>,
    /// Where the ram tier lives (a tmpfs directory; {node} is the node).
    #[arg(long, default_value = "/dev/shm/stagehand-node{node}", requires = "tiers")]
    ram_dir: String,
    /// Where fetched files go without --tiers (default DEST/.stagehand/peers; {node} is the node).
    #[arg(long, requires = "global_shuffle", conflicts_with = "tiers")]
    cache_dir: Option<String>,
    /// Reads the fetcher runs ahead of the node's training ranks.
    #[arg(long, default_value_t = 16, requires = "global_shuffle")]
    window: usize,
    /// What a full cache gives up: the file needed again last (the order
    /// is known) or, to compare, the one read longest ago.
    #[arg(long, value_enum, default_value_t = EvictionArg::Furthest, requires = "global_shuffle")]
    eviction: EvictionArg,
}

/// `--tiers ram=SIZE,nvme=SIZE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tiers {
    ram: u64,
    nvme: u64,
}

fn parse_tiers(text: &str) -> Result<Tiers, String> {
    let (mut ram, mut nvme) = (None, None);
    for part in text.split(',') {
        let (name, size) = part.split_once('=').ok_or_else(|| format!("{part:?} is not NAME=SIZE"))?;
        let size = parse_bytes(size)?;
        match name.trim() {
            "ram" => ram = Some(size),
            "nvme" => nvme = Some(size),
            other => return Err(format!("unknown tier {other:?} (ram, nvme)")),
        }
    }
    match (ram, nvme) {
        (Some(ram), Some(nvme)) => Ok(Tiers { ram, nvme }),
        _ => Err("give both tiers: ram=SIZE,nvme=SIZE".into()),
    }
}

impl GlobalArgs {
    fn config(&self) -> anyhow::Result<Option<stager::serve::global::GlobalConfig>> {
        if !self.global_shuffle {
            return Ok(None);
        }
        let epochs = self.epochs.context("--global-shuffle needs --epochs (the epochs training reads)")?;
        let batch = self.batch.context("--global-shuffle needs --batch (the trainer's batch per rank)")?;
        anyhow::ensure!(epochs > 0 && batch > 0, "--epochs and --batch must be at least 1");
        let (capacity, cache, cache_dir) = match self.tiers {
            Some(Tiers { ram, nvme }) => (Some(nvme.saturating_add(ram)), Some(ram), Some(self.ram_dir.clone())),
            None => (self.capacity, self.cache, self.cache_dir.clone()),
        };
        Ok(Some(stager::serve::global::GlobalConfig {
            epochs,
            batch,
            shuffle_seed: self.shuffle_seed,
            capacity,
            cache,
            window: self.window,
            eviction: self.eviction.rule(),
            cache_dir,
        }))
    }
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// A node's destination directory (as expanded on that node).
    dest: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct StopArgs {
    /// A node's destination directory (as expanded on that node).
    dest: PathBuf,
}

#[derive(Args, Debug)]
struct VerifyArgs {
    #[command(flatten)]
    placement: Placement,
    /// Also write what was checked to this file (JSON: the totals, then
    /// each node's destination, files, bytes, and the paths found missing
    /// or corrupt).
    #[arg(long)]
    report: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct PlanArgs {
    /// Dataset directory on the source file system.
    #[arg(long)]
    source: PathBuf,
    /// Manifest to use (default: SOURCE/manifest.json, or a scan of SOURCE if absent).
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// replicate | shard | per-node=N
    #[arg(long, default_value = "replicate")]
    policy: Policy,
    /// Seed of the per-node file choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Nodes to plan for.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Ranks per node.
    #[arg(long, default_value_t = 1)]
    ranks_per_node: usize,
    /// Print the full plan (every file's reader and destinations) as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    capacity: CapacityArgs,
}

/// A global shuffle over a sharded dataset under a per-node capacity
/// (`stager plan` and `stager simulate`).
#[derive(Args, Debug)]
struct CapacityArgs {
    /// Storage per node (e.g. 1.6TB): print what a global shuffle reads
    /// each epoch from the source, from other nodes and locally, with each
    /// file on one node (needs --policy shard).
    #[arg(long, value_parser = parse_bytes)]
    capacity: Option<u64>,
    /// Of --capacity, the room kept for other nodes' files, fetched ahead
    /// of need (default: a sixteenth of it, room for the prefetch window;
    /// more when the shard leaves more).
    #[arg(long, value_parser = parse_bytes, requires = "capacity")]
    cache: Option<u64>,
    /// Epochs to read.
    #[arg(long, default_value_t = 3, requires = "capacity")]
    epochs: u64,
    /// What a full cache gives up.
    #[arg(long, value_enum, default_value_t = EvictionArg::Furthest, requires = "capacity")]
    eviction: EvictionArg,
    /// The training seed (the loaders' shuffle).
    #[arg(long, default_value_t = 0, requires = "capacity")]
    shuffle_seed: u64,
    /// Samples per rank per step (each rank's share is cut to whole
    /// batches, as `stager serve --global-shuffle --batch` deals them).
    #[arg(long, default_value_t = 1, requires = "capacity")]
    batch: usize,
    /// Reads the fetcher runs ahead of the node's training ranks (`stager
    /// serve --window`): a file still to be read is never evicted, so a
    /// wide window in a small cache evicts more.
    #[arg(long, default_value_t = 16, requires = "capacity")]
    window: usize,
}

/// `--eviction` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EvictionArg {
    /// The file needed again last (the order is known in advance).
    Furthest,
    /// The file read longest ago.
    Lru,
}

impl EvictionArg {
    fn rule(self) -> stager::capacity::Eviction {
        match self {
            EvictionArg::Furthest => stager::capacity::Eviction::FurthestNextUse,
            EvictionArg::Lru => stager::capacity::Eviction::LeastRecentlyUsed,
        }
    }
}

impl CapacityArgs {
    /// The traffic under --capacity of `sizes`/`samples` sharded with
    /// `seed`, printed as a table (or returned for JSON), with the other
    /// rule's total for comparison.
    fn report(
        &self,
        (sizes, samples): (&[u64], &[usize]),
        (policy, seed): (Policy, u64),
        (nodes, ranks_per_node): (usize, usize),
    ) -> anyhow::Result<Option<(stager::traffic::TrafficReport, stager::traffic::TrafficReport)>> {
        use stager::capacity::Eviction;
        use stager::traffic::{GlobalShuffle, global_shuffle};
        let Some(capacity) = self.capacity else { return Ok(None) };
        anyhow::ensure!(
            policy == Policy::Shard,
            "--capacity models a global shuffle over a dataset with each file on one node: give --policy shard"
        );
        let cache = self.cache.unwrap_or(capacity / 16);
        anyhow::ensure!(cache <= capacity, "--cache {cache} is more than --capacity {capacity}");
        let (rule, other) = match self.eviction {
            EvictionArg::Furthest => (Eviction::FurthestNextUse, Eviction::LeastRecentlyUsed),
            EvictionArg::Lru => (Eviction::LeastRecentlyUsed, Eviction::FurthestNextUse),
        };
        let shuffle = GlobalShuffle {
            nodes,
            ranks_per_node,
            batch: self.batch,
            seed: self.shuffle_seed,
            epochs: self.epochs,
            capacity,
            cache,
            window: self.window,
            rule,
        };
        let chosen = global_shuffle(sizes, samples, seed, &shuffle)?;
        let compared = global_shuffle(sizes, samples, seed, &GlobalShuffle { rule: other, ..shuffle })?;
        Ok(Some((chosen, compared)))
    }
}

/// Print a traffic report and the other eviction rule's totals.
fn print_traffic(
    args: &CapacityArgs,
    (chosen, compared): &(stager::traffic::TrafficReport, stager::traffic::TrafficReport),
) {
    let other = match args.eviction {
        EvictionArg::Furthest => "LRU",
        EvictionArg::Lru => "furthest next use",
    };
    println!("{}", chosen.table());
    let ((source, peers), (other_source, other_peers)) = (chosen.fetched(), compared.fetched());
    println!(
        "fetched over {} epochs: source {} + peers {}; with {other} eviction: source {} + peers {}",
        chosen.epochs.len(),
        human_bytes(source as f64),
        human_bytes(peers as f64),
        human_bytes(other_source as f64),
        human_bytes(other_peers as f64)
    );
}

fn traffic_json(reports: &(stager::traffic::TrafficReport, stager::traffic::TrafficReport)) -> serde_json::Value {
    serde_json::json!({ "chosen": reports.0, "other_rule": reports.1 })
}

#[derive(Args, Debug)]
struct SimulateArgs {
    /// Nodes.
    #[arg(long)]
    nodes: usize,
    /// MPI ranks per node.
    #[arg(long, default_value_t = 1)]
    ranks_per_node: usize,
    /// Files in the dataset.
    #[arg(long)]
    files: usize,
    /// Size of each file (e.g. 64MiB); with --size-spread, the median size.
    #[arg(long, value_parser = parse_bytes)]
    file_size: u64,
    /// Spread of the file sizes: the standard deviation of their logarithm
    /// (0: equal files; 0.25: most within -22 % .. +28 % of the median).
    /// Sizes are drawn from --seed.
    #[arg(long, default_value_t = 0.0)]
    size_spread: f64,
    /// replicate | shard | per-node=N
    #[arg(long)]
    policy: Policy,
    /// Seed of the per-node file choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Aggregate bandwidth of the parallel file system (e.g. 2.5TB/s).
    #[arg(long, value_parser = parse_rate)]
    pfs_bw: f64,
    /// Network bandwidth per node, each direction (e.g. 23GB/s).
    #[arg(long, value_parser = parse_rate)]
    nic_bw: f64,
    /// Node-local write bandwidth (e.g. 2GB/s).
    #[arg(long, value_parser = parse_rate)]
    local_write_bw: f64,
    /// Read threads per rank.
    #[arg(long, default_value_t = 8)]
    read_threads: usize,
    /// Bandwidth one read thread gets from the file system.
    #[arg(long, value_parser = parse_rate, default_value = "1.5GB/s")]
    thread_bw: f64,
    /// Seconds one epoch of training takes alone: also predict training
    /// beside `stager serve` against staging first.
    #[arg(long)]
    epoch_secs: Option<f64>,
    /// Samples in each file (for --capacity).
    #[arg(long, default_value_t = 1)]
    samples_per_file: usize,
    #[command(flatten)]
    capacity: CapacityArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn main() {
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        cluster::logging::exit_on_usage(&e.render().to_string(), e.exit_code(), || drop(e.print()))
    });
    // Long loops of chunk buffers must not leave memory in the heap.
    cluster::allocator::map_large_blocks();
    let result = match cli.command {
        Command::Stage(args) => with_world(|world| stage(world, &args)),
        Command::Serve(args) => with_world(|world| serve(world, &args)),
        Command::Status(args) => status(&args),
        Command::Stop(args) => stop(&args),
        Command::Verify(args) => with_world(|world| verify(world, &args)),
        Command::Plan(args) => plan(&args),
        Command::Simulate(args) => simulate(&args),
    };
    if let Err(e) = result {
        cluster::logging::print_error(format_args!("{}", cluster::logging::chain(e.as_ref())));
        std::process::exit(1);
    }
}

fn plan(args: &PlanArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.nodes > 0 && args.ranks_per_node > 0, "--nodes and --ranks-per-node must be positive");
    let manifest = stager::source::load(&args.source, args.manifest.as_deref())?;
    let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
    let needs = stager::plan::node_needs(&sizes, &manifest.followers(), args.nodes, args.policy, args.seed)?;
    let node_of_rank: Vec<usize> = (0..args.nodes * args.ranks_per_node).map(|r| r / args.ranks_per_node).collect();
    let plan = Plan::build_from(&sizes, needs, &node_of_rank)?;
    let samples = manifest
        .files
        .iter()
        .map(|f| usize::try_from(f.samples).with_context(|| format!("{}: {} samples", f.path, f.samples)))
        .collect::<anyhow::Result<Vec<usize>>>()?;
    let traffic =
        args.capacity.report((&sizes, &samples), (args.policy, args.seed), (args.nodes, args.ranks_per_node))?;
    if args.json {
        let files: Vec<_> = manifest
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| serde_json::json!({ "path": f.path, "bytes": f.bytes, "reader": plan.reader(i), "nodes": plan.destinations(i).iter().collect::<Vec<_>>() }))
            .collect();
        let json = serde_json::json!({
            "policy": args.policy.to_string(), "seed": args.seed, "nodes": args.nodes, "ranks_per_node": args.ranks_per_node,
            "source_bytes": plan.source_bytes(), "moved_bytes": plan.moved_bytes(), "written_bytes": plan.written_bytes(),
            "read_bytes_per_rank": plan.read_bytes_per_rank(), "files": files,
            "capacity": traffic.as_ref().map(traffic_json),
        });
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    println!(
        "{} files, {} on {} nodes x {} ranks, policy {}",
        manifest.files.len(),
        human_bytes(manifest.total_bytes() as f64),
        args.nodes,
        args.ranks_per_node,
        args.policy
    );
    println!(
        "source reads {}   moved over MPI {}   written {}",
        human_bytes(plan.source_bytes() as f64),
        human_bytes(plan.moved_bytes() as f64),
        human_bytes(plan.written_bytes() as f64)
    );
    println!("{:>6} {:>6} {:>8} {:>12} {:>12}", "node", "rank", "reads", "read bytes", "node needs");
    let loads = plan.read_bytes_per_rank();
    let reads = plan.reads_per_rank();
    let needed: Vec<u64> = (0..args.nodes).map(|node| plan.needed_bytes(node)).collect();
    for (rank, load) in loads.iter().enumerate() {
        let node = plan.node_of(rank);
        println!(
            "{node:>6} {rank:>6} {:>8} {:>12} {:>12}",
            reads[rank],
            human_bytes(*load as f64),
            human_bytes(needed[node] as f64)
        );
    }
    if let Some(reports) = &traffic {
        println!();
        print_traffic(&args.capacity, reports);
    }
    Ok(())
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<()> {
    let machine = Machine {
        nodes: args.nodes,
        ranks_per_node: args.ranks_per_node,
        pfs_bw: args.pfs_bw,
        nic_bw: args.nic_bw,
        local_write_bw: args.local_write_bw,
        read_threads: args.read_threads,
        thread_bw: args.thread_bw,
    };
    let dataset = Dataset {
        files: args.files,
        file_size: args.file_size,
        size_spread: args.size_spread,
        policy: args.policy,
        seed: args.seed,
    };
    let p = predict(&machine, &dataset)?;
    let traffic = if args.capacity.capacity.is_some() {
        let sizes = stager::simulate::file_sizes(dataset.files, dataset.file_size, dataset.size_spread, dataset.seed);
        let samples = vec![args.samples_per_file; sizes.len()];
        args.capacity.report((&sizes, &samples), (args.policy, args.seed), (args.nodes, args.ranks_per_node))?
    } else {
        None
    };
    if let Some(epoch) = args.epoch_secs {
        anyhow::ensure!(epoch.is_finite() && epoch >= 0.0, "--epoch-secs must be a number of seconds >= 0");
    }
    let files = stager::simulate::node_file_count(args.policy, args.files, args.nodes);
    let serve = args.epoch_secs.map(|epoch| stager::simulate::overlap(p.staged.seconds, epoch, files));
    if args.json {
        let mut json = serde_json::to_value(&p)?;
        if let Some(serve) = serve {
            json["serve"] = serde_json::to_value(serve)?;
        }
        if let Some(reports) = &traffic {
            json["capacity"] = traffic_json(reports);
        }
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    for (name, e) in [("naive copy", &p.naive), ("stager plan", &p.staged)] {
        println!(
            "{name:<12} {:>9.1} s  bottleneck: {:<32} source reads {:>12} (amplification {:.2})  moved {:>12}",
            e.seconds,
            e.bottleneck,
            human_bytes(e.source_bytes as f64),
            e.read_amplification,
            human_bytes(e.moved_bytes as f64)
        );
    }
    println!("predicted speedup of the plan over the naive copy: {:.2}x", p.speedup);
    if let Some(o) = serve {
        println!(
            "stager serve beside training ({files} files per node): first batch after {:.1} s, first epoch done \
             after {:.1} s; staging first: {:.1} s ({:.2}x)",
            o.first_batch,
            o.overlapped,
            o.staged_first,
            o.staged_first / o.overlapped
        );
    }
    if let Some(reports) = &traffic {
        print_traffic(&args.capacity, reports);
    }
    Ok(())
}

/// Bring up MPI, run `f`; a failure prints one line and ends every rank.
fn with_world(f: impl FnOnce(&World) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let world = World::init()?;
    cluster::logging::init(world.topology(), None);
    if let Err(e) = f(&world) {
        // Errors returned here were agreed on by every rank, so all of them
        // get here. Another rank printed why a remote failure happened.
        let remote = matches!(e.downcast_ref::<StageError>(), Some(StageError::Remote(_)))
            || matches!(e.downcast_ref::<ServeError>(), Some(ServeError::Stage(StageError::Remote(_))))
            || matches!(e.downcast_ref::<stager::source::SourceError>(), Some(stager::source::SourceError::Remote));
        let speaks = !remote;
        world.exit_agreed(speaks, cluster::logging::chain(e.as_ref()));
    }
    Ok(())
}

fn stage(world: &World, args: &StageArgs) -> anyhow::Result<()> {
    let (manifest, config) = prepare(world, args)?;
    let outcome = stager::stage::stage(world, &manifest, &config)?;
    print_report(world, &outcome, &config, args)
}

/// The manifest (read once, shared) and the stage's configuration.
fn prepare(world: &World, args: &StageArgs) -> anyhow::Result<(formats::manifest::Manifest, StageConfig)> {
    let p = &args.placement;
    let manifest = stager::source::shared(world, &p.source, p.manifest.as_deref())?;
    let t = world.topology();
    stager::sigbus::exit_with_message_on_sigbus(&format!(
        "error: rank {} (node {}): a file under {} shrank while it was read through a map (SIGBUS); \
         rerun once it is complete (the rerun clears temporary files), or use --read-method read",
        t.rank,
        t.node,
        p.source.display()
    ))
    .context("installing the SIGBUS handler")?;
    let config = StageConfig {
        source: p.source.clone(),
        dest: p.dest.clone(),
        policy: p.policy,
        seed: p.seed,
        threads: args.threads.max(1),
        chunk_size: usize::try_from(args.chunk_size).unwrap_or(usize::MAX),
        max_inflight: args.max_inflight,
        naive: args.naive,
        source_bandwidth: args.source_bandwidth,
        read_method: args.read_method,
        recheck: args.recheck,
        order: Default::default(),
        kept: None,
    };
    Ok((manifest, config))
}

/// Rank 0 prints the JSON report (and writes it to --report).
fn print_report(
    world: &World,
    outcome: &stager::stage::StageOutcome,
    config: &StageConfig,
    args: &StageArgs,
) -> anyhow::Result<()> {
    print_report_with(world, outcome, config, args, None)
}

/// [`print_report`], with what a global shuffle fetched (`peers`).
fn print_report_with(
    world: &World,
    outcome: &stager::stage::StageOutcome,
    config: &StageConfig,
    args: &StageArgs,
    peers: Option<serde_json::Value>,
) -> anyhow::Result<()> {
    if world.is_root() {
        let report = report::build(outcome, config, world.size(), world.topology().nodes);
        let mut json = serde_json::to_value(&report)?;
        if let (Some(peers), Some(object)) = (peers, json.as_object_mut()) {
            object.insert("peers".into(), peers);
        }
        let text = serde_json::to_string_pretty(&json)?;
        println!("{text}");
        if let Some(path) = &args.report {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(())
}

fn serve(world: &World, args: &ServeArgs) -> anyhow::Result<()> {
    let (manifest, stage) = prepare(world, &args.stage)?;
    let config = ServeConfig {
        stage,
        train_ranks_per_node: args.train_ranks_per_node,
        train_under: args.train_under.clone(),
        global: args.global.config()?,
    };
    let served = stager::serve::serve(world, &manifest, &config)?;
    let peers = served.peers.as_ref().map(|per_node| serde_json::json!({ "per_node": per_node }));
    print_report_with(world, &served.outcome, &config.stage, &args.stage, peers)
}

fn service(dest: &std::path::Path, name: &str) -> anyhow::Result<formats::service::ServiceClient> {
    formats::service::ServiceClient::connect(dest, name)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no staging service serves {} (no {}); is `stager serve` running with this --dest?",
            dest.display(),
            formats::service::socket_path(dest).display()
        )
    })
}

fn status(args: &StatusArgs) -> anyhow::Result<()> {
    let json = service(&args.dest, "stager status")?.status()?;
    if args.json {
        println!("{json}");
        return Ok(());
    }
    let s: serde_json::Value = serde_json::from_str(&json).context("the service's status")?;
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let (bytes, ready) = (num(&s["bytes"]), num(&s["bytes_ready"]));
    println!(
        "{}: node {}, {}: {} of {} files, {} of {} ({:.0} %), {} files waited for now{}",
        args.dest.display(),
        s["node"],
        s["phase"].as_str().unwrap_or("?"),
        s["files_ready"],
        s["files"],
        human_bytes(ready),
        human_bytes(bytes),
        if bytes > 0.0 { 100.0 * ready / bytes } else { 100.0 },
        s["files_waited_for"],
        match s["eta_secs"].as_f64() {
            Some(eta) if ready < bytes => format!(", about {eta:.0} s left"),
            _ => String::new(),
        }
    );
    if let Some(error) = s["error"].as_str() {
        println!("  failed: {error}");
    }
    // Clients that never asked for a file (`stager status` itself) say nothing.
    let asked = |c: &&serde_json::Value| c["asked"].as_u64().unwrap_or(0) > 0 || c["waiting_for"].is_string();
    for c in s["clients"].as_array().into_iter().flatten().filter(asked) {
        println!(
            "  {}: waited for {} of {} files, {:.2} s in all{}",
            c["name"].as_str().unwrap_or("?"),
            c["waited"],
            c["asked"],
            num(&c["wait_secs"]),
            c["waiting_for"].as_str().map(|f| format!(", waiting for {f}")).unwrap_or_default()
        );
    }
    Ok(())
}

fn stop(args: &StopArgs) -> anyhow::Result<()> {
    service(&args.dest, "stager stop")?.stop()?;
    println!("asked the staging service of {} to stop", args.dest.display());
    Ok(())
}

fn verify(world: &World, verify_args: &VerifyArgs) -> anyhow::Result<()> {
    let args = &verify_args.placement;
    let manifest = stager::source::shared(world, &args.source, args.manifest.as_deref())?;
    let totals = stager::destination::verify::verify(world, &manifest, &args.dest, args.policy, args.seed)?;
    if world.is_root() {
        let json = serde_json::json!({ "ok": totals.ok, "missing": totals.missing, "corrupt": totals.corrupt });
        println!("{json}");
        if let Some(path) = &verify_args.report {
            let text = serde_json::to_string_pretty(&totals)?;
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    // Every rank fails alike; rank 0 says why, once.
    if !totals.all_ok() && !world.is_root() {
        return Err(StageError::Remote(0).into());
    }
    anyhow::ensure!(
        totals.all_ok(),
        "{} files missing and {} corrupt across the nodes; to repair, run `stager stage` with the same arguments{}",
        totals.missing,
        totals.corrupt,
        // Missing files and wrong sizes a plain rerun finds; a same-size
        // corrupt file needs the journal distrusted.
        if totals.corrupt > 0 { " and --recheck" } else { "" }
    );
    Ok(())
}
