//! Our tau simulator served over PPX: the simulator's role (pyprob_cpp's),
//! so pyprob's `RemoteModel`, or our own [`RemoteSimulator`], can put it
//! under inference. Each `Run` executes `tau::simulate` in
//! [`Mode::Driven`]: every choice is sent as a `Sample` and its value is
//! the system's; the calorimeter is drawn here and sent as an `Observe`
//! with its value (the system keeps it unless it conditions on its own).
//!
//! [`RemoteSimulator`]: super::remote::RemoteSimulator

use std::time::Duration;

use formats::lmdb::trace_codec::Distribution;
use ppx::codec::{body_name, message, scalar, tensor, values};
use ppx::schema::{self, Message, MessageBody};
use ppx::{Replier, TransportError};

use super::executor::{Driver, Executor, Mode, Recorded, RunError, TensorObservation};
use super::ppx_map::to_ppx;
use super::tau;
use crate::random::mix;

/// Stream of a served run's own randomness (the observation noise) in [`mix`].
const STREAM: u64 = 41;

/// What the server calls the model in its handshake.
pub const MODEL_NAME: &str = "tau decay in a 20x35x35 calorimeter (stagehand simgen traces)";

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Seed of the observation noise (run `i` uses stream `i` of it).
    pub seed: u64,
    /// Calorimeter noise per voxel, GeV.
    pub noise: f32,
    /// How long a system may take to answer within a run.
    pub timeout: Duration,
    /// Stop after this many completed runs (none: serve until killed).
    pub runs: Option<u64>,
}

/// What was served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    /// Runs completed.
    pub runs: u64,
    /// Runs abandoned because the system left or broke the protocol.
    pub abandoned: u64,
}

/// The system's end of a driven run, over the socket.
struct Socket<'r> {
    replier: &'r mut Replier,
    timeout: Duration,
    /// A request that arrived when a run's answer was due (a new system
    /// after the last one left mid-run): served once the run is abandoned.
    pending: Option<Message>,
    /// Whether the last request is still unanswered (a REP socket must
    /// answer each request once before it can receive the next).
    owes_reply: bool,
}

impl Socket<'_> {
    /// Send `body` as the reply to the last request and return the next
    /// request, which must be the `awaited` answer.
    fn exchange(
        &mut self,
        body: MessageBody,
        awaited: &str,
        is_awaited: fn(&MessageBody) -> bool,
    ) -> Result<MessageBody, String> {
        self.replier.reply(&message(body)).map_err(|e| e.to_string())?;
        self.owes_reply = false;
        let next = self.replier.request_within(self.timeout, awaited).map_err(|e| e.to_string())?;
        self.owes_reply = true;
        match next.body {
            Some(body) if is_awaited(&body) => Ok(body),
            _ => {
                let got = body_name(&next);
                self.pending = Some(next);
                Err(format!("the system sent {got} where {awaited} was due"))
            }
        }
    }
}

impl Driver for Socket<'_> {
    fn sample(&mut self, site: &str, _address: &str, prior: &Distribution, controlled: bool) -> Result<f64, String> {
        let sample = schema::Sample {
            address: Some(site.to_owned()),
            name: Some(String::new()),
            distribution: Some(to_ppx(prior)),
            control: controlled,
        };
        let is_result = |b: &MessageBody| matches!(b, MessageBody::SampleResult(_));
        match self.exchange(MessageBody::Sample(Box::new(sample)), "SampleResult", is_result)? {
            MessageBody::SampleResult(result) => match values(result.result.as_deref()) {
                [value] => Ok(*value),
                other => Err(format!("at {site}: the system's value has {} elements, not one", other.len())),
            },
            _ => Err(format!("at {site}: no SampleResult")),
        }
    }

    fn observe(&mut self, site: &str, likelihood: &Distribution, value: f64) -> Result<(), String> {
        let observe = schema::Observe {
            address: Some(site.to_owned()),
            name: Some(site.to_owned()),
            distribution: Some(to_ppx(likelihood)),
            value: Some(Box::new(scalar(value))),
        };
        let is_result = |b: &MessageBody| matches!(b, MessageBody::ObserveResult(_));
        self.exchange(MessageBody::Observe(Box::new(observe)), "ObserveResult", is_result).map(drop)
    }

    fn observe_tensor(&mut self, site: &str, t: TensorObservation<'_>) -> Result<(), String> {
        let shape: Vec<i32> = t.shape.iter().map(|&d| d as i32).collect();
        let as_f64 = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        let normal = schema::Normal {
            mean: Some(Box::new(tensor(as_f64(t.mean), shape.clone()))),
            stddev: Some(Box::new(scalar(f64::from(t.noise)))),
        };
        let observe = schema::Observe {
            address: Some(site.to_owned()),
            name: Some(site.to_owned()),
            distribution: Some(schema::Distribution::Normal(Box::new(normal))),
            value: Some(Box::new(tensor(as_f64(t.value), shape))),
        };
        let is_result = |b: &MessageBody| matches!(b, MessageBody::ObserveResult(_));
        self.exchange(MessageBody::Observe(Box::new(observe)), "ObserveResult", is_result).map(drop)
    }
}

/// Serve the tau simulator on `replier` until `config.runs` runs are done
/// (or for ever), calling `on_run` with each completed run as this end
/// recorded it and `on_abandoned` with why a run was given up. A system
/// that leaves mid-run, or breaks the protocol, costs that run only.
pub fn serve(
    replier: &mut Replier,
    config: &ServeConfig,
    mut on_run: impl FnMut(u64, &Recorded),
    mut on_abandoned: impl FnMut(&RunError),
) -> Result<Served, TransportError> {
    let mut served = Served::default();
    let mut pending: Option<Message> = None;
    while config.runs.is_none_or(|runs| served.runs < runs) {
        let request = match pending.take() {
            Some(request) => request,
            None => replier.next_request()?,
        };
        let reply = match request.body {
            Some(MessageBody::Handshake(_)) => MessageBody::HandshakeResult(Box::new(schema::HandshakeResult {
                system_name: Some(super::remote::SYSTEM_NAME.into()),
                model_name: Some(MODEL_NAME.into()),
            })),
            Some(MessageBody::Run(_)) => {
                let mut socket = Socket { replier, timeout: config.timeout, pending: None, owes_reply: true };
                let seed = mix(config.seed, served.runs + served.abandoned, STREAM);
                let mut ex = Executor::new(Mode::Driven(seed, &mut socket)).with_observation_noise(config.noise);
                let run = tau::simulate(&mut ex).and_then(|()| ex.finish());
                pending = socket.pending.take();
                let owes_reply = socket.owes_reply;
                match run {
                    Ok(run) => {
                        on_run(served.runs, &run);
                        served.runs += 1;
                        MessageBody::RunResult(Box::new(schema::RunResult { result: None }))
                    }
                    Err(e) => {
                        on_abandoned(&e);
                        served.abandoned += 1;
                        // A system that left is owed no reply, and a new
                        // request that arrived instead is served next; a
                        // system still there whose answer could not be used
                        // is told with a Reset (pyprob: "protocol out of sync").
                        if !owes_reply || pending.is_some() {
                            continue;
                        }
                        MessageBody::Reset(Box::new(schema::Reset {}))
                    }
                }
            }
            _ => {
                // A REP socket must answer every request: a Reset tells the
                // system its message made no sense here.
                on_abandoned(&RunError::Remote(format!("a system sent {} outside a run", body_name(&request))));
                MessageBody::Reset(Box::new(schema::Reset {}))
            }
        };
        replier.reply(&message(reply))?;
    }
    Ok(served)
}
