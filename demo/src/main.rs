//! The demo's last step (`demo/run.sh`): read the JSON reports the demo's
//! commands wrote and print what was generated, staged and trained, and
//! where the pictures are.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use demo::{Reports, Run};

/// Summarise a demo run from its reports.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// cosmoflow, deepcam, etalumis, inverse, hepcnn or cosmogan.
    #[arg(long)]
    model: String,
    /// The demo's directory (simgen.json, train.json, stage.json if staged).
    #[arg(long)]
    dir: PathBuf,
    /// Ranks the demo ran on.
    #[arg(long)]
    ranks: usize,
    /// Pretend nodes.
    #[arg(long)]
    nodes: usize,
    /// Wall time of the whole demo, seconds.
    #[arg(long)]
    seconds: u64,
}

/// The PNG files under `dir`, shallowest first, each name once (staging
/// copies a dataset's previews onto every node).
fn pictures(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).with_context(|| format!("listing {}", at.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "png") {
                found.push(path);
            }
        }
    }
    found.sort_by_key(|p| (p.components().count(), p.clone()));
    let mut seen = std::collections::HashSet::new();
    found.retain(|p| seen.insert(p.file_name().map(|n| n.to_owned())));
    Ok(found)
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: the error and its causes (`{:#}`).
            eprintln!("demo-summary: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    let reports = Reports::read(&args.dir)?;
    let run = Run { model: &args.model, ranks: args.ranks, nodes: args.nodes, seconds: args.seconds, dir: &args.dir };
    print!("{}", reports.summary(&run, &pictures(&args.dir)?)?);
    Ok(())
}
