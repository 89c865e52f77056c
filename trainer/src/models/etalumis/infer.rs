//! Importance sampling with the trained network (Baydin et al. 2019,
//! Sec. III-B; pyprob `Model.posterior` with `InferenceEngine.
//! IMPORTANCE_SAMPLING_WITH_INFERENCE_NETWORK`): for a held-out
//! observation y, K runs of the simulator conditioned on y, each controlled
//! choice drawn from the network's proposal ([`guide`](super::guide)),
//! weighted by w = p(x) p(y | x) / q(x | y). The same with the prior as the
//! proposal (w = p(y | x)) is the baseline the network must beat.
//!
//! Reported per observation: the effective sample size (Σw)² / Σw² (Kong
//! 1992; Owen, "Monte Carlo theory, methods and examples", ch. 9), and the
//! weighted posterior of the simulator's latents
//! ([`LATENTS`](simgen::traces::tau::LATENTS)) against the values that
//! generated the observation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use burn::tensor::{Device, Tensor, TensorData};
use formats::checkpoint;
use formats::lmdb::TraceStore;
use formats::manifest::{MANIFEST_FILE, Manifest};
use serde::{Deserialize, Serialize};
use simgen::random::mix;
use simgen::traces::executor::{Executor, Mode, PriorProposal, Proposal, Recorded};
use simgen::traces::generate::{from_trace, replay};
use simgen::traces::tau::{self, CHANNELS, LATENTS};

use super::guide::NetworkProposal;
use super::infer_rmh::{self, Distance, McmcPosterior, RmhSettings};
use super::model::SavedNetwork;
use super::net::EtalumisNet;
use crate::engine::TrainError;
use crate::params;

/// Stream of the proposal runs' seeds in [`mix`].
const STREAM: u64 = 41;

/// Which inference `trainer infer` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// Importance sampling with the network's proposals and with the prior's.
    Is,
    /// Lightweight Metropolis-Hastings chains, no network.
    Rmh,
    /// Both, and how far each importance-sampled posterior lies from the chains'.
    Both,
}

impl Engine {
    pub(super) fn importance(self) -> bool {
        matches!(self, Engine::Is | Engine::Both)
    }

    pub(super) fn chains(self) -> bool {
        matches!(self, Engine::Rmh | Engine::Both)
    }
}

/// What `trainer infer` does.
#[derive(Debug, Clone)]
pub struct InferConfig {
    /// Which inference.
    pub engine: Engine,
    /// Checkpoint directory of a trained network (its latest checkpoint);
    /// importance sampling needs one.
    pub checkpoint: Option<PathBuf>,
    /// The Metropolis-Hastings chains.
    pub rmh: RmhSettings,
    /// Dataset directory (a manifest of trace stores) of held-out traces.
    pub observations: PathBuf,
    /// Observations to infer, spread evenly over the dataset's traces.
    pub count: usize,
    /// Importance samples per observation and proposal.
    pub samples: usize,
    /// Seed of the runs.
    pub seed: u64,
    /// The calorimeter noise per voxel, GeV, that observations are scored
    /// with (`simgen traces --noise`).
    pub noise: f32,
}

/// The weighted posterior of one proposal's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Posterior {
    /// Effective sample size, (Σw)² / Σw².
    pub ess: f64,
    /// Posterior probability of each decay channel.
    pub channels: Vec<f64>,
    /// Posterior mean of px, py, pz.
    pub momentum_mean: [f64; 3],
    /// Posterior deviation of px, py, pz.
    pub momentum_std: [f64; 3],
    /// Choices proposed from the prior because the network had no layers
    /// for their address (0 for the prior).
    pub from_prior: usize,
    /// Seconds the runs (or chains) took.
    #[serde(default)]
    pub seconds: f64,
}

impl Posterior {
    /// The posterior of runs with log weights `log_weights` and latents
    /// `latents` (channel index, px, py, pz).
    pub fn of(log_weights: &[f64], latents: &[[f64; 4]], from_prior: usize) -> Result<Posterior, String> {
        let (shares, ess) = normalized_weights(log_weights)?;
        let mut channels = vec![0.0; CHANNELS.len()];
        let (mut mean, mut square) = ([0.0; 3], [0.0; 3]);
        for (&p, l) in shares.iter().zip(latents) {
            let channel = l[0] as usize;
            if let Some(c) = channels.get_mut(channel) {
                *c += p;
            }
            for m in 0..3 {
                mean[m] += p * l[m + 1];
                square[m] += p * l[m + 1] * l[m + 1];
            }
        }
        let std = std::array::from_fn(|m| (square[m] - mean[m] * mean[m]).max(0.0).sqrt());
        Ok(Posterior { ess, channels, momentum_mean: mean, momentum_std: std, from_prior, seconds: 0.0 })
    }

    /// The most probable channel.
    pub fn channel(&self) -> usize {
        (0..self.channels.len()).max_by(|&a, &b| self.channels[a].total_cmp(&self.channels[b])).unwrap_or(0)
    }
}

/// Each run's share of the total weight, from log weights, and the
/// weights' effective sample size (Σw)² / Σw² (Kong 1992); an error when
/// no weight is finite.
pub(super) fn normalized_weights(log_weights: &[f64]) -> Result<(Vec<f64>, f64), String> {
    let top = log_weights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return Err(format!("no run has a finite weight (the largest log weight is {top})"));
    }
    let w: Vec<f64> = log_weights.iter().map(|l| (l - top).exp()).collect();
    let total: f64 = w.iter().sum();
    let ess = total * total / w.iter().map(|v| v * v).sum::<f64>();
    Ok((w.into_iter().map(|v| v / total).collect(), ess))
}

/// One observation's inference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inferred {
    /// The store holding it.
    pub store: PathBuf,
    /// Its index there.
    pub index: u64,
    /// The latents that generated it: channel, px, py, pz.
    pub truth: [f64; 4],
    /// −log q of the choices that generated it, under the network (what
    /// training's validation averages), and −log p under the prior; `None`
    /// when it visits an address the network has no layers for.
    pub true_choices: Option<[f64; 2]>,
    /// With the network's proposals (importance sampling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Posterior>,
    /// With the prior as proposal (importance sampling).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior: Option<Posterior>,
    /// By Metropolis-Hastings chains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rmh: Option<McmcPosterior>,
    /// With both engines: how far the network's and the prior's
    /// importance-sampled posteriors lie from the chains'.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<Distances>,
    /// The rank that inferred it.
    #[serde(default)]
    pub rank: usize,
}

/// [`Distance`]s of the importance-sampled posteriors from the chains'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distances {
    /// The network's.
    pub network: Distance,
    /// The prior's.
    pub prior: Distance,
}

/// A held-out observation and the latents that made it.
struct HeldOut {
    store: PathBuf,
    index: u64,
    truth: [f64; 4],
    /// The run that made it, its observation included.
    run: Recorded,
}

/// The network of the latest checkpoint in `dir`, on `device`, and what
/// the checkpoint recorded of it.
pub fn load_network(dir: &Path, device: &Device) -> Result<(EtalumisNet, SavedNetwork), TrainError> {
    let shown = dir.display();
    let cp = checkpoint::load_latest(dir)?
        .ok_or_else(|| TrainError::Invalid(format!("--checkpoint {shown}: holds no checkpoint")))?;
    let saved: SavedNetwork = serde_json::from_value(cp.state.layout.clone()).map_err(|e| {
        TrainError::context(format!("--checkpoint {shown}: not a checkpoint of the etalumis network"), e)
    })?;
    let net = EtalumisNet::new(&saved.config, &saved.data.observation, &saved.data.layout, device)?;
    let lengths = params::lengths(&params::shapes(&net)?);
    if lengths != cp.state.lengths {
        return Err(TrainError::Invalid(format!(
            "--checkpoint {shown}: {} parameter tensors saved, the network it describes has {}",
            cp.state.lengths.len(),
            lengths.len()
        )));
    }
    Ok((params::with_values(net, &cp.params, device), saved))
}

/// `count` traces of the dataset in `dir` (all if it holds fewer), spread
/// evenly over its stores: a store is sorted by trace type, so its first
/// traces would all be of the commonest types. Each with its store and
/// its index there.
pub(super) fn read_held_out(dir: &Path, count: usize) -> Result<Vec<(PathBuf, u64, Recorded)>, TrainError> {
    let context = || format!("--observations {}", dir.display());
    let data = |message: &str| TrainError::Data(format!("{}: {message}", context()));
    let manifest = Manifest::load(&dir.join(MANIFEST_FILE)).map_err(|e| TrainError::context(context(), e))?;
    let stores = loader::catalog::lmdb_stores(dir, &manifest, None)
        .into_iter()
        .map(|d| TraceStore::open(&d).map(|s| (d, s)).map_err(|e| TrainError::context(context(), e)))
        .collect::<Result<Vec<_>, _>>()?;
    let total: u64 = stores.iter().map(|(_, s)| s.len()).sum();
    let count = (count as u64).min(total);
    let mut wanted = (0..count).map(|i| i * total / count).peekable();
    let mut out = Vec::new();
    let mut before = 0;
    for (store_dir, store) in &stores {
        while let Some(index) = wanted.next_if(|&w| w < before + store.len()).map(|w| w - before) {
            let trace = store
                .get(index)
                .map_err(|e| TrainError::context(context(), e))?
                .ok_or_else(|| data(&format!("trace {index} missing")))?;
            let run = from_trace(&trace, store.addresses()).map_err(|e| TrainError::context(context(), e))?;
            out.push((store_dir.clone(), index, run));
        }
        before += store.len();
    }
    if out.is_empty() {
        return Err(data("holds no traces"));
    }
    Ok(out)
}

/// [`read_held_out`] for the tau simulator: observations of `shape`, each
/// with the latents that made it.
fn held_out(dir: &Path, count: usize, (shape, whose): (&[usize], &str)) -> Result<Vec<HeldOut>, TrainError> {
    let data = |message: String| TrainError::Data(format!("--observations {}: {message}", dir.display()));
    read_held_out(dir, count)?
        .into_iter()
        .map(|(store, index, run)| {
            if run.observation_shape != shape {
                return Err(data(format!("observations of shape {:?}; {whose} {shape:?}", run.observation_shape)));
            }
            let truth = latents(&run).map_err(|e| {
                data(format!("trace {index} of {}: {e}: not traces of simgen's tau simulator", store.display()))
            })?;
            Ok(HeldOut { store, index, truth, run })
        })
        .collect()
}

/// A run's latents: channel, px, py, pz; an error names a missing one.
pub(super) fn latents(run: &Recorded) -> Result<[f64; 4], String> {
    let mut out = [0.0; 4];
    for (v, (name, address)) in out.iter_mut().zip(LATENTS) {
        *v = run
            .choices
            .iter()
            .find(|c| c.address == address)
            .map(|c| c.value)
            .ok_or_else(|| format!("no choice {name} ({address})"))?;
    }
    Ok(out)
}

/// The network's embedding [1, size] of one observation, standardised as
/// in training.
pub(super) fn embed_observation(
    net: &EtalumisNet,
    saved: &SavedNetwork,
    observation: &[f32],
    device: &Device,
) -> Tensor<2> {
    let (mean, std) = (saved.data.observation_mean, saved.data.observation_std);
    let x: Vec<f32> = observation.iter().map(|v| (v - mean) / std).collect();
    let n = x.len();
    net.observation.forward(Tensor::from_data(TensorData::new(x, [1, n]), device))
}

/// Run `samples` conditioned simulations of `held`, each with a proposal
/// `make` builds, and weigh them; `from_prior` counts the choices a
/// proposal left to the prior.
fn sample<P: Proposal>(
    config: &InferConfig,
    held: &HeldOut,
    first_seed: u64,
    mut make: impl FnMut() -> P,
    from_prior: impl Fn(&P) -> usize,
) -> Result<Posterior, TrainError> {
    let started = std::time::Instant::now();
    let mut log_weights = Vec::with_capacity(config.samples);
    let mut values = Vec::with_capacity(config.samples);
    let mut left_to_prior = 0;
    for k in 0..config.samples as u64 {
        let mut proposal = make();
        let mut ex = Executor::new(Mode::Proposal(mix(config.seed, first_seed + k, STREAM), &mut proposal))
            .conditioned_on(&held.run.observation)
            .with_observation_noise(config.noise);
        let run = tau::simulate(&mut ex).and_then(|()| ex.finish()).map_err(TrainError::of_model)?;
        left_to_prior += from_prior(&proposal);
        log_weights.push(run.log_weight_ratio() + run.log_likelihood);
        values.push(latents(&run).map_err(|e| TrainError::Model(format!("a run made {e}")))?);
    }
    let mut posterior = Posterior::of(&log_weights, &values, left_to_prior).map_err(TrainError::Model)?;
    posterior.seconds = started.elapsed().as_secs_f64();
    Ok(posterior)
}

/// A trained network and what it needs to propose.
pub(super) struct Loaded {
    pub(super) net: EtalumisNet,
    pub(super) saved: SavedNetwork,
    positions: HashMap<String, usize>,
}

impl Loaded {
    /// The network of the latest checkpoint in `dir`.
    pub(super) fn new(dir: &Path, device: &Device) -> Result<Loaded, TrainError> {
        let (net, saved) = load_network(dir, device)?;
        let positions = saved.data.layout.addresses.iter().enumerate().map(|(i, a)| (a.address.clone(), i)).collect();
        Ok(Loaded { net, saved, positions })
    }

    /// The proposal of one run conditioned on the observation whose
    /// embedding is `observed` ([`embed_observation`]).
    pub(super) fn proposal(&self, observed: Tensor<2>) -> NetworkProposal<'_> {
        NetworkProposal::new(&self.net, &self.saved, &self.positions, observed)
    }
}

/// What every rank loads before inferring: the network (for importance
/// sampling) and the held-out observations. Built before MPI starts, so a
/// bad checkpoint or dataset is one line and exit 2.
pub struct Prepared {
    loaded: Option<Loaded>,
    observations: Vec<HeldOut>,
    device: Device,
}

impl Prepared {
    /// Check `config`, load the network and pick the observations.
    pub fn new(config: &InferConfig) -> Result<Prepared, TrainError> {
        if config.samples == 0 || config.count == 0 {
            return Err(TrainError::Invalid("--samples and --count must be at least 1".into()));
        }
        if !(config.noise.is_finite() && config.noise > 0.0) {
            return Err(TrainError::Invalid(format!("--noise must be a positive number of GeV, got {}", config.noise)));
        }
        let device = Device::flex();
        let loaded = match (config.engine.importance(), &config.checkpoint) {
            (false, _) => None,
            (true, None) => {
                return Err(TrainError::Invalid("importance sampling (--engine is or both) needs --checkpoint".into()));
            }
            (true, Some(dir)) => Some(Loaded::new(dir, &device)?),
        };
        let shape = match &loaded {
            Some(l) => (l.saved.data.observation.as_slice(), "the network was trained on"),
            None => (&simgen::traces::calorimeter::SHAPE[..], "the tau simulator's calorimeter is"),
        };
        let observations = held_out(&config.observations, config.count, shape)?;
        Ok(Prepared { loaded, observations, device })
    }

    /// Observations to infer.
    pub fn len(&self) -> usize {
        self.observations.len()
    }

    /// Whether there are none (never: [`Prepared::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    /// Infer observations `indices` (of [`Prepared::len`]), by the engines
    /// `config.engine` names; `progress` hears of each as it is done. An
    /// observation's seeds come from its index alone, so any split of the
    /// indices over ranks gives the same results.
    pub fn infer(
        &self,
        config: &InferConfig,
        indices: std::ops::Range<usize>,
        mut progress: impl FnMut(usize, &Inferred),
    ) -> Result<Vec<Inferred>, TrainError> {
        let mut out = Vec::with_capacity(indices.len());
        for i in indices {
            let Some(held) = self.observations.get(i) else { break };
            let (network, prior, true_choices) = match &self.loaded {
                Some(loaded) => {
                    let Importance { network, prior, true_choices } =
                        importance(config, loaded, held, i, &self.device)?;
                    (Some(network), Some(prior), true_choices)
                }
                None => (None, None, None),
            };
            let rmh = if config.engine.chains() {
                Some(infer_rmh::posterior(&held.run.observation, config.noise, config.rmh, (config.seed, i as u64))?)
            } else {
                None
            };
            let distance = match (&network, &prior, &rmh) {
                (Some(n), Some(p), Some(r)) => Some(Distances {
                    network: Distance::between(n, &r.posterior),
                    prior: Distance::between(p, &r.posterior),
                }),
                _ => None,
            };
            let inferred = Inferred {
                store: held.store.clone(),
                index: held.index,
                truth: held.truth,
                true_choices,
                network,
                prior,
                rmh,
                distance,
                rank: 0,
            };
            progress(i, &inferred);
            out.push(inferred);
        }
        Ok(out)
    }
}

/// One observation's importance sampling.
struct Importance {
    network: Posterior,
    prior: Posterior,
    /// −log q and −log p of the choices that made it.
    true_choices: Option<[f64; 2]>,
}

/// Importance sampling of observation `i` with the network's proposals and
/// with the prior's, and the scores of the choices that made it.
fn importance(
    config: &InferConfig,
    loaded: &Loaded,
    held: &HeldOut,
    i: usize,
    device: &Device,
) -> Result<Importance, TrainError> {
    let observed = embed_observation(&loaded.net, &loaded.saved, &held.run.observation, device);
    let first_seed = (i * config.samples) as u64;
    let network = sample(config, held, first_seed, || loaded.proposal(observed.clone()), |p| p.from_prior)?;
    let prior = sample(config, held, first_seed, || PriorProposal, |_| 0)?;
    let log_q = loaded.proposal(observed.clone()).score(&held.run.choices).map_err(TrainError::Model)?;
    let log_p = replay(&held.run)
        .map_err(|e| {
            TrainError::Data(format!(
                "--observations: trace {} of {} does not replay through the simulator: {e}",
                held.index,
                held.store.display()
            ))
        })?
        .log_prior();
    Ok(Importance { network, prior, true_choices: log_q.map(|q| [-q, -log_p]) })
}

/// The results as a table, a row per observation and engine (network,
/// prior, rmh), and summary lines: what `trainer infer` prints.
pub fn table(results: &[Inferred], samples: usize) -> String {
    let name = |c: usize| CHANNELS.get(c).map_or("?", |c| c.name);
    let mut out = format!(
        "{:>3}  {:<12} {:>7}  {:<8} {:>7} {:>7}  {:<12} {:>16}\n",
        "obs", "true channel", "true pz", "engine", "ESS", "P(true)", "most probable", "pz mean ± std"
    );
    for (i, r) in results.iter().enumerate() {
        let truth = r.truth[0] as usize;
        let rows = [
            ("network", r.network.as_ref()),
            ("prior", r.prior.as_ref()),
            ("rmh", r.rmh.as_ref().map(|m| &m.posterior)),
        ];
        for (row, (label, p)) in rows.into_iter().filter_map(|(l, p)| p.map(|p| (l, p))).enumerate() {
            let (obs, channel, pz) = if row == 0 {
                (i.to_string(), name(truth).to_owned(), format!("{:.2}", r.truth[3]))
            } else {
                (String::new(), String::new(), String::new())
            };
            out += &format!(
                "{obs:>3}  {channel:<12} {pz:>7}  {label:<8} {:>7.2} {:>7.3}  {:<12} {:>8.2} ± {:<5.2}\n",
                p.ess,
                p.channels.get(truth).copied().unwrap_or(0.0),
                name(p.channel()),
                p.momentum_mean[2],
                p.momentum_std[2],
            );
        }
    }
    let n = results.len().max(1) as f64;
    let importance: Vec<(&Posterior, &Posterior, usize)> =
        results.iter().filter_map(|r| Some((r.network.as_ref()?, r.prior.as_ref()?, r.truth[0] as usize))).collect();
    if !importance.is_empty() {
        let mean_ess = |f: fn(&(&Posterior, &Posterior, usize)) -> f64| importance.iter().map(f).sum::<f64>() / n;
        let right = |f: fn(&(&Posterior, &Posterior, usize)) -> bool| importance.iter().filter(|r| f(r)).count();
        out += &format!(
            "{} observations, {samples} samples each: mean ESS {:.2} with the network, {:.2} with the prior; \
             the true channel most probable for {} and {}\n",
            results.len(),
            mean_ess(|r| r.0.ess),
            mean_ess(|r| r.1.ess),
            right(|r| r.0.channel() == r.2),
            right(|r| r.1.channel() == r.2),
        );
    }
    let chains: Vec<&McmcPosterior> = results.iter().filter_map(|r| r.rmh.as_ref()).collect();
    if let Some(first) = chains.first() {
        let worst_rhat = chains.iter().flat_map(|m| m.rhat.iter().flatten()).copied().fold(f64::NAN, f64::max);
        let ess_per_second = chains.iter().map(|m| m.posterior.ess / m.seconds.max(1e-9)).sum::<f64>() / n;
        out += &format!(
            "Metropolis-Hastings, {} chains of {} kept states each: mean acceptance {:.3}, largest R-hat {:.3}, \
             mean ESS {:.1} ({:.1} per second), the true channel most probable for {}\n",
            first.chains,
            first.draws_per_chain,
            chains.iter().map(|m| m.acceptance).sum::<f64>() / n,
            worst_rhat,
            chains.iter().map(|m| m.posterior.ess).sum::<f64>() / n,
            ess_per_second,
            results
                .iter()
                .filter(|r| r.rmh.as_ref().is_some_and(|m| m.posterior.channel() == r.truth[0] as usize))
                .count(),
        );
    }
    let distances: Vec<&Distances> = results.iter().filter_map(|r| r.distance.as_ref()).collect();
    if !distances.is_empty() {
        let tv = |f: fn(&Distances) -> f64| distances.iter().map(|d| f(d)).sum::<f64>() / distances.len() as f64;
        out += &format!(
            "distance from the chains' posterior (mean over observations): channel total variation {:.3} with the \
             network, {:.3} with the prior\n",
            tv(|d| d.network.channel),
            tv(|d| d.prior.channel),
        );
    }
    let scored: Vec<[f64; 2]> = results.iter().filter_map(|r| r.true_choices).collect();
    if !scored.is_empty() {
        let mean = |i: usize| scored.iter().map(|s| s[i]).sum::<f64>() / scored.len() as f64;
        out += &format!(
            "the choices that made the {} scored observations: −log q {:.3} per trace under the network, −log p \
             {:.3} under the prior\n",
            scored.len(),
            mean(0),
            mean(1)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Equal weights: the ESS is the number of runs and the posterior the
    /// plain average; one dominant weight: an ESS of about 1 and that run's
    /// values.
    #[test]
    fn weights_make_the_ess_and_the_posterior() {
        let latents = [[0.0, 0.1, 0.2, 44.0], [4.0, -0.1, 0.0, 46.0], [4.0, 0.0, 0.1, 45.0], [4.0, 0.0, -0.3, 45.0]];
        let even = Posterior::of(&[-3.0; 4], &latents, 0).unwrap();
        assert!((even.ess - 4.0).abs() < 1e-12);
        assert!((even.channels[0] - 0.25).abs() < 1e-12 && (even.channels[4] - 0.75).abs() < 1e-12);
        assert_eq!(even.channel(), 4);
        assert!((even.momentum_mean[2] - 45.0).abs() < 1e-12);
        assert!((even.momentum_std[2] - 0.5f64.sqrt()).abs() < 1e-12);
        let one = Posterior::of(&[0.0, -50.0, -60.0, -1e4], &latents, 0).unwrap();
        assert!((one.ess - 1.0).abs() < 1e-9 && one.channel() == 0);
        assert!((one.momentum_mean[2] - 44.0).abs() < 1e-9 && one.momentum_std[2] < 1e-6);
        // Weights that are all zero are an error, not a posterior.
        assert!(Posterior::of(&[f64::NEG_INFINITY; 4], &latents, 0).is_err());
    }
}
