//! `stager`: stage a dataset into node-local storage, or plan and simulate it.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use formats::manifest::{self, MANIFEST_FILE, Manifest, ScanOptions, Schema};
use formats::placement::{Policy, files_per_node};
use stager::plan::Plan;
use stager::simulate::{Dataset, Machine, predict};
use stager::units::{human_bytes, parse_bytes, parse_rate};

/// Stage datasets from the parallel file system into node-local storage.
///
/// Today: `plan` shows who would read and receive what, and `simulate`
/// predicts staging times at any scale. `stage` (the MPI copy) is being built.
#[derive(Parser, Debug)]
#[command(version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the staging plan for a dataset on a given topology (no I/O besides the manifest).
    Plan(PlanArgs),
    /// Predict staging times of the plan and of the naive copy at any scale.
    Simulate(SimulateArgs),
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
    /// Size of each file (e.g. 64MiB).
    #[arg(long, value_parser = parse_bytes)]
    file_size: u64,
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
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => plan(&args),
        Command::Simulate(args) => simulate(&args),
    };
    if let Err(e) = result {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn load_manifest(source: &std::path::Path, manifest: Option<&std::path::Path>) -> anyhow::Result<Manifest> {
    let path = manifest.map_or_else(|| source.join(MANIFEST_FILE), std::path::Path::to_path_buf);
    if manifest.is_some() || path.exists() {
        return Manifest::load(&path).with_context(|| format!("loading manifest {}", path.display()));
    }
    eprintln!("no {} in {}: scanning it", MANIFEST_FILE, source.display());
    Ok(manifest::scan(source, &ScanOptions::new(Schema::opaque()))?)
}

fn plan(args: &PlanArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.nodes > 0 && args.ranks_per_node > 0, "--nodes and --ranks-per-node must be positive");
    let manifest = load_manifest(&args.source, args.manifest.as_deref())?;
    let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
    let needs = files_per_node(&sizes, args.nodes, args.policy, args.seed)?;
    let node_of_rank: Vec<usize> = (0..args.nodes * args.ranks_per_node).map(|r| r / args.ranks_per_node).collect();
    let plan = Plan::build(&sizes, &needs, &node_of_rank)?;
    if args.json {
        let files: Vec<_> = manifest
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| serde_json::json!({ "path": f.path, "bytes": f.bytes, "reader": plan.reader(i), "nodes": plan.destinations(i) }))
            .collect();
        let json = serde_json::json!({
            "policy": args.policy.to_string(), "seed": args.seed, "nodes": args.nodes, "ranks_per_node": args.ranks_per_node,
            "source_bytes": plan.source_bytes(), "moved_bytes": plan.moved_bytes(), "written_bytes": plan.written_bytes(),
            "read_bytes_per_rank": plan.read_bytes_per_rank(), "files": files,
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
    for (rank, load) in loads.iter().enumerate() {
        let node = plan.node_of(rank);
        let needs_bytes: u64 = plan.needs(node).iter().map(|&f| sizes[f]).sum();
        println!(
            "{node:>6} {rank:>6} {:>8} {:>12} {:>12}",
            plan.reads(rank).len(),
            human_bytes(*load as f64),
            human_bytes(needs_bytes as f64)
        );
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
    let dataset = Dataset { files: args.files, file_size: args.file_size, policy: args.policy, seed: args.seed };
    let p = predict(&machine, &dataset)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
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
    Ok(())
}
