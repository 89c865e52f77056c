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

    /// One run of the simulator, every random choice made by `ex`.
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
                    let value =
                        if sample.control { ex.sample(&site, prior)? } else { ex.sample_uncontrolled(&site, prior)? };
                    MessageBody::SampleResult(Box::new(schema::SampleResult { result: Some(Box::new(scalar(value))) }))
                }
                Some(MessageBody::Observe(observe)) => {
                    self.observe(ex, *observe)?;
                    MessageBody::ObserveResult(Box::new(schema::ObserveResult {}))
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
