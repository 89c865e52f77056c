//! One trace of a run, from the run's seed and the trace's index, and its
//! conversion to and from the trace store's records.

use formats::lmdb::trace_codec::{self, Trace};

use super::calorimeter::NOISE_GEV;
use super::executor::{Choice, Executor, Mode, Recorded, RunError};
use super::tau::{self, OBSERVATION_SITE};
use crate::random::mix;

/// Stream of a trace's randomness in [`mix`].
const STREAM: u64 = 40;

/// Trace `index` of a run seeded with `seed`, from the prior: the same
/// bytes whichever rank runs it.
pub fn run_prior(seed: u64, index: u64) -> Result<Recorded, RunError> {
    run_prior_with_noise(seed, index, NOISE_GEV)
}

/// [`run_prior`] with a calorimeter noise of `noise` GeV per voxel.
pub fn run_prior_with_noise(seed: u64, index: u64, noise: f32) -> Result<Recorded, RunError> {
    run_prior_of(&mut tau::simulate, seed, index, Some(noise))
}

/// Trace `index` of `program` (a simulator: `tau::simulate`, a
/// [`RemoteSimulator`](super::remote::RemoteSimulator)'s `run`) seeded
/// with `seed`, from the prior, its tensor observation's noise `noise` if
/// not the simulator's own. The same seed gives the built-in simulator and
/// a remote one the same choices.
pub fn run_prior_of(program: Program<'_>, seed: u64, index: u64, noise: Option<f32>) -> Result<Recorded, RunError> {
    let mut ex = Executor::new(Mode::Prior(mix(seed, index, STREAM)));
    if let Some(noise) = noise {
        ex = ex.with_observation_noise(noise);
    }
    program(&mut ex)?;
    ex.finish()
}

/// A simulator the executor runs: `tau::simulate`, or a
/// [`RemoteSimulator`](super::remote::RemoteSimulator)'s `run`.
pub type Program<'p> = &'p mut dyn FnMut(&mut Executor<'_>) -> Result<(), RunError>;

/// Re-execute the simulator on `recorded`'s values.
pub fn replay(recorded: &Recorded) -> Result<Recorded, RunError> {
    let mut ex = Executor::new(Mode::Replay(recorded));
    tau::simulate(&mut ex)?;
    ex.finish()
}

/// The store's record of a run; `address_id` gives each address its id.
pub fn to_trace(run: &Recorded, mut address_id: impl FnMut(&str) -> u32) -> Trace {
    Trace {
        shape: run.observation_shape.iter().map(|&d| d as u32).collect(),
        observation: run.observation.clone(),
        choices: run
            .choices
            .iter()
            .map(|c| trace_codec::Choice {
                address: address_id(&c.address),
                controlled: c.controlled,
                distribution: c.distribution.clone(),
                value: c.value,
            })
            .collect(),
    }
}

/// A stored trace as a run to replay, its ids named by `dictionary`. Its
/// log densities are recomputed by the replay, so they are left at 0.
pub fn from_trace(trace: &Trace, dictionary: &[String]) -> Result<Recorded, RunError> {
    let choices = trace
        .choices
        .iter()
        .map(|c| {
            let address = dictionary.get(c.address as usize).ok_or_else(|| RunError::Diverged {
                index: 0,
                simulator: String::new(),
                trace: format!("address id {} (the dictionary has {})", c.address, dictionary.len()),
            })?;
            Ok(Choice {
                address: address.clone(),
                controlled: c.controlled,
                distribution: c.distribution.clone(),
                value: c.value,
                log_prior: 0.0,
                log_proposal: 0.0,
            })
        })
        .collect::<Result<_, RunError>>()?;
    Ok(Recorded {
        choices,
        observation_address: format!("{OBSERVATION_SITE}__Normal__1"),
        observation: trace.observation.clone(),
        observation_shape: trace.shape.iter().map(|&d| d as usize).collect(),
        log_likelihood: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::super::executor::PriorProposal;
    use super::super::{distribution, executor};
    use super::*;

    #[test]
    fn replaying_a_trace_reproduces_it_bit_for_bit() {
        for index in 0..40 {
            let run = run_prior(3, index).unwrap();
            let again = replay(&run).unwrap();
            assert_eq!(again, run, "trace {index}");
            assert_eq!(again.log_likelihood.to_bits(), run.log_likelihood.to_bits());
            // Through the store's records and back.
            let names: Vec<String> = run.choices.iter().map(|c| c.address.clone()).collect();
            let stored = to_trace(&run, |a| names.iter().position(|n| n == a).unwrap() as u32);
            assert_eq!(replay(&from_trace(&stored, &names).unwrap()).unwrap(), run);
        }
    }

    #[test]
    fn recorded_log_probabilities_equal_those_recomputed() {
        for index in 0..20 {
            let run = run_prior(5, index).unwrap();
            for c in &run.choices {
                assert_eq!(c.log_prior, distribution::log_prob(&c.distribution, c.value), "{}", c.address);
                assert!(c.log_prior.is_finite(), "{}", c.address);
            }
        }
    }

    #[test]
    fn a_replay_that_diverges_names_the_first_mismatching_address() {
        let mut run = run_prior(1, 2).unwrap();
        run.choices[3].address = "tau__decay_mode__Categorical__1".into();
        let err = replay(&run).unwrap_err().to_string();
        assert!(err.contains("choice 3") && err.contains("tau__decay_mode__Categorical__1"), "{err}");
        assert!(err.contains("tau__decay_channel__Categorical__1"), "{err}");

        let mut longer = run_prior(1, 2).unwrap();
        let extra = longer.choices[0].clone();
        longer.choices.push(extra);
        let err = replay(&longer).unwrap_err().to_string();
        assert!(err.contains("tau__px__Uniform__1") && err.contains("ended"), "{err}");

        let mut outside = run_prior(1, 2).unwrap();
        outside.choices[3].value = 42.0;
        let err = replay(&outside).unwrap_err().to_string();
        assert!(err.contains("tau__decay_channel") && err.contains("42"), "{err}");
    }

    #[test]
    fn the_prior_as_proposal_gives_importance_weights_of_exactly_one() {
        for index in 0..20 {
            let mut proposal = PriorProposal;
            let mut ex = Executor::new(Mode::Proposal(mix(9, index, STREAM), &mut proposal));
            tau::simulate(&mut ex).unwrap();
            let run = ex.finish().unwrap();
            assert_eq!(run.log_weight_ratio(), 0.0);
            // And it is the prior run: the proposal draws the same values.
            assert_eq!(run, run_prior(9, index).unwrap());
        }
    }

    /// Every run makes each of the latents inference reports, once, as a
    /// controlled choice.
    #[test]
    fn every_run_makes_the_reported_latents() {
        for index in 0..30 {
            let run = run_prior(2, index).unwrap();
            for (name, address) in tau::LATENTS {
                let found: Vec<_> = run.choices.iter().filter(|c| c.address == address).collect();
                assert!(found.len() == 1 && found[0].controlled, "{name} in run {index}");
            }
        }
    }

    /// A run conditioned on an observation keeps it and scores it: given
    /// the observation the same seed drew, the run is the prior run, log
    /// likelihood included; a wider likelihood scores it higher where the
    /// residuals are noise-sized, and an observation of another size fails.
    #[test]
    fn a_conditioned_run_scores_the_given_observation() {
        let prior = run_prior(5, 3).unwrap();
        let mut proposal = PriorProposal;
        let mut ex = Executor::new(Mode::Proposal(mix(5, 3, STREAM), &mut proposal)).conditioned_on(&prior.observation);
        tau::simulate(&mut ex).unwrap();
        assert_eq!(ex.finish().unwrap(), prior);

        let other = run_prior(5, 4).unwrap();
        let mut proposal = PriorProposal;
        let mut ex = Executor::new(Mode::Proposal(mix(5, 3, STREAM), &mut proposal)).conditioned_on(&other.observation);
        tau::simulate(&mut ex).unwrap();
        let mismatched = ex.finish().unwrap();
        assert_eq!(mismatched.observation, other.observation);
        assert!(mismatched.log_likelihood < prior.log_likelihood - 1000.0, "{}", mismatched.log_likelihood);
        let mut proposal = PriorProposal;
        let mut ex = Executor::new(Mode::Proposal(mix(5, 3, STREAM), &mut proposal))
            .conditioned_on(&other.observation)
            .with_observation_noise(1.0);
        tau::simulate(&mut ex).unwrap();
        assert!(ex.finish().unwrap().log_likelihood > mismatched.log_likelihood);

        let short = vec![0f32; 10];
        let mut proposal = PriorProposal;
        let mut ex = Executor::new(Mode::Proposal(1, &mut proposal)).conditioned_on(&short);
        let err = tau::simulate(&mut ex).unwrap_err().to_string();
        assert!(err.contains("10 values") && err.contains("24500"), "{err}");
    }

    /// A proposal other than the prior: the weight is log p - log q of
    /// what it drew, and the draws follow it.
    #[test]
    fn a_narrow_proposal_is_followed_and_weighted() {
        struct Narrow;
        impl executor::Proposal for Narrow {
            fn propose(
                &mut self,
                address: &str,
                prior: &formats::lmdb::trace_codec::Distribution,
                _: &[Choice],
                rng: &mut rand_chacha::ChaCha12Rng,
            ) -> Result<executor::Proposed, String> {
                let narrow = formats::lmdb::trace_codec::Distribution::Uniform { low: 44.0, high: 44.5 };
                let q = if address == "tau__pz__Uniform__1" { &narrow } else { prior };
                executor::Proposed::draw(q, rng).map_err(|e| e.to_string())
            }
        }
        let mut proposal = Narrow;
        let mut ex = Executor::new(Mode::Proposal(11, &mut proposal));
        tau::simulate(&mut ex).unwrap();
        let run = ex.finish().unwrap();
        let pz = run.choices.iter().find(|c| c.address == "tau__pz__Uniform__1").unwrap();
        assert!((44.0..=44.5).contains(&pz.value));
        // log p - log q = ln(1/4) - ln(1/0.5) = -ln 8.
        assert!((run.log_weight_ratio() + 8f64.ln()).abs() < 1e-12, "{}", run.log_weight_ratio());
    }
}
