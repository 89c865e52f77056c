//! `trainer infer --engine rmh`: the posterior of one observation of the
//! tau simulator by several chains of lightweight Metropolis-Hastings
//! ([`rmh`](super::rmh)), with their convergence diagnostics
//! ([`mcmc_stats`](super::mcmc_stats)); and how far an importance-sampled
//! posterior lies from it, latent by latent.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use simgen::random::mix;
use simgen::traces::tau::{self, CHANNELS};

use super::infer::{Posterior, latents};
use super::mcmc_stats::{effective_samples, split_rhat};
use super::rmh::{ChainConfig, run_chain};
use crate::engine::TrainError;

/// Stream of the chains' seeds in [`mix`].
const STREAM: u64 = 43;

/// How the chains run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmhSettings {
    /// Chains per observation.
    pub chains: usize,
    /// Length, burn-in and thinning of each.
    pub chain: ChainConfig,
}

/// One observation's posterior by Metropolis-Hastings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McmcPosterior {
    /// The posterior of every chain's kept states together, equally
    /// weighted; its `ess` is the smallest effective sample size of the
    /// latents (those with one).
    pub posterior: Posterior,
    /// Chains run.
    pub chains: usize,
    /// States kept per chain.
    pub draws_per_chain: usize,
    /// Share of the candidates accepted.
    pub acceptance: f64,
    /// Split R-hat of each latent (channel, px, py, pz); `null` when every
    /// chain sat on one value.
    pub rhat: [Option<f64>; 4],
    /// Effective sample size of each latent, from the chains'
    /// autocorrelation; `null` as for `rhat`.
    pub ess: [Option<f64>; 4],
    /// Seconds the chains took.
    pub seconds: f64,
}

/// How far another posterior lies from the Metropolis-Hastings one, per
/// latent: the total variation distance of the decay channel's
/// probabilities (½ Σ |p − q|, 0 to 1), and for px, py, pz the difference
/// of the means in the Metropolis-Hastings posterior's deviations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distance {
    /// Total variation distance of the channel posteriors.
    pub channel: f64,
    /// |mean − mean_rmh| / std_rmh of px, py, pz (`null` where the chains'
    /// deviation is 0).
    pub momentum: [Option<f64>; 3],
}

impl Distance {
    /// The distance of `other` from `rmh`.
    pub fn between(other: &Posterior, rmh: &Posterior) -> Distance {
        let channel = 0.5 * other.channels.iter().zip(&rmh.channels).map(|(p, q)| (p - q).abs()).sum::<f64>();
        let momentum = std::array::from_fn(|m| {
            let std = rmh.momentum_std[m];
            (std > 0.0).then(|| (other.momentum_mean[m] - rmh.momentum_mean[m]).abs() / std)
        });
        Distance { channel, momentum }
    }
}

/// Run the chains for `observation` (observation `index` of the run; its
/// seeds come from `seed` and the index) scored with `noise`.
pub fn posterior(
    observation: &[f32],
    noise: f32,
    settings: RmhSettings,
    (seed, index): (u64, u64),
) -> Result<McmcPosterior, TrainError> {
    if settings.chains == 0 {
        return Err(TrainError::Invalid("--chains must be at least 1".into()));
    }
    let started = Instant::now();
    let extract = |run: &simgen::traces::executor::Recorded| latents(run).map(|l| l.to_vec());
    let chain_seed = mix(seed, index, STREAM);
    let mut chains = Vec::with_capacity(settings.chains);
    let (mut accepted, mut proposed) = (0, 0);
    for chain in 0..settings.chains as u64 {
        let out =
            run_chain(&mut tau::simulate, (observation, Some(noise)), settings.chain, (chain_seed, chain), &extract)
                .map_err(|e| TrainError::Model(format!("Metropolis-Hastings chain {chain}: {e}")))?;
        accepted += out.accepted;
        proposed += out.proposed;
        chains.push(out.draws);
    }
    let draws: Vec<[f64; 4]> = chains.iter().flatten().map(|d| std::array::from_fn(|i| d[i])).collect();
    let mut posterior = Posterior::of(&vec![0.0; draws.len()], &draws, 0).map_err(TrainError::Model)?;
    let latent = |i: usize| -> Vec<Vec<f64>> { chains.iter().map(|c| c.iter().map(|d| d[i]).collect()).collect() };
    let rhat = std::array::from_fn(|i| split_rhat(&latent(i)));
    let ess: [Option<f64>; 4] = std::array::from_fn(|i| effective_samples(&latent(i)));
    // The conservative figure: the worst-mixing latent (the decay channel
    // mixes slowest: a new channel brings new products from their priors).
    posterior.ess = ess.iter().flatten().copied().fold(f64::INFINITY, f64::min);
    if !posterior.ess.is_finite() {
        posterior.ess = 0.0;
    }
    debug_assert_eq!(posterior.channels.len(), CHANNELS.len());
    let seconds = started.elapsed().as_secs_f64();
    posterior.seconds = seconds;
    Ok(McmcPosterior {
        posterior,
        chains: settings.chains,
        draws_per_chain: chains.first().map_or(0, Vec::len),
        acceptance: accepted as f64 / proposed.max(1) as f64,
        rhat,
        ess,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_distance_is_total_variation_and_standardised_mean_shifts() {
        let rmh = Posterior::of(
            &[0.0; 4],
            &[[0.0, 0.0, 0.0, 44.0], [0.0, 0.0, 0.0, 46.0], [4.0, 0.0, 0.0, 45.0], [4.0, 0.0, 0.0, 45.0]],
            0,
        )
        .unwrap();
        let other = Posterior::of(&[0.0; 2], &[[4.0, 0.0, 0.0, 45.5], [4.0, 0.0, 0.0, 46.5]], 0).unwrap();
        let d = Distance::between(&other, &rmh);
        // Channels (½, ½) against (0, 1): TV ½. pz: means 45 and 46, the
        // chains' deviation √½.
        assert!((d.channel - 0.5).abs() < 1e-12);
        assert!((d.momentum[2].unwrap() - 1.0 / 0.5f64.sqrt()).abs() < 1e-9);
        assert_eq!(d.momentum[0], None);
    }
}
