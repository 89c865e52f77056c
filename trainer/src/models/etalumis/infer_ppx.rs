//! `trainer infer --ppx ADDRESS`: inference on a simulator in another
//! process, driven over PPX (Baydin et al. 2019, Sec. IV-A), conditioned on
//! held-out traces that `simgen traces --ppx` recorded from the same
//! simulator. Two engines, as for the built-in simulator: the
//! Metropolis-Hastings chains of [`rmh`](super::rmh), and importance
//! sampling with a network trained on that simulator's traces
//! ([`guide`](super::guide); inference compilation). The latents are
//! whatever addresses the user names (by default every controlled address
//! all the held-out traces share); each is summarised by its posterior mean
//! and deviation, the chains' by split R-hat and effective sample size too.
//! With both engines, each latent's distance is |mean_IS − mean_RMH| /
//! std_RMH: how many of the chains' posterior deviations the network's
//! posterior mean lies from theirs.

use std::collections::HashSet;
use std::path::PathBuf;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use simgen::random::mix;
use simgen::traces::executor::{Executor, Mode, Recorded};
use simgen::traces::remote::RemoteSimulator;

use super::infer::{Engine, Loaded, embed_observation, normalized_weights, read_held_out};
use super::infer_rmh::RmhSettings;
use super::mcmc_stats::{effective_samples, split_rhat};
use super::rmh::run_chain;
use crate::engine::TrainError;

/// Streams of [`mix`]: the chains' seeds and the importance samples'.
const STREAM: u64 = 43;
const IMPORTANCE_STREAM: u64 = 44;

/// What `trainer infer --ppx` does.
#[derive(Debug, Clone)]
pub struct PpxInferConfig {
    /// Which inference.
    pub engine: Engine,
    /// Checkpoint directory of a network trained on the simulator's traces
    /// (importance sampling needs one).
    pub checkpoint: Option<PathBuf>,
    /// Dataset directory of held-out traces of the simulator.
    pub observations: PathBuf,
    /// Observations to infer, spread evenly over the traces.
    pub count: usize,
    /// The latents' addresses (none: every controlled address the held-out
    /// traces share).
    pub latents: Vec<String>,
    /// The chains.
    pub rmh: RmhSettings,
    /// Importance samples per observation.
    pub samples: usize,
    /// Seed of the chains and samples.
    pub seed: u64,
    /// The tensor observation's noise, if not the simulator's own.
    pub noise: Option<f32>,
}

/// A latent's posterior mean and deviation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// Posterior mean.
    pub mean: f64,
    /// Posterior deviation.
    pub std: f64,
}

/// One latent's posterior by the chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainLatent {
    /// Mean over every chain's kept states.
    pub mean: f64,
    /// Deviation over them.
    pub std: f64,
    /// Split R-hat over the chains (Gelman et al., BDA3, Sec. 11.4).
    pub rhat: Option<f64>,
    /// Effective sample size over the chains.
    pub ess: Option<f64>,
}

/// One observation's Metropolis-Hastings chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainsPosterior {
    /// Per latent, in the order of [`PpxInferred::latents`].
    pub latents: Vec<ChainLatent>,
    /// Chains run.
    pub chains: usize,
    /// Kept states per chain.
    pub draws_per_chain: usize,
    /// Share of candidates accepted.
    pub acceptance: f64,
    /// Seconds the chains took.
    pub seconds: f64,
}

/// One observation's importance sampling with the network's proposals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedPosterior {
    /// Per latent, in the order of [`PpxInferred::latents`].
    pub latents: Vec<Moments>,
    /// Effective sample size, (Σw)² / Σw² (Kong 1992).
    pub ess: f64,
    /// Samples drawn.
    pub samples: usize,
    /// Choices proposed from the prior because the network had no layers
    /// for their address.
    pub from_prior: usize,
    /// Seconds the runs took.
    pub seconds: f64,
}

/// One observation's inference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpxInferred {
    /// The store holding the observation.
    pub store: PathBuf,
    /// Its index there.
    pub index: u64,
    /// The latents' addresses.
    pub latents: Vec<String>,
    /// The values that made the observation, per latent.
    pub truth: Vec<f64>,
    /// By importance sampling with the network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<WeightedPosterior>,
    /// By Metropolis-Hastings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rmh: Option<ChainsPosterior>,
    /// With both: |mean_IS − mean_RMH| / std_RMH per latent (`null` where
    /// the chains' deviation is 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<Vec<Option<f64>>>,
    /// The rank that inferred it.
    #[serde(default)]
    pub rank: usize,
}

/// The weighted mean and deviation of each column of `rows` under log
/// weights `log_weights`, and the weights' effective sample size; an error
/// when no weight is finite.
fn weighted(log_weights: &[f64], rows: &[Vec<f64>]) -> Result<(f64, Vec<Moments>), String> {
    let (shares, ess) = normalized_weights(log_weights)?;
    let columns = rows.first().map_or(0, Vec::len);
    let moments = (0..columns)
        .map(|k| {
            let mean = shares.iter().zip(rows).map(|(p, r)| p * r[k]).sum::<f64>();
            let var = shares.iter().zip(rows).map(|(p, r)| p * (r[k] - mean).powi(2)).sum::<f64>();
            Moments { mean, std: var.sqrt() }
        })
        .collect();
    Ok((ess, moments))
}

/// The held-out observations and the latents, read before MPI starts.
pub struct PpxPrepared {
    observations: Vec<(PathBuf, u64, Recorded)>,
    latents: Vec<String>,
    network: Option<Loaded>,
    device: Device,
}

fn controlled(run: &Recorded) -> impl Iterator<Item = &str> {
    run.choices.iter().filter(|c| c.controlled).map(|c| c.address.as_str())
}

impl PpxPrepared {
    /// Read the observations, check the latents (each must be a
    /// controlled address of every held-out trace) and load the network.
    pub fn new(config: &PpxInferConfig) -> Result<PpxPrepared, TrainError> {
        if config.count == 0 || config.samples == 0 {
            return Err(TrainError::Invalid("--count and --samples must be at least 1".into()));
        }
        if config.engine.chains() && config.rmh.chains == 0 {
            return Err(TrainError::Invalid("--chains must be at least 1".into()));
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
        let device = Device::flex();
        let network = match (config.engine.importance(), &config.checkpoint) {
            (false, _) => None,
            (true, None) => {
                return Err(TrainError::Invalid("importance sampling (--engine is or both) needs --checkpoint".into()));
            }
            (true, Some(dir)) => Some(Loaded::new(dir, &device)?),
        };
        if let Some(loaded) = &network {
            let trained = &loaded.saved.data.observation;
            if let Some((store, index, run)) = observations.iter().find(|(_, _, r)| r.observation_shape != *trained) {
                return Err(TrainError::Data(format!(
                    "--observations: trace {index} of {} observes {:?}; the network was trained on {trained:?}",
                    store.display(),
                    run.observation_shape
                )));
            }
        }
        Ok(PpxPrepared { observations, latents, network, device })
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

    /// Infer observations `indices` on `remote` by the engines
    /// `config.engine` names; `progress` hears of each as it is done. An
    /// observation's seeds come from its index alone, so any split of the
    /// indices over ranks gives the same results.
    pub fn infer(
        &self,
        config: &PpxInferConfig,
        remote: &mut RemoteSimulator,
        indices: std::ops::Range<usize>,
        mut progress: impl FnMut(usize, &PpxInferred),
    ) -> Result<Vec<PpxInferred>, TrainError> {
        let mut out = Vec::with_capacity(indices.len());
        for i in indices {
            let Some((store, index, held)) = self.observations.get(i) else { break };
            let truth = self.values(held).map_err(TrainError::Data)?;
            let network = match &self.network {
                Some(loaded) => Some(self.importance(config, loaded, remote, held, i)?),
                None => None,
            };
            let rmh = if config.engine.chains() { Some(self.chains(config, remote, held, i)?) } else { None };
            let distance = network.as_ref().zip(rmh.as_ref()).map(|(n, r)| {
                n.latents
                    .iter()
                    .zip(&r.latents)
                    .map(|(n, r)| (r.std > 0.0).then(|| (n.mean - r.mean).abs() / r.std))
                    .collect()
            });
            let inferred = PpxInferred {
                store: store.clone(),
                index: *index,
                latents: self.latents.clone(),
                truth,
                network,
                rmh,
                distance,
                rank: 0,
            };
            progress(i, &inferred);
            out.push(inferred);
        }
        Ok(out)
    }

    /// The latents' values in a run.
    fn values(&self, run: &Recorded) -> Result<Vec<f64>, String> {
        self.latents
            .iter()
            .map(|l| {
                run.choices
                    .iter()
                    .find(|c| c.controlled && c.address == *l)
                    .map(|c| c.value)
                    .ok_or_else(|| format!("a run without the latent {l}"))
            })
            .collect()
    }

    /// Observation `i`'s Metropolis-Hastings chains.
    fn chains(
        &self,
        config: &PpxInferConfig,
        remote: &mut RemoteSimulator,
        held: &Recorded,
        i: usize,
    ) -> Result<ChainsPosterior, TrainError> {
        let started = std::time::Instant::now();
        let values = |run: &Recorded| self.values(run);
        let (mut chains, mut accepted, mut proposed) = (Vec::new(), 0, 0);
        for chain in 0..config.rmh.chains as u64 {
            let seeds = (mix(config.seed, i as u64, STREAM), chain);
            let mut simulate = |ex: &mut Executor<'_>| remote.run(ex);
            let run = run_chain(&mut simulate, (&held.observation, config.noise), config.rmh.chain, seeds, &values)
                .map_err(|e| TrainError::Model(format!("Metropolis-Hastings chain {chain}: {e}")))?;
            accepted += run.accepted;
            proposed += run.proposed;
            chains.push(run.draws);
        }
        let latents = (0..self.latents.len())
            .map(|k| {
                let per_chain: Vec<Vec<f64>> = chains.iter().map(|c| c.iter().map(|d| d[k]).collect()).collect();
                let all: Vec<f64> = per_chain.concat();
                let n = all.len().max(1) as f64;
                let mean = all.iter().sum::<f64>() / n;
                let std = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
                ChainLatent { mean, std, rhat: split_rhat(&per_chain), ess: effective_samples(&per_chain) }
            })
            .collect();
        Ok(ChainsPosterior {
            latents,
            chains: chains.len(),
            draws_per_chain: chains.first().map_or(0, Vec::len),
            acceptance: accepted as f64 / proposed.max(1) as f64,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Observation `i`'s importance sampling: `config.samples` runs of the
    /// remote simulator conditioned on it, each controlled choice proposed
    /// by the network, weighted by p(x) p(y | x) / q(x | y).
    fn importance(
        &self,
        config: &PpxInferConfig,
        loaded: &Loaded,
        remote: &mut RemoteSimulator,
        held: &Recorded,
        i: usize,
    ) -> Result<WeightedPosterior, TrainError> {
        let started = std::time::Instant::now();
        let observed = embed_observation(&loaded.net, &loaded.saved, &held.observation, &self.device);
        let (mut log_weights, mut rows, mut from_prior) = (Vec::new(), Vec::new(), 0);
        for k in 0..config.samples as u64 {
            let mut proposal = loaded.proposal(observed.clone());
            let seed = mix(config.seed, (i as u64) << 32 | k, IMPORTANCE_STREAM);
            let mut ex = Executor::new(Mode::Proposal(seed, &mut proposal)).conditioned_on(&held.observation);
            if let Some(noise) = config.noise {
                ex = ex.with_observation_noise(noise);
            }
            remote.run(&mut ex).map_err(|e| TrainError::Model(format!("importance sample {k}: {e}")))?;
            let run = ex.finish().map_err(|e| TrainError::Model(format!("importance sample {k}: {e}")))?;
            from_prior += proposal.from_prior;
            rows.push(self.values(&run).map_err(|e| TrainError::Model(format!("importance sample {k}: {e}")))?);
            log_weights.push(run.log_weight_ratio() + run.log_likelihood);
        }
        let (ess, latents) = weighted(&log_weights, &rows).map_err(TrainError::Model)?;
        Ok(WeightedPosterior {
            latents,
            ess,
            samples: config.samples,
            from_prior,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The results as a table, a row per observation, latent and engine: what
/// `trainer infer --ppx` prints.
pub fn table(results: &[PpxInferred]) -> String {
    let mut out = format!(
        "{:>3}  {:<32} {:>10}  {:<8} {:>22} {:>7} {:>8} {:>9}\n",
        "obs", "latent", "truth", "engine", "posterior mean ± std", "R-hat", "ESS", "distance"
    );
    let or_dash = |v: Option<f64>, digits: usize| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"));
    for (i, r) in results.iter().enumerate() {
        for (k, address) in r.latents.iter().enumerate() {
            let mut first = true;
            let mut row = |engine: &str, m: (f64, f64), rhat: Option<f64>, ess: Option<f64>, distance: Option<f64>| {
                let (obs, latent, truth) = if first {
                    let obs = if k == 0 { i.to_string() } else { String::new() };
                    (obs, address.as_str(), format!("{:.4}", r.truth[k]))
                } else {
                    (String::new(), "", String::new())
                };
                first = false;
                out += &format!(
                    "{obs:>3}  {latent:<32} {truth:>10}  {engine:<8} {:>12.4} ± {:<7.4} {:>7} {:>8} {:>9}\n",
                    m.0,
                    m.1,
                    or_dash(rhat, 3),
                    or_dash(ess, 1),
                    or_dash(distance, 3)
                );
            };
            if let Some(n) = &r.network {
                let distance = r.distance.as_ref().and_then(|d| d[k]);
                row("network", (n.latents[k].mean, n.latents[k].std), None, Some(n.ess), distance);
            }
            if let Some(c) = &r.rmh {
                let l = &c.latents[k];
                row("rmh", (l.mean, l.std), l.rhat, l.ess, None);
            }
        }
    }
    let n = results.len().max(1) as f64;
    let importance: Vec<&WeightedPosterior> = results.iter().filter_map(|r| r.network.as_ref()).collect();
    if let Some(first) = importance.first() {
        out += &format!(
            "importance sampling with the network over PPX, {} samples per observation: mean ESS {:.1} ({:.1} per \
             second), {} choices proposed by their prior\n",
            first.samples,
            importance.iter().map(|p| p.ess).sum::<f64>() / n,
            importance.iter().map(|p| p.ess / p.seconds.max(1e-9)).sum::<f64>() / n,
            importance.iter().map(|p| p.from_prior).sum::<usize>(),
        );
    }
    let chains: Vec<&ChainsPosterior> = results.iter().filter_map(|r| r.rmh.as_ref()).collect();
    if let Some(first) = chains.first() {
        let worst = chains.iter().flat_map(|c| c.latents.iter().filter_map(|l| l.rhat)).fold(f64::NAN, f64::max);
        out += &format!(
            "Metropolis-Hastings over PPX, {} chains of {} kept states each: mean acceptance {:.3}, largest R-hat \
             {worst:.3}, {:.1} s per observation\n",
            first.chains,
            first.draws_per_chain,
            chains.iter().map(|c| c.acceptance).sum::<f64>() / n,
            chains.iter().map(|c| c.seconds).sum::<f64>() / n,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Equal weights give the plain mean, deviation and an ESS of the
    /// count; one dominant weight gives that row and an ESS of about 1; no
    /// finite weight is an error.
    #[test]
    fn weights_make_each_latents_moments_and_the_ess() {
        let rows = vec![vec![1.0, 10.0], vec![3.0, 10.0], vec![5.0, 40.0]];
        let (ess, m) = weighted(&[-2.0; 3], &rows).unwrap();
        assert!((ess - 3.0).abs() < 1e-12);
        assert!((m[0].mean - 3.0).abs() < 1e-12 && (m[0].std - (8.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((m[1].mean - 20.0).abs() < 1e-12);
        let (ess, m) = weighted(&[-1e3, 0.0, -1e3], &rows).unwrap();
        assert!((ess - 1.0).abs() < 1e-9 && (m[0].mean - 3.0).abs() < 1e-9 && m[0].std < 1e-6);
        assert!(weighted(&[f64::NEG_INFINITY; 3], &rows).is_err());
    }
}
