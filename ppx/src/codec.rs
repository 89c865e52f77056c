//! PPX messages to bytes and back: no I/O, so a corrupt or hostile
//! message is tested on its own. Messages are written without a file
//! identifier, as pyprob writes them; reading accepts either.

use planus::ReadAsRoot;

use crate::schema::{Distribution, Message, MessageBody, MessageRef, Tensor};

/// A message that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The bytes are not a PPX message.
    #[error("not a PPX message ({len} bytes): {source}")]
    Malformed {
        /// Length of what was received.
        len: usize,
        /// What planus found wrong (boxed: it is large, and rare).
        source: Box<planus::Error>,
    },
}

/// The bytes of `message`.
pub fn encode(message: &Message) -> Vec<u8> {
    let mut builder = planus::Builder::new();
    builder.finish(message, None).to_vec()
}

/// The message in `bytes`, checked against the schema.
pub fn decode(bytes: &[u8]) -> Result<Message, CodecError> {
    let malformed = |source| CodecError::Malformed { len: bytes.len(), source: Box::new(source) };
    let root = MessageRef::read_as_root(bytes).map_err(malformed)?;
    Message::try_from(root).map_err(malformed)
}

/// A tensor of `data` in `shape` (C order).
pub fn tensor(data: Vec<f64>, shape: Vec<i32>) -> Tensor {
    Tensor { data: Some(data), shape: Some(shape) }
}

/// A one-element tensor, as pyprob sends a scalar (shape `[]`).
pub fn scalar(value: f64) -> Tensor {
    tensor(vec![value], vec![])
}

/// A tensor's values (none when it has no data field).
pub fn values(tensor: Option<&Tensor>) -> &[f64] {
    tensor.and_then(|t| t.data.as_deref()).unwrap_or(&[])
}

/// A tensor's shape (none when it has no shape field).
pub fn shape(tensor: Option<&Tensor>) -> &[i32] {
    tensor.and_then(|t| t.shape.as_deref()).unwrap_or(&[])
}

/// The name of a message's body, for errors (`"Sample"`, `"Run"`, ...).
pub fn body_name(message: &Message) -> &'static str {
    match &message.body {
        None => "an empty message",
        Some(MessageBody::Handshake(_)) => "Handshake",
        Some(MessageBody::HandshakeResult(_)) => "HandshakeResult",
        Some(MessageBody::Run(_)) => "Run",
        Some(MessageBody::RunResult(_)) => "RunResult",
        Some(MessageBody::Sample(_)) => "Sample",
        Some(MessageBody::SampleResult(_)) => "SampleResult",
        Some(MessageBody::Observe(_)) => "Observe",
        Some(MessageBody::ObserveResult(_)) => "ObserveResult",
        Some(MessageBody::Tag(_)) => "Tag",
        Some(MessageBody::TagResult(_)) => "TagResult",
        Some(MessageBody::Reset(_)) => "Reset",
    }
}

/// The name of a distribution, as PPX's schema spells it.
pub fn distribution_name(distribution: &Distribution) -> &'static str {
    match distribution {
        Distribution::Normal(_) => "Normal",
        Distribution::Uniform(_) => "Uniform",
        Distribution::Categorical(_) => "Categorical",
        Distribution::Poisson(_) => "Poisson",
        Distribution::Bernoulli(_) => "Bernoulli",
        Distribution::Beta(_) => "Beta",
        Distribution::Exponential(_) => "Exponential",
        Distribution::Gamma(_) => "Gamma",
        Distribution::LogNormal(_) => "LogNormal",
        Distribution::Binomial(_) => "Binomial",
        Distribution::Weibull(_) => "Weibull",
    }
}

/// The message with only `body`.
pub fn message(body: MessageBody) -> Message {
    Message { body: Some(body) }
}
