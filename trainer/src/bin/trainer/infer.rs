//! `trainer infer`: inference with a trained Etalumis network, or
//! Metropolis-Hastings chains, over held-out observations.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use cluster::World;

/// `trainer infer`: for each held-out observation, --samples runs of the
/// simulator (`simgen traces`' tau decay) conditioned on it, with the
/// trained network proposing every latent choice, weighted by prior ×
/// likelihood / proposal; then the same with the prior as proposal. Or
/// (--engine rmh) chains of lightweight Metropolis-Hastings over the
/// simulator's traces, no network, with their R-hat and effective sample
/// sizes; or both, and how far each importance-sampled posterior lies from
/// the chains'. Prints the effective sample size and the posterior of the
/// decay channel and the tau's momentum against the values that made the
/// observation.
#[derive(Args, Debug)]
pub(crate) struct InferArgs {
    /// The trained model (only etalumis has proposals).
    #[arg(long, default_value = "etalumis")]
    pub(crate) model: String,
    /// is: importance sampling with the network (and with the prior);
    /// rmh: Metropolis-Hastings chains (no --checkpoint needed); both.
    #[arg(long, value_enum, default_value = "is")]
    pub(crate) engine: infer_engine::Engine,
    /// Checkpoint directory of `trainer train --model etalumis` (its latest
    /// checkpoint); --engine is and both need it.
    #[arg(long)]
    pub(crate) checkpoint: Option<PathBuf>,
    /// Metropolis-Hastings chains per observation (R-hat needs two at least).
    #[arg(long, default_value_t = 4)]
    pub(crate) chains: usize,
    /// Steps of each chain, one candidate each.
    #[arg(long, default_value_t = 2000)]
    pub(crate) steps: usize,
    /// Steps discarded at the start of each chain.
    #[arg(long, default_value_t = 500)]
    pub(crate) burn_in: usize,
    /// Keep every N-th state of a chain after the burn-in.
    #[arg(long, default_value_t = 1)]
    pub(crate) thin: usize,
    /// Held-out traces: a `simgen traces --out` directory (manifest.json and trace stores).
    #[arg(long)]
    pub(crate) observations: PathBuf,
    /// Infer on a simulator that speaks PPX (pyprob's protocol) at this
    /// ZeroMQ address instead of the built-in tau simulator, conditioned on
    /// --observations recorded from it (`simgen traces --ppx`). Importance
    /// sampling takes a --checkpoint trained on that simulator's traces.
    /// Several ranks: put `{rank}` in the address, one
    /// simulator per rank.
    #[arg(long, value_name = "ADDRESS")]
    pub(crate) ppx: Option<String>,
    /// Seconds a PPX simulator may take to answer before inference fails.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub(crate) ppx_timeout: f64,
    /// With --ppx: the latents to report, by address (`mu__Normal__1`),
    /// comma-separated. Default: every controlled address the observations'
    /// traces share.
    #[arg(long, value_delimiter = ',', value_name = "ADDRESSES")]
    pub(crate) latents: Vec<String>,
    /// Importance samples per observation, for each proposal.
    #[arg(long, default_value_t = 100)]
    pub(crate) samples: usize,
    /// Observations to infer, spread evenly over the stores' traces (all if fewer).
    #[arg(long, default_value_t = 10)]
    pub(crate) count: usize,
    /// Seed of the simulator runs.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// The calorimeter's noise per voxel, GeV, the observations were
    /// simulated with (`simgen traces --noise`; default 0.002, simgen's).
    /// The likelihood scores them with it. A larger value than the data's
    /// gives an approximate (ABC-style) posterior; train on data with the
    /// noise you infer with, or the proposals will be too narrow for it.
    /// With --ppx: replaces the deviation the simulator states for its
    /// tensor observation (default: the simulator's own).
    #[arg(long)]
    pub(crate) noise: Option<f32>,
    /// Write the results as JSON here.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
}

use trainer::models::etalumis::infer as infer_engine;
use trainer::models::etalumis::infer_ppx;

/// The Metropolis-Hastings chains `args` ask for.
fn rmh_settings(args: &InferArgs) -> trainer::models::etalumis::infer_rmh::RmhSettings {
    trainer::models::etalumis::infer_rmh::RmhSettings {
        chains: args.chains,
        chain: trainer::models::etalumis::rmh::ChainConfig {
            steps: args.steps,
            burn_in: args.burn_in,
            thin: args.thin,
        },
    }
}

/// `trainer infer`'s configuration, checked, with the network and the
/// observations loaded: everything that can fail on bad input, before MPI.
pub(crate) fn prepare_infer(args: &InferArgs) -> anyhow::Result<(infer_engine::InferConfig, infer_engine::Prepared)> {
    anyhow::ensure!(
        args.model == "etalumis",
        "--model {}: only etalumis proposes latents; infer takes etalumis",
        args.model
    );
    let config = infer_engine::InferConfig {
        engine: args.engine,
        checkpoint: args.checkpoint.clone(),
        rmh: rmh_settings(args),
        observations: args.observations.clone(),
        count: args.count,
        samples: args.samples,
        seed: args.seed,
        noise: args.noise.unwrap_or(simgen::traces::calorimeter::NOISE_GEV),
    };
    let prepared = infer_engine::Prepared::new(&config)?;
    Ok((config, prepared))
}

/// `trainer infer --ppx`'s configuration, checked, with the observations
/// read: before MPI, as [`prepare_infer`].
pub(crate) fn prepare_infer_ppx(
    args: &InferArgs,
) -> anyhow::Result<(infer_ppx::PpxInferConfig, infer_ppx::PpxPrepared)> {
    anyhow::ensure!(
        args.ppx_timeout.is_finite() && args.ppx_timeout > 0.0,
        "--ppx-timeout must be a positive number of seconds, got {}",
        args.ppx_timeout
    );
    if let Some(noise) = args.noise {
        anyhow::ensure!(noise.is_finite() && noise > 0.0, "--noise must be a positive number, got {noise}");
    }
    let config = infer_ppx::PpxInferConfig {
        engine: args.engine,
        checkpoint: args.checkpoint.clone(),
        samples: args.samples,
        observations: args.observations.clone(),
        count: args.count,
        latents: args.latents.clone(),
        rmh: rmh_settings(args),
        seed: args.seed,
        noise: args.noise,
    };
    let prepared = infer_ppx::PpxPrepared::new(&config)?;
    Ok((config, prepared))
}

/// `trainer infer --ppx` on this rank's share of the observations, gathered
/// on rank 0 as [`infer`] does.
pub(crate) fn infer_over_ppx(
    world: &World,
    args: &InferArgs,
    config: &infer_ppx::PpxInferConfig,
    prepared: &infer_ppx::PpxPrepared,
) -> anyhow::Result<()> {
    let (rank, size, n) = (world.rank(), world.size(), prepared.len());
    let template = args.ppx.as_deref().unwrap_or_default();
    let address = simgen::traces::remote::rank_address(template, rank, size).map_err(anyhow::Error::msg)?;
    let mut remote = simgen::traces::remote::RemoteSimulator::connect(
        &address,
        std::time::Duration::from_secs_f64(args.ppx_timeout),
    )
    .with_context(|| format!("--ppx {address}"))?;
    let mine = rank * n / size..(rank + 1) * n / size;
    let results = prepared.infer(config, &mut remote, mine, |i, r| {
        let on = if size > 1 { format!(" (rank {rank})") } else { String::new() };
        let mut done = Vec::new();
        if let Some(n) = &r.network {
            done.push(format!("importance sampling ESS {:.1}", n.ess));
        }
        if let Some(c) = &r.rmh {
            let worst = c.latents.iter().filter_map(|l| l.rhat).fold(f64::NAN, f64::max);
            done.push(format!("Metropolis-Hastings acceptance {:.3}, largest R-hat {worst:.3}", c.acceptance));
        }
        eprintln!("observation {}{on} over PPX: {}", i + 1, done.join("; "));
    })?;
    let Some(all) = gather_on_root(world, &results, |r, from| r.rank = from)? else { return Ok(()) };
    println!("simulator: {} ({}) at {template}", remote.model_name, remote.system_name);
    print!("{}", infer_ppx::table(&all));
    finish_infer(args, &all, n, size)
}

/// Every rank's `results` on rank 0 (`None` elsewhere), each stamped with
/// the rank that made it.
fn gather_on_root<T: serde::Serialize + serde::de::DeserializeOwned>(
    world: &World,
    results: &[T],
    stamp: impl Fn(&mut T, usize),
) -> anyhow::Result<Option<Vec<T>>> {
    let gathered = world.all_gather_bytes(&serde_json::to_vec(results)?);
    if world.rank() != 0 {
        return Ok(None);
    }
    let mut all = Vec::new();
    for (from, bytes) in gathered.iter().enumerate() {
        let mut theirs: Vec<T> =
            serde_json::from_slice(bytes).with_context(|| format!("the results rank {from} sent"))?;
        for r in &mut theirs {
            stamp(r, from);
        }
        all.extend(theirs);
    }
    Ok(Some(all))
}

/// What rank 0 ends `trainer infer` with: how the `n` observations were
/// split over `size` ranks, and the report.
fn finish_infer<T: serde::Serialize>(args: &InferArgs, all: &[T], n: usize, size: usize) -> anyhow::Result<()> {
    if size > 1 {
        let counts: Vec<String> = (0..size).map(|r| (r * n / size..(r + 1) * n / size).len().to_string()).collect();
        println!("observations per rank: {}", counts.join(", "));
    }
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(all)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Infer this rank's share of the observations (a contiguous block; the
/// results do not depend on the split), gather every rank's on rank 0, which
/// prints the table and writes the report.
pub(crate) fn infer(
    world: &World,
    args: &InferArgs,
    config: &infer_engine::InferConfig,
    prepared: &infer_engine::Prepared,
) -> anyhow::Result<()> {
    let (rank, size, n) = (world.rank(), world.size(), prepared.len());
    let mine = rank * n / size..(rank + 1) * n / size;
    let results = prepared.infer(config, mine, |i, r| {
        let mut line = format!("observation {}", i + 1);
        if size > 1 {
            line += &format!(" (rank {rank})");
        }
        line += ":";
        if let (Some(network), Some(prior)) = (&r.network, &r.prior) {
            line += &format!(" ESS {:.2} with the network, {:.2} with the prior", network.ess, prior.ess);
        }
        if let Some(rmh) = &r.rmh {
            let worst = rmh.rhat.iter().flatten().copied().fold(f64::NAN, f64::max);
            line += &format!(
                " Metropolis-Hastings ESS {:.1}, acceptance {:.3}, largest R-hat {worst:.3}",
                rmh.posterior.ess, rmh.acceptance
            );
        }
        eprintln!("{line}");
    })?;
    let Some(all) = gather_on_root(world, &results, |r, from| r.rank = from)? else { return Ok(()) };
    print!("{}", infer_engine::table(&all, args.samples));
    finish_infer(args, &all, n, size)
}
