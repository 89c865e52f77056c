//! The Probabilistic Programming eXecution protocol (PPX) of pyprob and
//! Etalumis (Baydin et al., "Etalumis: Bringing Probabilistic Programming
//! to Scientific Simulators at Scale", SC19, Sec. IV-A): a simulator and a
//! probabilistic programming system, in any two languages, exchange
//! flatbuffers messages over a ZeroMQ request/reply pair. The system (the
//! requester) sends `Run`; the simulator (the replier) answers every random
//! choice with a `Sample` (or `Observe`, `Tag`) the system replies to with
//! the value, until it answers `RunResult`.
//!
//! This crate is the protocol only: [`schema`] holds the message types of
//! PPX 1.0.0 (generated from `schema/ppx.fbs`, pyprob's schema unchanged),
//! [`codec`] turns them into bytes and back without I/O, and [`transport`]
//! carries them over ZeroMQ with timeouts and disconnect detection, so a
//! peer that dies is an error and never a hang. What a message means to a
//! simulator (addresses, distributions) is the caller's (`simgen::traces`).
//!
//! ```
//! use ppx::codec::{decode, encode, scalar};
//! use ppx::schema::{Message, MessageBody, SampleResult};
//!
//! let reply = Message {
//!     body: Some(MessageBody::SampleResult(Box::new(SampleResult { result: Some(Box::new(scalar(0.25))) }))),
//! };
//! assert_eq!(decode(&encode(&reply)).unwrap(), reply);
//! ```

pub mod codec;
pub mod transport;

// planus writes `unsafe` blocks into the code it generates (unchecked
// writes into a buffer it sized itself); the generated file is not edited.
#[allow(unsafe_code, missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
mod generated;

/// The PPX 1.0.0 message types: [`schema::Message`] with its
/// [`schema::MessageBody`] union, [`schema::Tensor`] and the
/// [`schema::Distribution`] union.
pub mod schema {
    pub use crate::generated::ppx::*;
}

pub use codec::CodecError;
pub use transport::{Replier, Requester, TransportError};
