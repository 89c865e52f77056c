//! `simgen ppx-serve`: the built-in tau simulator offered over PPX, for
//! pyprob's `RemoteModel` or `simgen traces --ppx` / `trainer infer --ppx`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use simgen::traces::calorimeter::NOISE_GEV;
use simgen::traces::executor::Recorded;
use simgen::traces::serve::{ServeConfig, serve};

use super::multislice::Usage;

#[derive(Args, Debug)]
pub struct PpxServeArgs {
    /// ZeroMQ address to listen at: `tcp://*:5555`, `tcp://127.0.0.1:*`
    /// (a free port; the address taken is printed), `ipc:///tmp/tau`.
    #[arg(long, default_value = "tcp://127.0.0.1:5555")]
    address: String,
    /// Seed of the calorimeter noise (the system picks every other choice).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The calorimeter's electronic noise per voxel, GeV.
    #[arg(long, default_value_t = NOISE_GEV)]
    noise: f32,
    /// Seconds a system may take to answer within a run before the run is
    /// abandoned (the server goes on serving).
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    timeout: f64,
    /// Exit after this many completed runs. Default: serve until killed.
    #[arg(long)]
    runs: Option<u64>,
    /// Append every completed run to this file as one JSON line: its
    /// choices (address, value, log probability, controlled), the
    /// observation's address and the log likelihood.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

pub fn run(args: &PpxServeArgs) -> anyhow::Result<()> {
    if !(args.noise.is_finite() && args.noise > 0.0) {
        return Err(Usage(format!("--noise must be a positive number of GeV, got {}", args.noise)).into());
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(Usage(format!("--timeout must be a positive number of seconds, got {}", args.timeout)).into());
    }
    let mut replier = ppx::Replier::bind(&args.address)?;
    let mut log = match &args.log {
        None => None,
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("opening {}", path.display()))?,
        )),
    };
    eprintln!("simgen ppx-serve: serving the tau simulator over PPX at {}", replier.endpoint()?);
    let config = ServeConfig {
        seed: args.seed,
        noise: args.noise,
        timeout: Duration::from_secs_f64(args.timeout),
        runs: args.runs,
    };
    let mut log_error = None;
    let on_run = |i: u64, run: &Recorded| {
        if let Some(log) = &mut log
            && log_error.is_none()
            && let Err(e) = writeln!(log, "{}", log_line(i, run)).and_then(|()| log.flush())
        {
            log_error = Some(e);
        }
    };
    let on_abandoned = |e: &simgen::traces::executor::RunError| eprintln!("simgen ppx-serve: run abandoned: {e}");
    let served = serve(&mut replier, &config, on_run, on_abandoned)?;
    if let Some(e) = log_error {
        return Err(e).context("writing --log");
    }
    eprintln!("simgen ppx-serve: {} runs served, {} abandoned", served.runs, served.abandoned);
    Ok(())
}

fn log_line(index: u64, run: &Recorded) -> serde_json::Value {
    let choices: Vec<_> = run
        .choices
        .iter()
        .map(|c| {
            serde_json::json!({
                "address": c.address,
                "value": c.value,
                "log_prob": c.log_prior,
                "controlled": c.controlled,
            })
        })
        .collect();
    serde_json::json!({
        "run": index,
        "choices": choices,
        "observation_address": run.observation_address,
        "observation_shape": run.observation_shape,
        "log_likelihood": run.log_likelihood,
    })
}
