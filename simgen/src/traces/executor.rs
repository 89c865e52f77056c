//! The probabilistic-program interface a simulator is written against, in
//! the style of pyprob (Baydin et al., "Etalumis: bringing probabilistic
//! programming to scientific simulators at scale", SC19, Sec. III):
//! `sample(site, distribution)` for a random choice and `observe(site,
//! distribution, value)` for a conditioned one. Each call gets an address,
//! `site__Distribution__instance`, where `site` names the call site
//! (`function__variable`) and `instance` counts the calls of that site and
//! distribution in this run from 1, so a loop's draws have distinct, stable
//! addresses. A run is a [`Recorded`] trace.
//!
//! Three modes ([`Mode`]): **prior** draws every choice from its
//! distribution; **replay** takes the values of a recorded trace, so a
//! trace can be re-executed (and a simulator that diverges is caught at the
//! first address that differs); **proposal** draws controlled choices from
//! values a [`Proposal`] supplies for each address and records both
//! log-densities, for importance sampling with an inference network; a run
//! [conditioned](Executor::conditioned_on) on an observation scores that
//! observation instead of drawing one.

use std::collections::HashMap;

use formats::lmdb::trace_codec::Distribution;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use super::distribution::{self, InvalidDistribution};

/// A proposed value and its log density under the proposal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proposed {
    /// The value.
    pub value: f64,
    /// log q(value).
    pub log_density: f64,
}

impl Proposed {
    /// A draw from `d`, scored under it: for proposals that are one of the
    /// trace distributions.
    pub fn draw(d: &Distribution, rng: &mut ChaCha12Rng) -> Result<Proposed, InvalidDistribution> {
        let value = distribution::draw(d, rng)?;
        Ok(Proposed { value, log_density: distribution::log_prob(d, value) })
    }
}

/// Draws each controlled choice for proposal mode. The proposal draws the
/// value itself, so it can be any distribution it can sample and score
/// (an inference network's mixtures), not only the trace's five.
pub trait Proposal {
    /// A value for `address`, given its prior and the choices made so far
    /// in this run, drawn with `rng`, and its log proposal density; an
    /// error says why no value could be proposed.
    fn propose(
        &mut self,
        address: &str,
        prior: &Distribution,
        so_far: &[Choice],
        rng: &mut ChaCha12Rng,
    ) -> Result<Proposed, String>;
}

/// The prior as its own proposal: importance weights of exactly 1.
pub struct PriorProposal;

impl Proposal for PriorProposal {
    fn propose(
        &mut self,
        _address: &str,
        prior: &Distribution,
        _so_far: &[Choice],
        rng: &mut ChaCha12Rng,
    ) -> Result<Proposed, String> {
        Proposed::draw(prior, rng).map_err(|e| e.to_string())
    }
}

/// How the executor makes its choices.
pub enum Mode<'a> {
    /// Draw from the priors, with a stream seeded by the seed.
    Prior(u64),
    /// Take the values (and the observation) of a recorded trace.
    Replay(&'a Recorded),
    /// Draw controlled choices from the proposal, the rest from their priors.
    Proposal(u64, &'a mut dyn Proposal),
    /// Ask the driver for every choice and tell it every observation: the
    /// simulator runs under another system's inference (PPX, served).
    /// Observations are drawn with the seeded stream.
    Driven(u64, &'a mut dyn Driver),
}

/// The other end of a driven run ([`Mode::Driven`]): a probabilistic
/// programming system that picks each value and sees each observation.
/// Errors say why the system could not answer.
pub trait Driver {
    /// The value of the choice at `site` (address `address`) under `prior`.
    fn sample(&mut self, site: &str, address: &str, prior: &Distribution, controlled: bool) -> Result<f64, String>;
    /// `value` observed at `site` under `likelihood`.
    fn observe(&mut self, site: &str, likelihood: &Distribution, value: f64) -> Result<(), String>;
    /// The tensor observation `value` (shape `shape`) at `site`:
    /// independent normals of deviation `noise` around `mean`.
    fn observe_tensor(&mut self, site: &str, tensor: TensorObservation<'_>) -> Result<(), String>;
}

/// A tensor observation as a driver sees it.
#[derive(Debug, Clone, Copy)]
pub struct TensorObservation<'v> {
    /// Its shape, C order.
    pub shape: &'v [usize],
    /// The means.
    pub mean: &'v [f32],
    /// The deviation of every value.
    pub noise: f32,
    /// The values observed.
    pub value: &'v [f32],
}

/// One random choice of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// `site__Distribution__instance`.
    pub address: String,
    /// Whether inference proposes it (observed and uncontrolled choices do not).
    pub controlled: bool,
    /// Its prior (or, for an observation, its likelihood).
    pub distribution: Distribution,
    /// The value.
    pub value: f64,
    /// log prior density of the value.
    pub log_prior: f64,
    /// log proposal density of the value (the prior's under prior and replay).
    pub log_proposal: f64,
}

/// A run: its choices in order and its tensor observation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Recorded {
    /// Every `sample` and `observe`, in execution order.
    pub choices: Vec<Choice>,
    /// Address of the tensor observation.
    pub observation_address: String,
    /// The tensor observation (for example a calorimeter's voxels).
    pub observation: Vec<f32>,
    /// Its shape, C order.
    pub observation_shape: Vec<usize>,
    /// log likelihood of every observation given the choices.
    pub log_likelihood: f64,
}

impl Recorded {
    /// Sum of the controlled choices' log prior densities.
    pub fn log_prior(&self) -> f64 {
        self.choices.iter().filter(|c| c.controlled).map(|c| c.log_prior).sum()
    }

    /// log (prior / proposal) over the controlled choices: the importance
    /// weight of the run without its likelihood. Exactly 0 when the prior
    /// is the proposal.
    pub fn log_weight_ratio(&self) -> f64 {
        self.choices.iter().filter(|c| c.controlled).map(|c| c.log_prior - c.log_proposal).sum()
    }

    /// The trace type: the controlled addresses, in order.
    pub fn trace_type(&self) -> Vec<&str> {
        self.choices.iter().filter(|c| c.controlled).map(|c| c.address.as_str()).collect()
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Replay met a choice at another address than the trace recorded.
    #[error("replay diverged at choice {index}: the simulator asked for {simulator:?}, the trace recorded {trace:?}")]
    Diverged {
        /// Position in the run.
        index: usize,
        /// Address the simulator asked for.
        simulator: String,
        /// Address the trace holds there.
        trace: String,
    },
    /// Replay ended with recorded choices left over.
    #[error("replay ended after {used} choices; the trace recorded {recorded}, the first unused at {next:?}")]
    Unused {
        /// Choices the simulator made.
        used: usize,
        /// Choices the trace holds.
        recorded: usize,
        /// The first unused address.
        next: String,
    },
    /// A distribution's parameters are invalid.
    #[error("at {address}: {reason}")]
    Distribution {
        /// The address.
        address: String,
        /// What is wrong.
        reason: InvalidDistribution,
    },
    /// A replayed value the prior cannot produce.
    #[error("at {address}: the value {value} lies outside its distribution's support")]
    OutOfSupport {
        /// The address.
        address: String,
        /// The value.
        value: f64,
    },
    /// The proposal could not propose a value.
    #[error("at {address}: the proposal failed: {reason}")]
    Proposal {
        /// The address.
        address: String,
        /// Why.
        reason: String,
    },
    /// A conditioned run was given an observation of another size.
    #[error("the observation has {given} values; the simulator's {site} has {expected}")]
    ObservationSize {
        /// Address of the tensor observation.
        site: String,
        /// Values the simulator observes.
        expected: usize,
        /// Values given.
        given: usize,
    },
    /// The system or simulator at the other end of PPX failed or broke the protocol.
    #[error("{0}")]
    Remote(String),
    /// A loop did not end within its bound.
    #[error("at {address}: {what}")]
    Bound {
        /// The address.
        address: String,
        /// What ran out.
        what: String,
    },
}

/// Runs a simulator in one [`Mode`] and records what it did.
pub struct Executor<'a> {
    mode: Mode<'a>,
    /// The tensor observation to condition on instead of drawing one.
    observed: Option<&'a [f32]>,
    /// The observation's noise if not the simulator's own.
    observation_noise: Option<f32>,
    rng: ChaCha12Rng,
    /// Calls so far of each `site__Distribution`.
    instances: HashMap<String, u32>,
    run: Recorded,
}

fn name(d: &Distribution) -> &'static str {
    match d {
        Distribution::Normal { .. } => "Normal",
        Distribution::Uniform { .. } => "Uniform",
        Distribution::Categorical { .. } => "Categorical",
        Distribution::Poisson { .. } => "Poisson",
        Distribution::Bernoulli { .. } => "Bernoulli",
    }
}

impl<'a> Executor<'a> {
    /// An executor in `mode`.
    pub fn new(mode: Mode<'a>) -> Self {
        let seed = match &mode {
            Mode::Prior(seed) | Mode::Proposal(seed, _) | Mode::Driven(seed, _) => *seed,
            Mode::Replay(_) => 0,
        };
        Executor {
            mode,
            observed: None,
            observation_noise: None,
            rng: ChaCha12Rng::seed_from_u64(seed),
            instances: HashMap::new(),
            run: Recorded::default(),
        }
    }

    /// Condition the run on `observation`: the tensor observation is this
    /// one instead of a draw, and the run's log likelihood scores it (what
    /// importance sampling for a given observation needs).
    pub fn conditioned_on(mut self, observation: &'a [f32]) -> Self {
        self.observed = Some(observation);
        self
    }

    /// The detector's noise per value of the tensor observation, instead of
    /// the simulator's own: observations are drawn with it and scored with
    /// it. A conditioned run given a deviation wider than the one its
    /// observation was made with scores with an approximate (ABC-style)
    /// likelihood.
    pub fn with_observation_noise(mut self, noise: f32) -> Self {
        self.observation_noise = Some(noise);
        self
    }

    fn address(&mut self, site: &str, d: &Distribution) -> String {
        let base = format!("{site}__{}", name(d));
        let n = match self.instances.get_mut(&base) {
            Some(n) => {
                *n += 1;
                *n
            }
            None => {
                self.instances.insert(base.clone(), 1);
                1
            }
        };
        format!("{base}__{n}")
    }

    /// The recorded choice at the next position, checked against `address`.
    fn replayed(&self, address: &str) -> Result<Option<f64>, RunError> {
        let Mode::Replay(trace) = &self.mode else { return Ok(None) };
        let index = self.run.choices.len();
        match trace.choices.get(index) {
            Some(c) if c.address == address => Ok(Some(c.value)),
            other => Err(RunError::Diverged {
                index,
                simulator: address.to_owned(),
                trace: other.map_or_else(|| "(the end of the trace)".to_owned(), |c| c.address.clone()),
            }),
        }
    }

    fn invalid(address: &str) -> impl FnOnce(InvalidDistribution) -> RunError + '_ {
        move |reason| RunError::Distribution { address: address.to_owned(), reason }
    }

    /// A controlled random choice at `site`.
    pub fn sample(&mut self, site: &str, prior: Distribution) -> Result<f64, RunError> {
        self.choose(site, prior, true)
    }

    /// A random choice inference does not propose (drawn from its prior).
    pub fn sample_uncontrolled(&mut self, site: &str, prior: Distribution) -> Result<f64, RunError> {
        self.choose(site, prior, false)
    }

    fn choose(&mut self, site: &str, prior: Distribution, controlled: bool) -> Result<f64, RunError> {
        let address = self.address(site, &prior);
        distribution::validate(&prior).map_err(Self::invalid(&address))?;
        let (value, log_proposal) = match self.replayed(&address)? {
            Some(v) => (v, distribution::log_prob(&prior, v)),
            None => match &mut self.mode {
                Mode::Proposal(_, proposal) if controlled => {
                    let proposed = proposal
                        .propose(&address, &prior, &self.run.choices, &mut self.rng)
                        .map_err(|reason| RunError::Proposal { address: address.clone(), reason })?;
                    (proposed.value, proposed.log_density)
                }
                Mode::Driven(_, driver) => {
                    let v = driver.sample(site, &address, &prior, controlled).map_err(RunError::Remote)?;
                    (v, distribution::log_prob(&prior, v))
                }
                _ => {
                    let v = distribution::draw(&prior, &mut self.rng).map_err(Self::invalid(&address))?;
                    (v, distribution::log_prob(&prior, v))
                }
            },
        };
        let log_prior = distribution::log_prob(&prior, value);
        // A driving system may reuse a value its prior no longer allows
        // (pyprob's Metropolis-Hastings does, and rejects the candidate by
        // its log probability): its choice, recorded at −∞. Elsewhere such
        // a value ends the run.
        if log_prior == f64::NEG_INFINITY && !matches!(self.mode, Mode::Driven(..)) {
            return Err(RunError::OutOfSupport { address, value });
        }
        self.run.choices.push(Choice { address, controlled, distribution: prior, value, log_prior, log_proposal });
        Ok(value)
    }

    /// Condition on `value` under `likelihood` at `site` (recorded as an
    /// uncontrolled choice).
    pub fn observe(&mut self, site: &str, likelihood: Distribution, value: f64) -> Result<(), RunError> {
        let address = self.address(site, &likelihood);
        distribution::validate(&likelihood).map_err(Self::invalid(&address))?;
        let value = self.replayed(&address)?.unwrap_or(value);
        if let Mode::Driven(_, driver) = &mut self.mode {
            driver.observe(site, &likelihood, value).map_err(RunError::Remote)?;
        }
        let log_prob = distribution::log_prob(&likelihood, value);
        self.run.log_likelihood += log_prob;
        self.run.choices.push(Choice {
            address,
            controlled: false,
            distribution: likelihood,
            value,
            log_prior: log_prob,
            log_proposal: log_prob,
        });
        Ok(())
    }

    /// The tensor observation at `site`: independent normals of standard
    /// deviation `noise` around `mean`, in `shape`. Drawn under prior and
    /// proposal unless the run is [conditioned](Self::conditioned_on);
    /// under replay, the recorded observation. Its log likelihood is added.
    pub fn observe_tensor(
        &mut self,
        site: &str,
        shape: &[usize],
        mean: &[f32],
        noise: f32,
    ) -> Result<&[f32], RunError> {
        self.observe_tensor_given(site, shape, mean, noise, None)
    }

    /// [`observe_tensor`](Self::observe_tensor) of a simulator that brings
    /// its own observation (`given`): it is the observation unless the run
    /// is replayed or conditioned.
    pub fn observe_tensor_given(
        &mut self,
        site: &str,
        shape: &[usize],
        mean: &[f32],
        noise: f32,
        given: Option<&[f32]>,
    ) -> Result<&[f32], RunError> {
        let address = format!("{site}__Normal__1");
        let noise = self.observation_noise.unwrap_or(noise);
        if shape.iter().product::<usize>() != mean.len() || given.is_some_and(|g| g.len() != mean.len()) {
            return Err(RunError::ObservationSize {
                site: address,
                expected: shape.iter().product(),
                given: given.map_or(mean.len(), <[f32]>::len),
            });
        }
        let observation = match (&self.mode, self.observed.or(given)) {
            (Mode::Replay(trace), _) => {
                if trace.observation_address != address || trace.observation.len() != mean.len() {
                    return Err(RunError::Diverged {
                        index: self.run.choices.len(),
                        simulator: address,
                        trace: trace.observation_address.clone(),
                    });
                }
                trace.observation.clone()
            }
            (_, Some(given)) => {
                if given.len() != mean.len() {
                    return Err(RunError::ObservationSize { site: address, expected: mean.len(), given: given.len() });
                }
                given.to_vec()
            }
            _ => {
                use rand::Rng;
                mean.iter().map(|m| m + noise * self.rng.sample::<f32, _>(rand_distr::StandardNormal)).collect()
            }
        };
        // Σ log N(x | m, σ) = -Σ (x-m)²/(2σ²) - n (ln σ + ln(2π)/2).
        let squares: f64 = observation.iter().zip(mean).map(|(x, m)| f64::from(x - m).powi(2)).sum();
        let sigma = f64::from(noise);
        self.run.log_likelihood += -squares / (2.0 * sigma * sigma)
            - mean.len() as f64 * (sigma.ln() + 0.5 * (2.0 * std::f64::consts::PI).ln());
        if let Mode::Driven(_, driver) = &mut self.mode {
            let tensor = TensorObservation { shape, mean, noise, value: &observation };
            driver.observe_tensor(site, tensor).map_err(RunError::Remote)?;
        }
        self.run.observation_address = address;
        self.run.observation = observation;
        self.run.observation_shape = shape.to_vec();
        Ok(&self.run.observation)
    }

    /// End the run: under replay, every recorded choice must have been used.
    pub fn finish(self) -> Result<Recorded, RunError> {
        if let Mode::Replay(trace) = &self.mode
            && let Some(next) = trace.choices.get(self.run.choices.len())
        {
            return Err(RunError::Unused {
                used: self.run.choices.len(),
                recorded: trace.choices.len(),
                next: next.address.clone(),
            });
        }
        Ok(self.run)
    }
}
