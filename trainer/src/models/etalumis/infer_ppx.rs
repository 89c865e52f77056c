//! `trainer infer --ppx ADDRESS`: Metropolis-Hastings on a simulator in
//! another process, driven over PPX (Baydin et al. 2019, Sec. IV-A): the
//! chains of [`rmh`](super::rmh) with `RemoteSimulator::run` as the
//! simulator, conditioned on held-out traces that `simgen traces --ppx`
//! recorded from the same simulator. The latents are whatever addresses
//! the user names (by default every controlled address all the held-out
//! traces share); each is summarised by its posterior mean and deviation,
//! split R-hat and effective sample size.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use simgen::random::mix;
use simgen::traces::executor::Recorded;
use simgen::traces::remote::RemoteSimulator;

use super::infer::read_held_out;
use super::infer_rmh::RmhSettings;
use super::mcmc_stats::{effective_samples, split_rhat};
use super::rmh::run_chain;
use crate::engine::TrainError;

/// Stream of the chains' seeds in [`mix`].
const STREAM: u64 = 43;

/// What `trainer infer --ppx` does.
#[derive(Debug, Clone)]
pub struct PpxInferConfig {
    /// Dataset directory of held-out traces of the simulator.
    pub observations: PathBuf,
    /// Observations to infer, spread evenly over the traces.
    pub count: usize,
    /// The latents' addresses (none: every controlled address the held-out
    /// traces share).
    pub latents: Vec<String>,
    /// The chains.
    pub rmh: RmhSettings,
    /// Seed of the chains.
    pub seed: u64,
    /// The tensor observation's noise, if not the simulator's own.
    pub noise: Option<f32>,
}

/// One latent's posterior.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatentPosterior {
    /// Its address.
    pub address: String,
    /// The value that made the observation.
    pub truth: f64,
    /// Posterior mean over every chain's kept states.
    pub mean: f64,
    /// Posterior deviation.
    pub std: f64,
    /// Split R-hat over the chains (Gelman et al., BDA3, Sec. 11.4).
    pub rhat: Option<f64>,
    /// Effective sample size over the chains.
    pub ess: Option<f64>,
}

/// One observation's chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpxInferred {
    /// The store holding the observation.
    pub store: PathBuf,
    /// Its index there.
    pub index: u64,
    /// Each latent's posterior.
    pub latents: Vec<LatentPosterior>,
    /// Chains run.
    pub chains: usize,
    /// Kept states per chain.
    pub draws_per_chain: usize,
    /// Share of candidates accepted.
    pub acceptance: f64,
    /// Seconds the chains took.
    pub seconds: f64,
    /// The rank that inferred it.
    #[serde(default)]
    pub rank: usize,
}

/// The held-out observations and the latents, read before MPI starts.
pub struct PpxPrepared {
    observations: Vec<(PathBuf, u64, Recorded)>,
    latents: Vec<String>,
}

fn controlled(run: &Recorded) -> impl Iterator<Item = &str> {
    run.choices.iter().filter(|c| c.controlled).map(|c| c.address.as_str())
}

impl PpxPrepared {
    /// Read the observations and check the latents: each must be a
    /// controlled address of every held-out trace.
    pub fn new(config: &PpxInferConfig) -> Result<PpxPrepared, TrainError> {
        if config.count == 0 {
            return Err(TrainError::Invalid("--count must be at least 1".into()));
        }
        let observations = read_held_out(&config.observations, config.count)?;
        let latents = if config.latents.is_empty() {
            let shared = observations.iter().skip(1).fold(
                controlled(&observations[0].2).map(str::to_owned).collect::<HashSet<String>>(),
                |acc, (_, _, run)| {
                    let theirs: HashSet<&str> = controlled(run).collect();
                    acc.into_iter().filter(|a| theirs.contains(a.as_str())).collect()
                },
            );
            // In the order the first trace made them.
            controlled(&observations[0].2).filter(|a| shared.contains(*a)).map(str::to_owned).collect()
        } else {
            config.latents.clone()
        };
        if latents.is_empty() {
            return Err(TrainError::Invalid("--observations: the held-out traces share no controlled address".into()));
        }
        for (store, index, run) in &observations {
            if let Some(missing) = latents.iter().find(|l| !controlled(run).any(|a| a == l.as_str())) {
                return Err(TrainError::Invalid(format!(
                    "--latents: trace {index} of {} has no controlled choice {missing}",
                    store.display()
                )));
            }
        }
        Ok(PpxPrepared { observations, latents })
    }

    /// Observations to infer.
    pub fn len(&self) -> usize {
        self.observations.len()
    }

    /// Whether there are none (never: [`PpxPrepared::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    /// The latents' addresses.
    pub fn latents(&self) -> &[String] {
        &self.latents
    }

    /// Run the chains of observations `indices` on `remote`; `progress`
    /// hears of each as it is done. An observation's seeds come from its
    /// index alone, so any split of the indices over ranks gives the same
    /// results.
    pub fn infer(
        &self,
        config: &PpxInferConfig,
        remote: &mut RemoteSimulator,
        indices: std::ops::Range<usize>,
        mut progress: impl FnMut(usize, &PpxInferred),
    ) -> Result<Vec<PpxInferred>, TrainError> {
        if config.rmh.chains == 0 {
            return Err(TrainError::Invalid("--chains must be at least 1".into()));
        }
        let values = |run: &Recorded| -> Result<Vec<f64>, String> {
            self.latents
                .iter()
                .map(|l| {
                    run.choices
                        .iter()
                        .find(|c| c.controlled && c.address == *l)
                        .map(|c| c.value)
                        .ok_or_else(|| format!("a state without the latent {l}"))
                })
                .collect()
        };
        let mut out = Vec::with_capacity(indices.len());
        for i in indices {
            let Some((store, index, held)) = self.observations.get(i) else { break };
            let started = std::time::Instant::now();
            let truth = values(held).map_err(TrainError::Data)?;
            let (mut chains, mut accepted, mut proposed) = (Vec::new(), 0, 0);
            for chain in 0..config.rmh.chains as u64 {
                let seeds = (mix(config.seed, i as u64, STREAM), chain);
                let mut simulate = |ex: &mut simgen::traces::executor::Executor<'_>| remote.run(ex);
                let run = run_chain(&mut simulate, (&held.observation, config.noise), config.rmh.chain, seeds, &values)
                    .map_err(|e| TrainError::Model(format!("Metropolis-Hastings chain {chain}: {e}")))?;
                accepted += run.accepted;
                proposed += run.proposed;
                chains.push(run.draws);
            }
            let latents = self
                .latents
                .iter()
                .enumerate()
                .map(|(k, address)| {
                    let per_chain: Vec<Vec<f64>> = chains.iter().map(|c| c.iter().map(|d| d[k]).collect()).collect();
                    let all: Vec<f64> = per_chain.concat();
                    let n = all.len().max(1) as f64;
                    let mean = all.iter().sum::<f64>() / n;
                    let std = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
                    LatentPosterior {
                        address: address.clone(),
                        truth: truth[k],
                        mean,
                        std,
                        rhat: split_rhat(&per_chain),
                        ess: effective_samples(&per_chain),
                    }
                })
                .collect();
            let inferred = PpxInferred {
                store: store.clone(),
                index: *index,
                latents,
                chains: chains.len(),
                draws_per_chain: chains.first().map_or(0, Vec::len),
                acceptance: accepted as f64 / proposed.max(1) as f64,
                seconds: started.elapsed().as_secs_f64(),
                rank: 0,
            };
            progress(i, &inferred);
            out.push(inferred);
        }
        Ok(out)
    }
}

/// The results as a table, a row per observation and latent: what
/// `trainer infer --ppx` prints.
pub fn table(results: &[PpxInferred]) -> String {
    let mut out = format!(
        "{:>3}  {:<32} {:>10} {:>22} {:>7} {:>8}\n",
        "obs", "latent", "truth", "posterior mean ± std", "R-hat", "ESS"
    );
    let or_dash = |v: Option<f64>, digits: usize| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"));
    for (i, r) in results.iter().enumerate() {
        for (k, l) in r.latents.iter().enumerate() {
            let obs = if k == 0 { i.to_string() } else { String::new() };
            out += &format!(
                "{obs:>3}  {:<32} {:>10.4} {:>12.4} ± {:<7.4} {:>7} {:>8}\n",
                l.address,
                l.truth,
                l.mean,
                l.std,
                or_dash(l.rhat, 3),
                or_dash(l.ess, 1)
            );
        }
    }
    if let Some(first) = results.first() {
        let n = results.len() as f64;
        let worst = results.iter().flat_map(|r| r.latents.iter().filter_map(|l| l.rhat)).fold(f64::NAN, f64::max);
        out += &format!(
            "Metropolis-Hastings over PPX, {} chains of {} kept states each: mean acceptance {:.3}, largest R-hat \
             {worst:.3}, {:.1} s per observation\n",
            first.chains,
            first.draws_per_chain,
            results.iter().map(|r| r.acceptance).sum::<f64>() / n,
            results.iter().map(|r| r.seconds).sum::<f64>() / n,
        );
    }
    out
}
