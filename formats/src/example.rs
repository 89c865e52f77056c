//! `tf.train.Example` (tensorflow/core/example/{example,feature}.proto) as
//! hand-written `prost` messages, so no `protoc` runs at build time.
//!
//! Features are kept in a `BTreeMap`, so encoding is deterministic and equals
//! protobuf's deterministic serialisation (map entries sorted by key).

use std::collections::BTreeMap;

use prost::Message;

/// A list of byte strings.
#[derive(Clone, PartialEq, Message)]
pub struct BytesList {
    /// Values.
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub value: Vec<Vec<u8>>,
}

/// A list of floats (packed).
#[derive(Clone, PartialEq, Message)]
pub struct FloatList {
    /// Values.
    #[prost(float, repeated, tag = "1")]
    pub value: Vec<f32>,
}

/// A list of 64-bit integers (packed).
#[derive(Clone, PartialEq, Message)]
pub struct Int64List {
    /// Values.
    #[prost(int64, repeated, tag = "1")]
    pub value: Vec<i64>,
}

/// One feature: exactly one kind of list.
#[derive(Clone, PartialEq, Message)]
pub struct Feature {
    /// The list.
    #[prost(oneof = "Kind", tags = "1, 2, 3")]
    pub kind: Option<Kind>,
}

/// The kinds of list a feature can hold.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Kind {
    /// Byte strings.
    #[prost(message, tag = "1")]
    BytesList(BytesList),
    /// Floats.
    #[prost(message, tag = "2")]
    FloatList(FloatList),
    /// Integers.
    #[prost(message, tag = "3")]
    Int64List(Int64List),
}

/// Name -> feature.
#[derive(Clone, PartialEq, Message)]
pub struct Features {
    /// The features, sorted by name.
    #[prost(btree_map = "string, message", tag = "1")]
    pub feature: BTreeMap<String, Feature>,
}

/// A training example.
#[derive(Clone, PartialEq, Message)]
pub struct Example {
    /// Its features.
    #[prost(message, optional, tag = "1")]
    pub features: Option<Features>,
}

/// A feature that is missing or of the wrong kind, or bytes that are not an Example.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExampleError {
    /// The protobuf bytes do not decode.
    #[error("not a tf.train.Example: {0}")]
    Decode(#[from] prost::DecodeError),
    /// No feature of that name.
    #[error("feature {0:?} is missing")]
    Missing(String),
    /// The feature exists with another kind.
    #[error("feature {name:?} is not a {expected}")]
    WrongKind {
        /// Feature name.
        name: String,
        /// The kind that was expected.
        expected: &'static str,
    },
}

impl Example {
    /// An empty example.
    pub fn new() -> Self {
        Example { features: Some(Features::default()) }
    }

    fn insert(mut self, name: &str, kind: Kind) -> Self {
        self.features
            .get_or_insert_with(Features::default)
            .feature
            .insert(name.to_owned(), Feature { kind: Some(kind) });
        self
    }

    /// Add a bytes feature.
    pub fn with_bytes(self, name: &str, values: Vec<Vec<u8>>) -> Self {
        self.insert(name, Kind::BytesList(BytesList { value: values }))
    }

    /// Add a float feature.
    pub fn with_floats(self, name: &str, values: Vec<f32>) -> Self {
        self.insert(name, Kind::FloatList(FloatList { value: values }))
    }

    /// Add an int64 feature.
    pub fn with_int64s(self, name: &str, values: Vec<i64>) -> Self {
        self.insert(name, Kind::Int64List(Int64List { value: values }))
    }

    /// Encode as protobuf bytes (what a TFRecord of Examples holds).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode_to_vec()
    }

    /// Decode from protobuf bytes.
    pub fn decode_bytes(bytes: &[u8]) -> Result<Self, ExampleError> {
        Ok(Example::decode(bytes)?)
    }

    fn kind(&self, name: &str) -> Result<&Kind, ExampleError> {
        self.features
            .as_ref()
            .and_then(|f| f.feature.get(name))
            .and_then(|f| f.kind.as_ref())
            .ok_or_else(|| ExampleError::Missing(name.to_owned()))
    }

    /// The values of a bytes feature.
    pub fn bytes(&self, name: &str) -> Result<&[Vec<u8>], ExampleError> {
        match self.kind(name)? {
            Kind::BytesList(l) => Ok(&l.value),
            _ => Err(wrong(name, "bytes_list")),
        }
    }

    /// The values of a float feature.
    pub fn floats(&self, name: &str) -> Result<&[f32], ExampleError> {
        match self.kind(name)? {
            Kind::FloatList(l) => Ok(&l.value),
            _ => Err(wrong(name, "float_list")),
        }
    }

    /// The values of an int64 feature.
    pub fn int64s(&self, name: &str) -> Result<&[i64], ExampleError> {
        match self.kind(name)? {
            Kind::Int64List(l) => Ok(&l.value),
            _ => Err(wrong(name, "int64_list")),
        }
    }
}

fn wrong(name: &str, expected: &'static str) -> ExampleError {
    ExampleError::WrongKind { name: name.to_owned(), expected }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_round_trips_every_kind() {
        let ex = Example::new()
            .with_bytes("b", vec![b"one".to_vec(), Vec::new()])
            .with_floats("f", vec![1.5, -2.0])
            .with_int64s("i", vec![-1, 1 << 40]);
        let back = Example::decode_bytes(&ex.encode_to_vec()).unwrap();
        assert_eq!(back, ex);
        assert_eq!(back.floats("f").unwrap(), &[1.5, -2.0]);
        assert_eq!(back.int64s("i").unwrap(), &[-1, 1 << 40]);
        assert_eq!(back.bytes("b").unwrap()[0], b"one");
    }

    #[test]
    fn missing_and_mistyped_features_are_named() {
        let ex = Example::new().with_floats("y", vec![1.0]);
        assert!(ex.bytes("x").unwrap_err().to_string().contains("\"x\""));
        assert!(ex.bytes("y").unwrap_err().to_string().contains("bytes_list"));
    }

    #[test]
    fn garbage_is_a_decode_error() {
        assert!(Example::decode_bytes(&[0xff, 0xff, 0xff]).is_err());
    }
}
