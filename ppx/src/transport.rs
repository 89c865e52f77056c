//! PPX over ZeroMQ: the system's REQ socket ([`Requester`]) and the
//! simulator's REP socket ([`Replier`]), as pyprob's `ModelServer` and
//! pyprob_cpp open them.
//!
//! ZeroMQ hides a dead peer: a REQ socket whose server has gone waits for
//! ever for a reply that cannot come, reconnecting quietly. Every socket
//! here therefore has a monitor, and a wait for a message polls both: a
//! peer that disconnects while a message is awaited is
//! [`TransportError::PeerClosed`] at once, a peer that says nothing is
//! [`TransportError::Timeout`] after the caller's limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::codec::{self, CodecError};
use crate::schema::Message;

/// A failure to carry a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// ZeroMQ refused an operation.
    #[error("{what} {address}: {source}")]
    Zmq {
        /// What was being done.
        what: &'static str,
        /// The endpoint.
        address: String,
        /// ZeroMQ's error.
        source: zmq::Error,
    },
    /// The peer disconnected while a message was awaited.
    #[error("the PPX peer at {address} closed the connection while {awaited} was awaited")]
    PeerClosed {
        /// The endpoint.
        address: String,
        /// What was awaited.
        awaited: String,
    },
    /// Nothing came within the limit.
    #[error("no PPX message from {address} within {seconds:.0} s while {awaited} was awaited")]
    Timeout {
        /// The endpoint.
        address: String,
        /// The limit.
        seconds: f64,
        /// What was awaited.
        awaited: String,
    },
    /// The peer sent bytes that are not a PPX message.
    #[error("from {address}: {source}")]
    Codec {
        /// The endpoint.
        address: String,
        /// What is wrong with the bytes.
        source: CodecError,
    },
}

/// Monitor endpoints must be unique within the process.
static MONITORS: AtomicU64 = AtomicU64::new(0);

/// A socket with the monitor that reports its peers' disconnects.
struct Monitored {
    socket: zmq::Socket,
    monitor: zmq::Socket,
    address: String,
    // Declared last: a context is terminated after its sockets close.
    _context: zmq::Context,
}

impl Monitored {
    fn open(kind: zmq::SocketType, address: &str) -> Result<Self, TransportError> {
        let zmq_error = |what| move |source| TransportError::Zmq { what, address: address.to_owned(), source };
        let context = zmq::Context::new();
        let socket = context.socket(kind).map_err(zmq_error("opening a socket for"))?;
        // Unsent messages are dropped at close rather than holding the
        // process open for a peer that is gone.
        socket.set_linger(0).map_err(zmq_error("configuring the socket for"))?;
        let endpoint = format!("inproc://ppx-monitor-{}", MONITORS.fetch_add(1, Ordering::Relaxed));
        socket
            .monitor(&endpoint, zmq::SocketEvent::DISCONNECTED as i32)
            .map_err(zmq_error("monitoring the socket for"))?;
        let monitor = context.socket(zmq::PAIR).map_err(zmq_error("opening a monitor for"))?;
        monitor.connect(&endpoint).map_err(zmq_error("connecting the monitor for"))?;
        Ok(Monitored { socket, monitor, address: address.to_owned(), _context: context })
    }

    fn zmq_error(&self, what: &'static str) -> impl FnOnce(zmq::Error) -> TransportError + '_ {
        move |source| TransportError::Zmq { what, address: self.address.clone(), source }
    }

    /// Forget disconnects reported before now (a client that left between runs).
    fn drain_events(&self) -> Result<(), TransportError> {
        while self.monitor.poll(zmq::POLLIN, 0).map_err(self.zmq_error("polling the monitor of"))? > 0 {
            self.monitor.recv_multipart(0).map_err(self.zmq_error("reading the monitor of"))?;
        }
        Ok(())
    }

    fn send(&self, message: &Message) -> Result<(), TransportError> {
        self.socket.send(codec::encode(message), 0).map_err(self.zmq_error("sending to"))
    }

    /// The next message, unless the peer disconnects or `limit` passes.
    fn receive(&self, limit: Option<Duration>, awaited: &str) -> Result<Message, TransportError> {
        let start = Instant::now();
        loop {
            let timeout_ms = match limit {
                None => -1,
                Some(limit) => {
                    let left = limit.saturating_sub(start.elapsed());
                    if left.is_zero() {
                        return Err(TransportError::Timeout {
                            address: self.address.clone(),
                            seconds: limit.as_secs_f64(),
                            awaited: awaited.to_owned(),
                        });
                    }
                    i64::try_from(left.as_millis()).unwrap_or(i64::MAX).max(1)
                }
            };
            let mut items = [self.socket.as_poll_item(zmq::POLLIN), self.monitor.as_poll_item(zmq::POLLIN)];
            zmq::poll(&mut items, timeout_ms).map_err(self.zmq_error("waiting for"))?;
            if items[0].is_readable() {
                let bytes = self.socket.recv_bytes(0).map_err(self.zmq_error("receiving from"))?;
                return codec::decode(&bytes)
                    .map_err(|source| TransportError::Codec { address: self.address.clone(), source });
            }
            if items[1].is_readable() {
                self.monitor.recv_multipart(0).map_err(self.zmq_error("reading the monitor of"))?;
                return Err(TransportError::PeerClosed { address: self.address.clone(), awaited: awaited.to_owned() });
            }
        }
    }
}

/// The probabilistic programming system's end: sends a request, awaits
/// the reply.
pub struct Requester {
    inner: Monitored,
    timeout: Duration,
}

impl Requester {
    /// Connect to a simulator at `address` (`tcp://host:port`,
    /// `ipc:///path`); every reply must come within `timeout`. ZeroMQ
    /// connects lazily: a simulator that is not there yet is waited for
    /// (up to `timeout` on the first request).
    pub fn connect(address: &str, timeout: Duration) -> Result<Self, TransportError> {
        let inner = Monitored::open(zmq::REQ, address)?;
        inner.socket.connect(address).map_err(inner.zmq_error("connecting to"))?;
        Ok(Requester { inner, timeout })
    }

    /// Send `message` and return the reply.
    pub fn request(&mut self, message: &Message) -> Result<Message, TransportError> {
        self.inner.send(message)?;
        let awaited = format!("the reply to {}", codec::body_name(message));
        self.inner.receive(Some(self.timeout), &awaited)
    }

    /// The simulator's address.
    pub fn address(&self) -> &str {
        &self.inner.address
    }
}

/// The simulator's end: receives a request, sends the reply.
pub struct Replier {
    inner: Monitored,
}

impl Replier {
    /// Listen at `address` (`tcp://*:5555`; `tcp://127.0.0.1:*` takes a
    /// free port, see [`endpoint`](Self::endpoint)).
    pub fn bind(address: &str) -> Result<Self, TransportError> {
        let inner = Monitored::open(zmq::REP, address)?;
        inner.socket.bind(address).map_err(inner.zmq_error("listening at"))?;
        Ok(Replier { inner })
    }

    /// The endpoint bound, with the port chosen (for `tcp://host:*`).
    pub fn endpoint(&self) -> Result<String, TransportError> {
        match self.inner.socket.get_last_endpoint().map_err(self.inner.zmq_error("reading the endpoint of"))? {
            Ok(endpoint) => Ok(endpoint),
            Err(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        }
    }

    /// The next request of a new exchange: waits as long as it takes;
    /// clients that left before it are forgotten.
    pub fn next_request(&mut self) -> Result<Message, TransportError> {
        self.inner.drain_events()?;
        loop {
            match self.inner.receive(None, "a request") {
                // A client leaving between exchanges is not an error.
                Err(TransportError::PeerClosed { .. }) => continue,
                other => return other,
            }
        }
    }

    /// The next request within an exchange (the reply to a `Sample` this
    /// end sent): an error if the client leaves or `timeout` passes.
    pub fn request_within(&mut self, timeout: Duration, awaited: &str) -> Result<Message, TransportError> {
        self.inner.receive(Some(timeout), awaited)
    }

    /// Reply to the request received last.
    pub fn reply(&mut self, message: &Message) -> Result<(), TransportError> {
        self.inner.send(message)
    }
}
