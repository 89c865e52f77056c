//! The transport against real ZeroMQ sockets: a request answered, a peer
//! that closes while an answer is due, a peer that says nothing, bytes
//! that are not a message.
#![allow(clippy::unwrap_used)]

use std::thread;
use std::time::{Duration, Instant};

use ppx::codec::{decode, encode, message, scalar};
use ppx::schema::{self, MessageBody};
use ppx::{Replier, Requester, TransportError};

fn run_message() -> schema::Message {
    message(MessageBody::Run(Box::new(schema::Run {})))
}

fn sample_result(v: f64) -> schema::Message {
    message(MessageBody::SampleResult(Box::new(schema::SampleResult { result: Some(Box::new(scalar(v))) })))
}

#[test]
fn a_request_gets_its_reply() {
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let server = thread::spawn(move || {
        let request = replier.next_request().unwrap();
        assert_eq!(request, run_message());
        replier.reply(&sample_result(0.5)).unwrap();
    });
    let mut requester = Requester::connect(&endpoint, Duration::from_secs(20)).unwrap();
    assert_eq!(requester.request(&run_message()).unwrap(), sample_result(0.5));
    server.join().unwrap();
}

#[test]
fn a_server_that_dies_while_a_reply_is_due_is_an_error_at_once() {
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let server = thread::spawn(move || {
        replier.next_request().unwrap();
        // Gone without replying: the socket closes with the thread's end.
    });
    let mut requester = Requester::connect(&endpoint, Duration::from_secs(30)).unwrap();
    let started = Instant::now();
    let err = requester.request(&run_message()).unwrap_err();
    server.join().unwrap();
    assert!(matches!(err, TransportError::PeerClosed { .. }), "{err}");
    assert!(err.to_string().contains("closed the connection"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
}

#[test]
fn a_silent_server_times_out() {
    let _replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = _replier.endpoint().unwrap();
    let mut requester = Requester::connect(&endpoint, Duration::from_millis(300)).unwrap();
    let err = requester.request(&run_message()).unwrap_err();
    assert!(matches!(err, TransportError::Timeout { .. }), "{err}");
}

#[test]
fn a_client_that_leaves_mid_exchange_is_an_error_for_the_server() {
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let client = thread::spawn(move || {
        let mut requester = Requester::connect(&endpoint, Duration::from_secs(20)).unwrap();
        requester.request(&run_message()).unwrap();
        // Leaves after the first reply, as a crashed system would.
    });
    replier.next_request().unwrap();
    replier.reply(&sample_result(1.0)).unwrap();
    client.join().unwrap();
    let err = replier.request_within(Duration::from_secs(30), "SampleResult").unwrap_err();
    assert!(matches!(err, TransportError::PeerClosed { .. }), "{err}");
}

#[test]
fn bytes_that_are_not_a_message_are_refused() {
    let mut replier = Replier::bind("tcp://127.0.0.1:*").unwrap();
    let endpoint = replier.endpoint().unwrap();
    let context = zmq::Context::new();
    let raw = context.socket(zmq::REQ).unwrap();
    raw.connect(&endpoint).unwrap();
    raw.send(&b"\xff\xff\xff\x7fnot flatbuffers"[..], 0).unwrap();
    let err = replier.next_request().unwrap_err();
    assert!(matches!(err, TransportError::Codec { .. }), "{err}");
    // Every truncation of a real message is an error or a message, never a panic.
    let bytes = encode(&sample_result(3.0));
    for end in 0..bytes.len() {
        let _ = decode(&bytes[..end]);
    }
    assert!(decode(&[]).is_err());
}
