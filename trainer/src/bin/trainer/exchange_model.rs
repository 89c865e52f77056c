//! `trainer exchange-model`: the gradient exchange predicted at scale.

use clap::Args;
use cluster::World;
use trainer::models;

#[derive(Args, Debug)]
pub(crate) struct ExchangeModelArgs {
    /// The model whose gradients are exchanged (`trainer models`).
    #[arg(long, default_value = "cosmoflow")]
    pub(crate) model: String,
    /// Its configuration (default: the first `trainer models` lists).
    #[arg(long)]
    pub(crate) config: Option<String>,
    /// Bytes exchanged instead of a model's gradients.
    #[arg(long, conflicts_with_all = ["model", "config"], value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) bytes: Option<u64>,
    /// Nodes of the largest machine.
    #[arg(long, default_value_t = 4608, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    pub(crate) nodes: u64,
    /// Ranks (GPUs) per node.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) ranks_per_node: u64,
    /// Latency between two nodes, µs (about an InfiniBand EDR MPI
    /// message's).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) inter_latency_us: f64,
    /// Bandwidth out of a node, GB/s (Summit's node injection bandwidth,
    /// dual-rail EDR InfiniBand).
    #[arg(long, default_value_t = 23.0)]
    pub(crate) inter_gb_per_sec: f64,
    /// Latency between two ranks of a node, µs, instead of measuring it
    /// (with --intra-gb-per-sec; then one rank is enough).
    #[arg(long, requires = "intra_gb_per_sec")]
    pub(crate) intra_latency_us: Option<f64>,
    /// Bandwidth between two ranks of a node, GB/s, instead of measuring
    /// it (Summit's GPUs: NVLink 2, 50 GB/s each way between neighbours).
    #[arg(long, requires = "intra_latency_us")]
    pub(crate) intra_gb_per_sec: Option<f64>,
    /// Print the figures and predictions as JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `trainer exchange-model`'s bytes and what they are, its options checked.
pub(crate) fn exchanged_bytes(args: &ExchangeModelArgs) -> anyhow::Result<(f64, String)> {
    for (option, latency) in
        [("--inter-latency-us", Some(args.inter_latency_us)), ("--intra-latency-us", args.intra_latency_us)]
    {
        if let Some(latency) = latency {
            anyhow::ensure!(
                latency.is_finite() && latency >= 0.0,
                "{option} must be a number of microseconds, got {latency}"
            );
        }
    }
    for (option, bandwidth) in
        [("--inter-gb-per-sec", Some(args.inter_gb_per_sec)), ("--intra-gb-per-sec", args.intra_gb_per_sec)]
    {
        if let Some(bandwidth) = bandwidth {
            anyhow::ensure!(
                bandwidth.is_finite() && bandwidth > 0.0,
                "{option} must be a bandwidth above 0, got {bandwidth}"
            );
        }
    }
    Ok(match args.bytes {
        Some(bytes) => (bytes as f64, "given".to_owned()),
        None => {
            let entry = models::find(&args.model)?;
            let config = args.config.clone().unwrap_or_else(|| entry.configs[0].to_owned());
            let (parameters, _) = entry.build_default(&config)?.sizes()?;
            (4.0 * parameters as f64, format!("{}/{config} gradients, f32", args.model))
        }
    })
}

/// `trainer exchange-model`: measure the link between ranks 0 and 1 and
/// the summing speed, then print the predictions on rank 0. Collective.
pub(crate) fn exchange_model(
    world: &World,
    args: &ExchangeModelArgs,
    (bytes, what): (f64, String),
) -> anyhow::Result<()> {
    use trainer::exchange_model::{Link, Machine, measure};
    let machine = Machine {
        nodes: args.nodes as usize,
        ranks_per_node: args.ranks_per_node as usize,
        intra: match (args.intra_latency_us, args.intra_gb_per_sec) {
            (Some(latency), Some(bandwidth)) => Link::new(latency * 1e-6, bandwidth * 1e9),
            _ => measure::link(world),
        },
        inter: Link::new(args.inter_latency_us * 1e-6, args.inter_gb_per_sec * 1e9),
        reduce_secs_per_byte: measure::reduce_secs_per_byte(world),
    };
    if world.is_root() {
        if args.json {
            let predictions: Vec<_> = trainer::exchange_model::scales(machine.nodes)
                .into_iter()
                .map(|nodes| Machine { nodes, ..machine }.predict(bytes))
                .collect();
            let json =
                serde_json::json!({ "bytes": bytes, "what": what, "machine": machine, "predictions": predictions });
            println!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            print!("{}", trainer::exchange_model::table(&machine, bytes, &what));
        }
    }
    Ok(())
}
