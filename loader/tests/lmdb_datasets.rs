//! Scattering samples and simulator traces written to real LMDB stores by
//! `formats`, read back through the datasets and the worker pool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use formats::lmdb::trace_codec::{Choice, Distribution, Trace};
use formats::lmdb::{SampleStoreWriter, TraceStoreWriter};
use formats::scattering::{self, Compression, Precision, ScatteringShape};
use loader::dataset::{Dataset, DatasetError};
use loader::lmdb::{ScatteringDataset, ScatteringStores, TraceDataset};
use loader::pipeline::{Loader, LoaderConfig};
use loader::sampler::{BucketedSampler, DistributedSampler, Remainder};

const SHAPE: ScatteringShape = ScatteringShape { positions: 4, height: 6, width: 5 };

fn arrays(id: u64) -> (Vec<f32>, Vec<f32>) {
    let cbed = (0..SHAPE.cbed_len()).map(|i| ((i as u64 * 31 + id * 7) % 97) as f32 / 4.0).collect();
    let potential = (0..SHAPE.potential_len()).map(|i| (i as u64 + id) as f32 * 0.5).collect();
    (cbed, potential)
}

/// Samples with keys 10, 20, ... (not dense), f32 zstd for even ids and f16
/// plain for odd ones; `damage` flips a payload byte of that key's value.
fn write_scattering(path: &Path, n: u64, damage: Option<u64>) {
    let mut w = SampleStoreWriter::create(path).unwrap();
    let values: Vec<(u64, Vec<u8>)> = (0..n)
        .map(|id| {
            let (c, p) = arrays(id);
            let (precision, compression) =
                if id % 2 == 0 { (Precision::F32, Compression::Zstd(3)) } else { (Precision::F16, Compression::None) };
            let mut bytes = scattering::encode(SHAPE, &c, &p, precision, compression).unwrap();
            if damage == Some(id) {
                let last = bytes.len() - 1;
                bytes[last] ^= 0x40;
            }
            ((id + 1) * 10, bytes)
        })
        .collect();
    let items: Vec<(u64, &[u8])> = values.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    w.put_batch(&items).unwrap();
    w.finish().unwrap();
}

fn config(batch: usize, skip_corrupt: bool) -> LoaderConfig {
    LoaderConfig { batch, workers: 3, prefetch: 2, skip_corrupt, check_finite: false, drop_last: false }
}

#[test]
fn scattering_samples_arrive_in_sampler_order_through_three_workers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scattering");
    write_scattering(&path, 23, None);
    let ds = Arc::new(ScatteringDataset::open(&path).unwrap());
    assert_eq!((ds.len(), ds.shape(), ds.x_len(), ds.y_len()), (23, SHAPE, 120, 30));
    let sampler =
        DistributedSampler { len: ds.len(), world: 2, rank: 1, seed: 5, shuffle: true, remainder: Remainder::Pad };
    let order = sampler.indices(3);
    let mut loader = Loader::new(ds.clone(), order.clone(), config(4, false));
    let mut seen = Vec::new();
    for batch in loader.by_ref() {
        let batch = batch.unwrap();
        for (k, &index) in batch.indices.iter().enumerate() {
            let (c, p) = arrays(index as u64);
            let x = &batch.x[k * SHAPE.cbed_len()..(k + 1) * SHAPE.cbed_len()];
            if index % 2 == 0 {
                assert_eq!((x, batch.target(k)), (c.as_slice(), p.as_slice()), "sample {index}");
            } else {
                // Half precision: within its rounding.
                for (a, b) in x.iter().chain(batch.target(k)).zip(c.iter().chain(&p)) {
                    assert!((a - b).abs() <= b.abs() / 1024.0, "sample {index}: {a} vs {b}");
                }
            }
            seen.push(index);
        }
    }
    assert_eq!(seen, order);
    // The epoch's summary covers exactly what was delivered, and stops the clock.
    let summary = loader.metrics().summary();
    assert_eq!(summary.samples, order.len() as u64);
    assert!(summary.samples_per_sec > 0.0 && summary.bytes_per_sec > 0.0);
    assert!((0.0..=1.0).contains(&summary.consumer_wait_fraction));
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(loader.metrics().summary().seconds, summary.seconds);
    assert!(summary.to_string().contains(&format!("{} samples in", order.len())), "{summary}");
}

#[test]
fn damaged_scattering_sample_names_store_and_key_or_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scattering");
    write_scattering(&path, 8, Some(5));
    let ds = Arc::new(ScatteringDataset::open(&path).unwrap());
    let (mut x, mut y) = (vec![0.0; ds.x_len()], vec![0.0; ds.y_len()]);
    let err = ds.read_into(5, &mut x, &mut y).unwrap_err();
    assert!(matches!(err, DatasetError::Scattering { key: 60, .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("scattering") && message.contains("key 60") && message.contains("checksum"), "{message}");

    let failing: Vec<_> = Loader::new(ds.clone(), (0..8).collect(), config(4, false)).collect();
    assert!(failing[0].is_ok() && failing[1].is_err());

    let mut loader = Loader::new(ds, (0..8).collect(), config(4, true));
    let batches: Vec<_> = loader.by_ref().map(Result::unwrap).collect();
    assert_eq!(batches[1].indices, vec![4, 6, 7]);
    assert_eq!(batches[1].y_offsets, vec![0, 30, 60, 90]);
    assert_eq!(loader.metrics().skipped, 1);
}

#[test]
fn scattering_sample_of_another_shape_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scattering");
    let mut w = SampleStoreWriter::create(&path).unwrap();
    let (c, p) = arrays(0);
    let good = scattering::encode(SHAPE, &c, &p, Precision::F32, Compression::None).unwrap();
    let small = ScatteringShape { positions: 1, ..SHAPE };
    let other = scattering::encode(small, &c[..small.cbed_len()], &p, Precision::F32, Compression::None).unwrap();
    w.put_batch(&[(0, good.as_slice()), (1, other.as_slice())]).unwrap();
    w.finish().unwrap();
    let ds = ScatteringDataset::open(&path).unwrap();
    let (mut x, mut y) = (vec![0.0; ds.x_len()], vec![0.0; ds.y_len()]);
    ds.read_into(0, &mut x, &mut y).unwrap();
    let err = ds.read_into(1, &mut x, &mut y).unwrap_err();
    assert!(err.to_string().contains("key 1") && err.to_string().contains("shape"), "{err}");
}

/// Stores are read one after the other, each in key order; a store of
/// another shape, or a sample of another shape inside a store, is named
/// before any sample is read.
#[test]
fn several_scattering_stores_read_as_one_and_mixed_shapes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("scattering-00000.lmdb"), dir.path().join("scattering-00001.lmdb"));
    write_scattering(&a, 3, None);
    write_scattering(&b, 2, None);
    let stores = ScatteringStores::open(&[a.clone(), b.clone()]).unwrap();
    assert_eq!((stores.len(), stores.shape()), (5, SHAPE));
    stores.check_every_shape().unwrap();
    let (mut x, mut y) = (vec![0.0; stores.x_len()], vec![0.0; stores.y_len()]);
    for (index, id) in [(0, 0), (2, 2), (3, 0), (4, 1)] {
        stores.read_into(index, &mut x, &mut y).unwrap();
        let (c, _) = arrays(id);
        assert!(x.iter().zip(&c).all(|(a, b)| (a - b).abs() <= b.abs() / 1024.0), "sample {index}");
    }
    assert!(matches!(stores.read_into(5, &mut x, &mut y), Err(DatasetError::OutOfRange { index: 5, len: 5 })));
    // heed opens an environment once per process: close these first.
    drop(stores);

    let other = dir.path().join("scattering-00002.lmdb");
    let mut w = SampleStoreWriter::create(&other).unwrap();
    let small = ScatteringShape { positions: 2, ..SHAPE };
    let (c, p) = arrays(0);
    let bytes = scattering::encode(small, &c[..small.cbed_len()], &p, Precision::F32, Compression::None).unwrap();
    w.put_batch(&[(7, bytes.as_slice())]).unwrap();
    w.finish().unwrap();
    let err = ScatteringStores::open(&[a.clone(), other]).err().unwrap().to_string();
    assert!(err.contains("scattering-00002.lmdb") && err.contains("2 patterns") && err.contains("4 patterns"), "{err}");

    let mixed = dir.path().join("mixed");
    let mut w = SampleStoreWriter::create(&mixed).unwrap();
    let good = scattering::encode(SHAPE, &c, &p, Precision::F32, Compression::None).unwrap();
    w.put_batch(&[(0, good.as_slice()), (9, bytes.as_slice())]).unwrap();
    w.finish().unwrap();
    let stores = ScatteringStores::open(&[a, mixed]).unwrap();
    let err = stores.check_every_shape().unwrap_err().to_string();
    assert!(err.contains("mixed") && err.contains("sample 9") && err.contains("2 patterns"), "{err}");
}

#[test]
fn missing_or_foreign_store_is_an_error_at_open() {
    let dir = tempfile::tempdir().unwrap();
    assert!(ScatteringDataset::open(&dir.path().join("absent")).is_err());
    let traces = dir.path().join("traces");
    TraceStoreWriter::create(&traces).unwrap().finish().unwrap();
    let err = ScatteringDataset::open(&traces).err().unwrap();
    assert!(err.to_string().contains("samples"), "{err}");
    let err = TraceDataset::open(&traces).err().unwrap();
    assert!(err.to_string().contains("no trace"), "{err}");
}

/// Traces of three types with different numbers of controlled choices.
fn write_traces(path: &Path, n: usize) -> Vec<Trace> {
    let kinds: [&[&str]; 3] = [&["mass", "angle"], &["mass"], &["mass", "angle", "decay", "energy"]];
    let mut w = TraceStoreWriter::create(path).unwrap();
    let mut written = Vec::new();
    for i in 0..n {
        let kind = kinds[(i * 5 + i / 4) % 3];
        let mut choices: Vec<Choice> = kind
            .iter()
            .enumerate()
            .map(|(j, a)| Choice {
                address: w.address_id(a),
                controlled: true,
                distribution: Distribution::Normal { mean: 0.0, std: 1.0 },
                value: i as f64 + j as f64 / 10.0,
            })
            .collect();
        choices.push(Choice {
            address: w.address_id("detector"),
            controlled: false,
            distribution: Distribution::Poisson { rate: 2.0 },
            value: 3.0,
        });
        let t = Trace { shape: vec![2, 3, 2], observation: (0..12).map(|v| (v + i) as f32).collect(), choices };
        w.add(&t).unwrap();
        written.push(t);
    }
    w.finish().unwrap();
    written
}

#[test]
fn traces_load_with_variable_length_targets_through_the_bucketed_sampler() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces");
    let written = write_traces(&path, 90);
    let ds = Arc::new(TraceDataset::open(&path).unwrap());
    assert_eq!((ds.len(), ds.x_len(), ds.y_len()), (90, 12, 0));
    // Each stored trace is identified by its observation's first value (= i).
    let by_tag: HashMap<u32, &Trace> = written.iter().map(|t| (t.observation[0] as u32, t)).collect();

    let mut covered = Vec::new();
    for rank in 0..2 {
        let sampler = BucketedSampler { len: ds.len(), buckets: 6, world: 2, rank, seed: 11 };
        let order: Vec<usize> = sampler.batches(1, 5).into_iter().flatten().collect();
        let loader = Loader::new(ds.clone(), order.clone(), config(5, false));
        let mut seen = Vec::new();
        for batch in loader {
            let batch = batch.unwrap();
            assert_eq!(batch.y_offsets.len(), batch.len() + 1);
            for (k, &index) in batch.indices.iter().enumerate() {
                let x = &batch.x[k * 12..(k + 1) * 12];
                let original = by_tag[&(x[0] as u32)];
                assert_eq!(x, original.observation.as_slice());
                let expected: Vec<f32> = original
                    .choices
                    .iter()
                    .filter(|c| c.controlled)
                    .flat_map(|c| [c.address as f32, c.value as f32])
                    .collect();
                assert_eq!(batch.target(k), expected.as_slice(), "trace {index}");
                seen.push(index);
            }
        }
        assert_eq!(seen, order);
        covered.extend(seen);
    }
    // Both ranks together: no trace twice.
    let unique: std::collections::HashSet<_> = covered.iter().collect();
    assert_eq!(unique.len(), covered.len());
}

#[test]
fn trace_index_past_the_end_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces");
    write_traces(&path, 3);
    let ds = TraceDataset::open(&path).unwrap();
    let mut y = Vec::new();
    let err = ds.read_ragged(3, &mut [0.0; 12], &mut y).unwrap_err();
    assert!(matches!(err, DatasetError::OutOfRange { index: 3, len: 3 }), "{err}");
    assert!(y.is_empty());
}

/// Two stores number the same addresses differently; read through one
/// layout, the same address has the same position in both, an address the
/// layout lacks is marked unknown, and each choice carries its prior's two
/// numbers and its log prior density.
#[test]
fn trace_stores_translate_each_stores_address_ids_into_one_layout() {
    use loader::traces::{CHOICE_WIDTH, TraceStores, UNKNOWN_ADDRESS};
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, addresses: &[&str], tag: f32| {
        let path = dir.path().join(name);
        let mut w = TraceStoreWriter::create(&path).unwrap();
        let choices = addresses
            .iter()
            .enumerate()
            .map(|(j, a)| Choice {
                address: w.address_id(a),
                controlled: true,
                distribution: Distribution::Uniform { low: -(j as f64), high: 3.0 },
                value: j as f64 * 0.5,
            })
            .collect();
        w.add(&Trace { shape: vec![1, 2], observation: vec![tag, tag], choices }).unwrap();
        w.finish().unwrap();
        path
    };
    let first = write("a", &["px", "py"], 1.0);
    let second = write("b", &["py", "rare", "px"], 2.0);
    let layout = vec!["px".to_owned(), "py".to_owned()];
    let stores = TraceStores::open(&[first, second], &layout).unwrap();
    assert_eq!((stores.len(), stores.x_len(), stores.observation_shape()), (2, 2, &[1u32, 2][..]));
    let target = |i| {
        let (mut x, mut y) = (vec![0f32; 2], Vec::new());
        stores.read_ragged(i, &mut x, &mut y).unwrap();
        (x[0], y)
    };
    let (tag, y) = target(0);
    assert_eq!(tag, 1.0);
    let (third, quarter) = (-(3f32.ln()), -(4f32.ln()));
    assert_eq!(y, [0.0, 0.0, 0.0, 3.0, third, 1.0, 0.5, -1.0, 3.0, quarter]);
    let (tag, y) = target(1);
    assert_eq!(tag, 2.0);
    let positions: Vec<f32> = y.chunks_exact(CHOICE_WIDTH).map(|c| c[0]).collect();
    assert_eq!(positions, [1.0, UNKNOWN_ADDRESS, 0.0]);
    assert!(matches!(stores.read_ragged(2, &mut [0.0; 2], &mut Vec::new()), Err(DatasetError::OutOfRange { .. })));
}
