//! Random-walk Metropolis-Hastings over a simulator's traces: the
//! lightweight, single-site MH of Wingate, Stuhlmüller & Goodman
//! ("Lightweight implementations of probabilistic programming languages via
//! transformational compilation", AISTATS 2011, §3), which Etalumis ran as
//! the ground truth its inference compilation was checked against (Baydin
//! et al., SC19, §4.2 and §6.4; pyprob's `RANDOM_WALK_METROPOLIS_HASTINGS`).
//!
//! A step picks one controlled choice of the current trace uniformly,
//! draws it anew from its prior and re-runs the simulator, reusing every
//! other choice whose address the current trace holds and drawing the rest
//! (the fresh ones) from their priors. With prior proposals the acceptance
//! ratio reduces to (Wingate et al. 2011, eq. 2)
//!
//! log α = log p(y | x') − log p(y | x) + log |x| − log |x'|
//!         + Σ over reused choices (log p'(x_i) − log p(x_i)),
//!
//! |x| the number of controlled choices, p' the candidate's prior at that
//! address (the same value can be more or less likely where earlier choices
//! changed its distribution). A reused value outside its new support is a
//! rejected candidate. Uncontrolled choices are drawn anew each run, as in
//! pyprob.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use simgen::random::mix;
use simgen::traces::executor::{Choice, Executor, Mode, PriorProposal, Proposal, Proposed, Recorded, RunError};

use formats::lmdb::trace_codec::Distribution;

/// Streams of [`mix`]: the chain's own draws (site, acceptance) and each
/// run's executor.
const CHAIN_STREAM: u64 = 61;
const RUN_STREAM: u64 = 62;

/// A simulator written against the executor (`simgen::traces::tau::simulate`,
/// or a PPX simulator's `RemoteSimulator::run`).
pub type Simulator<'a> = &'a mut dyn FnMut(&mut Executor<'_>) -> Result<(), RunError>;

/// One chain's length and what of it is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainConfig {
    /// Steps after the first state (each a proposed candidate).
    pub steps: usize,
    /// Steps discarded at the start.
    pub burn_in: usize,
    /// Keep every `thin`-th state after the burn-in.
    pub thin: usize,
}

/// A chain's kept states, as the values `extract` made of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// One row per kept state.
    pub draws: Vec<Vec<f64>>,
    /// Candidates accepted.
    pub accepted: usize,
    /// Candidates proposed.
    pub proposed: usize,
}

/// What a chain stopped on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RmhError {
    /// The simulator failed (other than a reused value out of support).
    #[error(transparent)]
    Run(#[from] RunError),
    /// The chain's first run has no controlled choice to move.
    #[error("the simulator made no controlled choice: there is nothing for Metropolis-Hastings to move")]
    NothingToMove,
    /// The first state's likelihood is not finite.
    #[error("the first run scores the observation with log likelihood {0}")]
    Unscored(f64),
    /// `extract` could not read a state.
    #[error("a state of the chain: {0}")]
    Extract(String),
    /// Burn-in and thinning keep nothing.
    #[error("--steps {steps} with --burn-in {burn_in} and --thin {thin} keeps no state")]
    KeepsNothing {
        /// Steps.
        steps: usize,
        /// Burn-in.
        burn_in: usize,
        /// Thinning.
        thin: usize,
    },
}

/// The controlled choices of a state by address: value and log prior.
type State = HashMap<String, (f64, f64)>;

fn state_of(run: &Recorded) -> State {
    run.choices.iter().filter(|c| c.controlled).map(|c| (c.address.clone(), (c.value, c.log_prior))).collect()
}

/// The single-site proposal: `resample` anew from its prior, every address
/// the current state holds reused, the rest from their priors.
struct SingleSite<'s> {
    current: &'s State,
    resample: &'s str,
}

impl Proposal for SingleSite<'_> {
    fn propose(
        &mut self,
        address: &str,
        prior: &Distribution,
        so_far: &[Choice],
        rng: &mut ChaCha12Rng,
    ) -> Result<Proposed, String> {
        match self.current.get(address) {
            Some(&(value, _)) if address != self.resample => {
                Ok(Proposed { value, log_density: simgen::traces::distribution::log_prob(prior, value) })
            }
            _ => PriorProposal.propose(address, prior, so_far, rng),
        }
    }
}

/// Run one chain of `simulate` conditioned on `observation` (scored with
/// `noise` when given), seeded by `(seed, chain)`; `extract` turns each kept
/// state into the values the caller wants (the latents).
pub fn run_chain(
    simulate: Simulator<'_>,
    (observation, noise): (&[f32], Option<f32>),
    config: ChainConfig,
    (seed, chain): (u64, u64),
    extract: &dyn Fn(&Recorded) -> Result<Vec<f64>, String>,
) -> Result<Chain, RmhError> {
    let ChainConfig { steps, burn_in, thin } = config;
    let thin = thin.max(1);
    if steps <= burn_in {
        return Err(RmhError::KeepsNothing { steps, burn_in, thin });
    }
    let mut execute = |step: u64, proposal: &mut dyn Proposal| -> Result<Recorded, RunError> {
        let mut ex = Executor::new(Mode::Proposal(mix(seed, chain << 32 | step, RUN_STREAM), proposal))
            .conditioned_on(observation);
        if let Some(noise) = noise {
            ex = ex.with_observation_noise(noise);
        }
        simulate(&mut ex)?;
        ex.finish()
    };
    let mut rng = ChaCha12Rng::seed_from_u64(mix(seed, chain, CHAIN_STREAM));
    let mut current = execute(0, &mut PriorProposal)?;
    if !current.log_likelihood.is_finite() {
        return Err(RmhError::Unscored(current.log_likelihood));
    }
    let mut state = state_of(&current);
    let mut kept = extract(&current).map_err(RmhError::Extract)?;
    let mut out = Chain { draws: Vec::with_capacity((steps - burn_in) / thin + 1), accepted: 0, proposed: 0 };
    for step in 1..=steps as u64 {
        let sites: Vec<&str> = current.choices.iter().filter(|c| c.controlled).map(|c| c.address.as_str()).collect();
        if sites.is_empty() {
            return Err(RmhError::NothingToMove);
        }
        let resample = sites[rng.random_range(0..sites.len())].to_owned();
        let log_u: f64 = rng.random::<f64>().ln();
        out.proposed += 1;
        let candidate = match execute(step, &mut SingleSite { current: &state, resample: &resample }) {
            Ok(run) => Some(run),
            Err(RunError::OutOfSupport { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        if let Some(candidate) = candidate {
            let moved = candidate.choices.iter().filter(|c| c.controlled).count();
            let reused: f64 = candidate
                .choices
                .iter()
                .filter(|c| c.controlled && c.address != resample)
                .filter_map(|c| state.get(&c.address).map(|&(_, old)| c.log_prior - old))
                .sum();
            let log_alpha = candidate.log_likelihood - current.log_likelihood + (sites.len() as f64).ln()
                - (moved as f64).ln()
                + reused;
            if log_u < log_alpha {
                state = state_of(&candidate);
                kept = extract(&candidate).map_err(RmhError::Extract)?;
                current = candidate;
                out.accepted += 1;
            }
        }
        if step as usize > burn_in && (step as usize - burn_in).is_multiple_of(thin) {
            out.draws.push(kept.clone());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::models::etalumis::mcmc_stats::split_rhat;

    fn normal(mean: f64, std: f64) -> Distribution {
        Distribution::Normal { mean, std }
    }

    fn chains(simulate: Simulator<'_>, latent: &'static str, steps: usize) -> Vec<Vec<f64>> {
        let extract = |run: &Recorded| -> Result<Vec<f64>, String> {
            run.choices.iter().find(|c| c.address == latent).map(|c| vec![c.value]).ok_or_else(|| latent.to_owned())
        };
        (0..4)
            .map(|chain| {
                let config = ChainConfig { steps, burn_in: steps / 10, thin: 1 };
                let out = run_chain(&mut *simulate, (&[], None), config, (7, chain), &extract).unwrap();
                assert!(out.accepted > 0 && out.accepted < out.proposed);
                out.draws.into_iter().map(|d| d[0]).collect()
            })
            .collect()
    }

    /// A Gaussian mean: μ ~ N(0, 1), four y ~ N(μ, 1) observed. Its
    /// posterior is N(Σy / 5, 1/√5) in closed form.
    #[test]
    fn the_chains_recover_a_conjugate_gaussian_posterior() {
        const Y: [f64; 4] = [1.2, 0.8, 1.5, 0.9];
        let mut simulate = |ex: &mut Executor<'_>| -> Result<(), RunError> {
            let mu = ex.sample("mu", normal(0.0, 1.0))?;
            for y in Y {
                ex.observe("y", normal(mu, 1.0), y)?;
            }
            Ok(())
        };
        let draws = chains(&mut simulate, "mu__Normal__1", 20_000);
        assert!(split_rhat(&draws).unwrap() < 1.05);
        let all: Vec<f64> = draws.concat();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let std = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        assert!((mean - 0.88).abs() < 0.03, "{mean}");
        assert!((std - 0.2f64.sqrt()).abs() < 0.03, "{std}");
    }

    /// Traces of two lengths: k ~ Bernoulli(1/2); with k = 1 an extra
    /// e ~ N(0, 1) shifts y ~ N(2k + e, 1). Observing y = 1.5, p(k = 1 | y)
    /// = N(1.5; 2, √2) / (N(1.5; 0, 1) + N(1.5; 2, √2)) = 0.672: right only
    /// with the |x| / |x'| term of the acceptance ratio.
    #[test]
    fn a_choice_that_changes_the_traces_length_gets_its_posterior() {
        let mut simulate = |ex: &mut Executor<'_>| -> Result<(), RunError> {
            let k = ex.sample("k", Distribution::Bernoulli { p: 0.5 })?;
            let e = if k == 1.0 { ex.sample("e", normal(0.0, 1.0))? } else { 0.0 };
            ex.observe("y", normal(2.0 * k + e, 1.0), 1.5)
        };
        let draws = chains(&mut simulate, "k__Bernoulli__1", 40_000);
        let all: Vec<f64> = draws.concat();
        let p = all.iter().sum::<f64>() / all.len() as f64;
        let n = |x: f64, m: f64, s: f64| (-(x - m).powi(2) / (2.0 * s * s)).exp() / s;
        let exact = n(1.5, 2.0, 2f64.sqrt()) / (n(1.5, 0.0, 1.0) + n(1.5, 2.0, 2f64.sqrt()));
        assert!((p - exact).abs() < 0.02, "{p} against {exact}");
    }

    #[test]
    fn burn_in_that_keeps_nothing_is_refused() {
        let mut simulate =
            |ex: &mut Executor<'_>| -> Result<(), RunError> { ex.sample("mu", normal(0.0, 1.0)).map(|_| ()) };
        let config = ChainConfig { steps: 10, burn_in: 10, thin: 1 };
        let err = run_chain(&mut simulate, (&[], None), config, (1, 0), &|_| Ok(vec![])).unwrap_err();
        assert!(matches!(err, RmhError::KeepsNothing { .. }), "{err}");
    }
}
