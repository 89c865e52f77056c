//! Our TFRecord bytes against the `tfrecord` crate, used as an oracle only.
//!
//! Framing is compared byte for byte over arbitrary payloads. For Examples,
//! the oracle keeps features in a `HashMap`, so its encoding of a
//! multi-feature Example depends on hash order; single-feature Examples are
//! compared byte for byte, and multi-feature ones (CosmoFlow's `x` and `y`)
//! are compared after decoding each side with the other's decoder.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use formats::cosmoflow::{CosmoSample, CosmoShape};
use formats::example::Example;
use formats::tfrecord::{self as framing, RecordWriter};
use proptest::prelude::*;
use prost::Message;
use tfrecord::protobuf::{BytesList, Feature, FloatList, Int64List, feature::Kind};

fn ours(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut w = RecordWriter::new(Vec::new());
    for p in payloads {
        w.write_record(p).unwrap();
    }
    w.into_inner()
}

fn oracle(payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = tfrecord::BytesWriter::from_writer(&mut out).unwrap();
        for p in payloads {
            w.send(p.clone()).unwrap();
        }
        w.flush().unwrap();
    }
    out
}

fn oracle_example(features: Vec<(&str, Kind)>) -> tfrecord::Example {
    let feature: HashMap<String, Feature> =
        features.into_iter().map(|(k, kind)| (k.to_owned(), Feature { kind: Some(kind) })).collect();
    tfrecord::Example { features: Some(tfrecord::protobuf::Features { feature }) }
}

fn oracle_example_bytes(example: &tfrecord::Example) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = tfrecord::ExampleWriter::from_writer(&mut out).unwrap();
        w.send(example.clone()).unwrap();
        w.flush().unwrap();
    }
    out
}

proptest! {
    #[test]
    fn framing_is_byte_identical_to_the_oracle(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..8)
    ) {
        prop_assert_eq!(ours(&payloads), oracle(&payloads));
    }

    #[test]
    fn single_feature_examples_are_byte_identical(
        bytes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..4),
        floats in prop::collection::vec(-1e6f32..1e6, 0..16),
        ints in prop::collection::vec(any::<i64>(), 0..16),
    ) {
        let cases = [
            (Example::new().with_bytes("x", bytes.clone()), oracle_example(vec![("x", Kind::BytesList(BytesList { value: bytes.clone() }))])),
            (Example::new().with_floats("y", floats.clone()), oracle_example(vec![("y", Kind::FloatList(FloatList { value: floats.clone() }))])),
            (Example::new().with_int64s("n", ints.clone()), oracle_example(vec![("n", Kind::Int64List(Int64List { value: ints.clone() }))])),
        ];
        for (mine, theirs) in cases {
            prop_assert_eq!(ours(&[mine.encode_to_vec()]), oracle_example_bytes(&theirs));
        }
    }
}

#[test]
fn cosmoflow_records_agree_with_the_oracle_in_both_directions() {
    let shape = CosmoShape { size: 8, channels: 4 };
    let x: Vec<i16> = (0..shape.voxels()).map(|i| (i % 97) as i16 - 3).collect();
    let sample = CosmoSample::new(shape, x.clone(), [0.1, -0.5, 0.9, -1.0]).unwrap();
    let raw: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();

    // The oracle's file, read by us.
    let theirs = oracle_example(vec![
        ("x", Kind::BytesList(BytesList { value: vec![raw] })),
        ("y", Kind::FloatList(FloatList { value: vec![0.1, -0.5, 0.9, -1.0] })),
    ]);
    let file = oracle_example_bytes(&theirs);
    let record = framing::records(&file).next().unwrap().unwrap();
    assert_eq!(CosmoSample::from_example_bytes(record.data, shape).unwrap(), sample);

    // Our file, read by the oracle's decoder.
    let mine = ours(&[sample.to_example_bytes()]);
    let record = framing::records(&mine).next().unwrap().unwrap();
    let _ = record;
    let config = tfrecord::RecordReaderConfig { check_integrity: true };
    let decoded: Vec<tfrecord::Example> =
        tfrecord::ExampleIter::from_reader(&mine[..], config).collect::<Result<_, _>>().unwrap();
    assert_eq!(decoded, vec![theirs]);
}
