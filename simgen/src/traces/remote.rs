//! A simulator outside this process, driven over PPX: we are the
//! probabilistic programming system (pyprob's role), the simulator any
//! program that speaks PPX. [`RemoteSimulator::run`] is a simulator like
//! `tau::simulate`: each `Sample` the simulator sends becomes a choice of
//! the [`Executor`], so prior draws, replay, proposals (inference
//! compilation) and Metropolis-Hastings all work on it unchanged.

use std::time::Duration;

use ppx::codec::{body_name, message, scalar, values};
use ppx::schema::{self, MessageBody};
use ppx::{Requester, TransportError};
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use super::distribution;
use super::executor::{Executor, RunError};
use super::ppx_map::{from_ppx, tensor_observation};

/// Why the simulator could not be reached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The simulator answered the handshake with something else.
    #[error("the simulator at {address} answered the handshake with {got}")]
    Handshake {
        /// Its address.
        address: String,
        /// What it sent.
        got: &'static str,
    },
}

/// The address rank `rank` of `size` connects to: `template` with `{rank}`
/// filled in. A PPX simulator serves one system at a time, so several
/// ranks need `{rank}` in the template (a simulator each).
pub fn rank_address(template: &str, rank: usize, size: usize) -> Result<String, String> {
    if size > 1 && !template.contains("{rank}") {
        return Err(format!(
            "--ppx {template} on {size} ranks: a PPX simulator serves one system at a time; put {{rank}} in the address"
        ));
    }
    Ok(template.replace("{rank}", &rank.to_string()))
}

/// A PPX simulator at an address.
pub struct RemoteSimulator {
    requester: Requester,
    /// The simulator's name for itself (its `HandshakeResult`).
    pub system_name: String,
    /// The model it runs.
    pub model_name: String,
}

/// What this end calls itself in the handshake.
pub const SYSTEM_NAME: &str = concat!("stagehand ", env!("CARGO_PKG_VERSION"));

impl RemoteSimulator {
    /// Connect to the simulator at `address` and shake hands; every reply
    /// must come within `timeout`.
    pub fn connect(address: &str, timeout: Duration) -> Result<Self, ConnectError> {
        let mut requester = Requester::connect(address, timeout)?;
        let hello = schema::Handshake { system_name: Some(SYSTEM_NAME.into()) };
        let reply = requester.request(&message(MessageBody::Handshake(Box::new(hello))))?;
        match reply.body {
            Some(MessageBody::HandshakeResult(result)) => Ok(RemoteSimulator {
                requester,
                system_name: result.system_name.unwrap_or_default(),
                model_name: result.model_name.unwrap_or_default(),
            }),
            _ => Err(ConnectError::Handshake { address: address.to_owned(), got: body_name(&reply) }),
        }
    }

    fn request(&mut self, body: MessageBody) -> Result<schema::Message, RunError> {
        self.requester.request(&message(body)).map_err(|e| RunError::Remote(e.to_string()))
    }

    /// One run of the simulator, every random choice made by `ex`. A run
    /// the executor gives up on (a proposed value outside its prior's
    /// support: a rejected Metropolis-Hastings candidate) is still taken to
    /// its end, so the simulator is ready for the next.
    pub fn run(&mut self, ex: &mut Executor<'_>) -> Result<(), RunError> {
        let mut reply = self.request(MessageBody::Run(Box::new(schema::Run {})))?;
        loop {
            let next = match reply.body {
                Some(MessageBody::Sample(sample)) => {
                    let site = sample.address.unwrap_or_default();
                    let distribution = sample
                        .distribution
                        .ok_or_else(|| RunError::Remote(format!("at {site}: a Sample without a distribution")))?;
                    let prior = from_ppx(&site, &distribution).map_err(|e| RunError::Remote(e.to_string()))?;
                    let chosen = if sample.control {
                        ex.sample(&site, prior.clone())
                    } else {
                        ex.sample_uncontrolled(&site, prior.clone())
                    };
                    match chosen {
                        Ok(value) => sample_result(value),
                        // A failed choice still needs an answer (see finish_abandoned).
                        Err(e) => {
                            let mut rng = ChaCha12Rng::seed_from_u64(0);
                            let answer = stand_in(&prior, &mut rng).map_err(|d| finishing(&e, &d))?;
                            return self.finish_abandoned(e, answer);
                        }
                    }
                }
                Some(MessageBody::Observe(observe)) => {
                    let acknowledged = MessageBody::ObserveResult(Box::new(schema::ObserveResult {}));
                    if let Err(e) = self.observe(ex, *observe) {
                        return self.finish_abandoned(e, acknowledged);
                    }
                    acknowledged
                }
                // Tags are values a simulator records for the user; traces do not keep them.
                Some(MessageBody::Tag(_)) => MessageBody::TagResult(Box::new(schema::TagResult {})),
                Some(MessageBody::RunResult(_)) => return Ok(()),
                _ => {
                    return Err(RunError::Remote(format!(
                        "the simulator at {} sent {} during a run",
                        self.requester.address(),
                        body_name(&reply)
                    )));
                }
            };
            reply = self.request(next)?;
        }
    }

    /// Take a run the executor gave up on (with `why`) to its end:
    /// `answer` to the message in flight, then every later choice drawn
    /// from its prior and observations acknowledged; then `why`. PPX has no
    /// message that ends a run early.
    fn finish_abandoned(&mut self, why: RunError, mut answer: MessageBody) -> Result<(), RunError> {
        // The values only keep the simulator in step; the run is discarded.
        let mut rng = ChaCha12Rng::seed_from_u64(0);
        loop {
            let reply = self.request(answer)?;
            answer = match reply.body {
                Some(MessageBody::Sample(sample)) => {
                    let site = sample.address.unwrap_or_default();
                    sample
                        .distribution
                        .ok_or_else(|| format!("at {site}: a Sample without a distribution"))
                        .and_then(|d| from_ppx(&site, &d).map_err(|e| e.to_string()))
                        .and_then(|prior| stand_in(&prior, &mut rng))
                        .map_err(|e| finishing(&why, &e))?
                }
                Some(MessageBody::Observe(_)) => MessageBody::ObserveResult(Box::new(schema::ObserveResult {})),
                Some(MessageBody::Tag(_)) => MessageBody::TagResult(Box::new(schema::TagResult {})),
                Some(MessageBody::RunResult(_)) => return Err(why),
                _ => {
                    return Err(RunError::Remote(format!(
                        "{why}; finishing the run, the simulator sent {}",
                        body_name(&reply)
                    )));
                }
            };
        }
    }

    fn observe(&mut self, ex: &mut Executor<'_>, observe: schema::Observe) -> Result<(), RunError> {
        let site = observe.address.unwrap_or_default();
        let distribution = observe
            .distribution
            .ok_or_else(|| RunError::Remote(format!("at {site}: an Observe without a distribution")))?;
        let remote = |e: super::ppx_map::Unmapped| RunError::Remote(e.to_string());
        if let Some(t) = tensor_observation(&site, &distribution, observe.value.as_deref()).map_err(remote)? {
            ex.observe_tensor_given(&site, &t.shape, &t.mean, t.noise, t.value.as_deref())?;
            return Ok(());
        }
        let likelihood = from_ppx(&site, &distribution).map_err(remote)?;
        match values(observe.value.as_deref()) {
            [value] => ex.observe(&site, likelihood, *value),
            other => Err(RunError::Remote(format!(
                "at {site}: an observed value must be one number or a tensor under a Normal; it has {} values",
                other.len()
            ))),
        }
    }
}

/// The answer to a Sample: one value.
fn sample_result(value: f64) -> MessageBody {
    MessageBody::SampleResult(Box::new(schema::SampleResult { result: Some(Box::new(scalar(value))) }))
}

/// A value drawn from `prior` that only keeps the simulator in step in a
/// run being discarded.
fn stand_in(prior: &formats::lmdb::trace_codec::Distribution, rng: &mut ChaCha12Rng) -> Result<MessageBody, String> {
    distribution::draw(prior, rng).map(sample_result).map_err(|e| e.to_string())
}

/// `why` a run was given up, and what then failed while finishing it.
fn finishing(why: &RunError, failed: &str) -> RunError {
    RunError::Remote(format!("{why}; finishing the run: {failed}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rank_gets_its_own_simulator_or_the_template_is_refused() {
        assert_eq!(rank_address("ipc:///tmp/sim-{rank}", 3, 4).as_deref(), Ok("ipc:///tmp/sim-3"));
        assert_eq!(rank_address("tcp://127.0.0.1:5555", 0, 1).as_deref(), Ok("tcp://127.0.0.1:5555"));
        assert!(rank_address("tcp://127.0.0.1:5555", 0, 2).unwrap_err().contains("{rank}"));
    }
}
