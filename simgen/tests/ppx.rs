//! PPX between our two ends over real ZeroMQ sockets: the served tau
//! simulator driven by our client makes the built-in simulator's choices;
//! a simulator that sends what traces cannot hold, or dies mid-run, is one
//! clear error. (pyprob against our ends: python/tests/test_ppx.py.)
#![allow(clippy::unwrap_used)]

use std::thread;

use rand::SeedableRng;
use std::time::{Duration, Instant};

use ppx::Replier;
use ppx::codec::{message, scalar};
use ppx::schema::{self, MessageBody};
use simgen::traces::generate::{run_prior, run_prior_of};
use simgen::traces::remote::RemoteSimulator;
use simgen::traces::serve::{ServeConfig, serve};

#[test]
fn the_served_simulator_driven_over_ppx_makes_the_built_in_choices() {
    let runs = 12;
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let config = ServeConfig { seed: 5, noise: 0.002, timeout: Duration::from_secs(30), runs: Some(runs) };
    let server = thread::spawn(move || serve(&mut replier, &config, |_, _| {}, |e| panic!("abandoned: {e}")).unwrap());
    let mut remote = RemoteSimulator::connect(&endpoint, Duration::from_secs(30)).unwrap();
    assert!(remote.model_name.contains("tau"), "{}", remote.model_name);
    for index in 0..runs {
        let over_ppx = run_prior_of(&mut |ex| remote.run(ex), 3, index, None).unwrap();
        let built_in = run_prior(3, index).unwrap();
        assert_eq!(over_ppx.choices, built_in.choices, "trace {index}");
        assert_eq!(over_ppx.observation_shape, vec![20, 35, 35]);
        assert_eq!(over_ppx.observation_address, built_in.observation_address);
        // The server drew the noise with its own seed: close, not equal.
        let largest =
            over_ppx.observation.iter().zip(&built_in.observation).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(largest > 0.0 && largest < 0.05, "trace {index}: observations differ by {largest}");
    }
    assert_eq!(server.join().unwrap().runs, runs);
}

/// A fake PPX simulator that answers `Run` with `first` and then exits.
fn one_shot_simulator(first: MessageBody) -> (String, thread::JoinHandle<()>) {
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let handle = thread::spawn(move || {
        let hello = replier.next_request().unwrap();
        assert!(matches!(hello.body, Some(MessageBody::Handshake(_))));
        let result = schema::HandshakeResult { system_name: Some("fake".into()), model_name: Some("fake".into()) };
        replier.reply(&message(MessageBody::HandshakeResult(Box::new(result)))).unwrap();
        replier.next_request().unwrap();
        replier.reply(&message(first)).unwrap();
        // Wait for the answer (or for the client to give up), then leave.
        let _ = replier.request_within(Duration::from_secs(2), "an answer");
    });
    (endpoint, handle)
}

#[test]
fn a_distribution_traces_cannot_hold_is_refused_naming_its_address() {
    let gamma = schema::Distribution::Gamma(Box::new(schema::Gamma {
        concentration: Some(Box::new(scalar(2.0))),
        rate: Some(Box::new(scalar(1.0))),
    }));
    let sample =
        schema::Sample { address: Some("model/tau".into()), name: None, distribution: Some(gamma), control: true };
    let (endpoint, simulator) = one_shot_simulator(MessageBody::Sample(Box::new(sample)));
    let mut remote = RemoteSimulator::connect(&endpoint, Duration::from_secs(30)).unwrap();
    let err = run_prior_of(&mut |ex| remote.run(ex), 1, 0, None).unwrap_err().to_string();
    assert!(err.contains("model/tau") && err.contains("Gamma"), "{err}");
    drop(remote);
    simulator.join().unwrap();
}

#[test]
fn a_simulator_that_dies_mid_run_is_an_error_within_seconds() {
    let sample = schema::Sample {
        address: Some("x".into()),
        name: None,
        distribution: Some(schema::Distribution::Normal(Box::new(schema::Normal {
            mean: Some(Box::new(scalar(0.0))),
            stddev: Some(Box::new(scalar(1.0))),
        }))),
        control: true,
    };
    let (endpoint, simulator) = one_shot_simulator(MessageBody::Sample(Box::new(sample)));
    let mut remote = RemoteSimulator::connect(&endpoint, Duration::from_secs(60)).unwrap();
    let started = Instant::now();
    // The fake answers the first Sample's value by exiting.
    let err = run_prior_of(&mut |ex| remote.run(ex), 1, 0, None).unwrap_err().to_string();
    simulator.join().unwrap();
    assert!(err.contains("closed the connection"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
}

#[test]
fn the_served_simulator_takes_a_value_outside_its_prior_as_the_system_s_choice() {
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let config = ServeConfig { seed: 1, noise: 0.002, timeout: Duration::from_secs(30), runs: Some(1) };
    let mut recorded = Vec::new();
    let server = thread::spawn(move || {
        serve(&mut replier, &config, |_, run| recorded.push(run.clone()), |e| panic!("abandoned: {e}")).unwrap();
        recorded
    });
    let mut system = ppx::Requester::connect(&endpoint, Duration::from_secs(30)).unwrap();
    let mut reply = system.request(&message(MessageBody::Run(Box::new(schema::Run {})))).unwrap();
    let mut first = true;
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(1);
    loop {
        let answer = match reply.body {
            Some(MessageBody::Sample(sample)) => {
                // px ~ Uniform(-0.5, 0.5) answered with 2.0 (pyprob's RMH
                // may reuse such a value and reject the run itself).
                let prior = simgen::traces::ppx_map::from_ppx("", sample.distribution.as_ref().unwrap()).unwrap();
                let value = if std::mem::take(&mut first) {
                    2.0
                } else {
                    simgen::traces::distribution::draw(&prior, &mut rng).unwrap()
                };
                MessageBody::SampleResult(Box::new(schema::SampleResult { result: Some(Box::new(scalar(value))) }))
            }
            Some(MessageBody::Observe(_)) => MessageBody::ObserveResult(Box::new(schema::ObserveResult {})),
            Some(MessageBody::RunResult(_)) => break,
            other => panic!("unexpected {other:?}"),
        };
        reply = system.request(&message(answer)).unwrap();
    }
    let recorded = server.join().unwrap();
    let px = &recorded[0].choices[0];
    assert_eq!((px.address.as_str(), px.value, px.log_prior), ("tau__px__Uniform__1", 2.0, f64::NEG_INFINITY));
}

/// Proposes far outside every prior's support, as a rejected
/// Metropolis-Hastings candidate does.
struct OutOfSupport;

impl simgen::traces::executor::Proposal for OutOfSupport {
    fn propose(
        &mut self,
        _: &str,
        _: &formats::lmdb::trace_codec::Distribution,
        _: &[simgen::traces::executor::Choice],
        _: &mut rand_chacha::ChaCha12Rng,
    ) -> Result<simgen::traces::executor::Proposed, String> {
        Ok(simgen::traces::executor::Proposed { value: 1e9, log_density: 0.0 })
    }
}

/// A run the executor gives up on is an error for its caller, and the
/// simulator, taken to the run's end, makes the next run as if nothing
/// had happened.
#[test]
fn an_abandoned_run_leaves_the_simulator_in_step_for_the_next() {
    use simgen::traces::executor::{Executor, Mode};
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let config = ServeConfig { seed: 5, noise: 0.002, timeout: Duration::from_secs(30), runs: Some(2) };
    let server = thread::spawn(move || serve(&mut replier, &config, |_, _| {}, |e| panic!("abandoned: {e}")).unwrap());
    let mut remote = RemoteSimulator::connect(&endpoint, Duration::from_secs(30)).unwrap();
    let mut proposal = OutOfSupport;
    let mut ex = Executor::new(Mode::Proposal(1, &mut proposal));
    let err = remote.run(&mut ex).unwrap_err();
    assert!(err.to_string().contains("1000000000"), "{err}");
    let next = run_prior_of(&mut |ex| remote.run(ex), 3, 0, None).unwrap();
    assert_eq!(next.choices, run_prior(3, 0).unwrap().choices);
    assert_eq!(server.join().unwrap().runs, 2);
}
