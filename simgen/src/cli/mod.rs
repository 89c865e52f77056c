//! The `simgen` subcommands that have outgrown `main.rs`, and what every
//! generator's command line shares.
pub mod climate;
pub mod jets;
pub mod massmaps;
pub mod multislice;
pub mod ppx_serve;
pub mod preview;
pub mod traces;
pub mod traces_preview;

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use cluster::World;
use mpi::traits::*;
use simgen::output::OutputDir;

/// Where a generator writes and reports: the same flags on every generator.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Output directory; may be a node-local template (`/tmp/bb/node{node}`, `$TMPDIR/data`).
    #[arg(long)]
    pub out: String,
    /// Generate into a directory that is not empty: first remove the files
    /// its manifest lists (an earlier run's). Without it, a non-empty
    /// output directory is refused, so a manifest never lists stale files.
    #[arg(long)]
    pub overwrite: bool,
    /// Also write the JSON report here (it always goes to stdout).
    #[arg(long)]
    pub report: Option<PathBuf>,
}

impl OutputArgs {
    /// Expand `--out` for this rank and claim the directory.
    pub fn claim(&self, world: &World) -> anyhow::Result<(PathBuf, OutputDir)> {
        let out = cluster::paths::expand(&self.out, &world.topology().path_vars())
            .with_context(|| format!("expanding --out {}", self.out))?;
        let dir = OutputDir::claim(world, &out, self.overwrite);
        Ok((out, dir))
    }

    /// Print the report, and write it to `--report` if given.
    pub fn write_report(&self, json: &serde_json::Value) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(json)?;
        println!("{text}");
        if let Some(path) = &self.report {
            std::fs::write(path, &text).with_context(|| format!("writing report {}", path.display()))?;
        }
        Ok(())
    }
}

/// The same figures from every rank (counts, seconds, bytes), gathered at
/// the root for a generator's report.
pub struct RankFigures {
    all: Vec<f64>,
    fields: usize,
}

impl RankFigures {
    /// Gather `mine` from every rank; collective. `None` except on the root.
    pub fn gather(world: &World, mine: &[f64]) -> Option<RankFigures> {
        let mut all = vec![0f64; mine.len() * world.size()];
        world.comm().all_gather_into(mine, &mut all[..]);
        world.is_root().then_some(RankFigures { all, fields: mine.len() })
    }

    /// Figure `i` summed over the ranks.
    pub fn sum(&self, i: usize) -> f64 {
        self.all.iter().skip(i).step_by(self.fields).sum()
    }

    /// The largest rank's figure `i`.
    pub fn max(&self, i: usize) -> f64 {
        self.all.iter().skip(i).step_by(self.fields).fold(f64::MIN, |a, &b| a.max(b))
    }
}
