use std::thread;

use proptest::prelude::*;

use super::trace_codec::{self, Choice, Distribution, Trace};
use super::*;

fn value_for(id: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (id as usize * 31 + i * 7) as u8).collect()
}

#[test]
fn four_reader_threads_see_exactly_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("samples");
    let mut w = SampleStoreWriter::create(&path).unwrap();
    assert!(!path.exists(), "store visible before finish");
    let values: Vec<Vec<u8>> = (0..400u64).map(|id| value_for(id, 100 + id as usize)).collect();
    for chunk in values.chunks(64).enumerate() {
        let batch: Vec<(u64, &[u8])> =
            chunk.1.iter().enumerate().map(|(i, v)| ((chunk.0 * 64 + i) as u64, v.as_slice())).collect();
        w.put_batch(&batch).unwrap();
    }
    w.finish().unwrap();
    let names: Vec<_> = std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["data.mdb"], "lock file left behind");

    let store = SampleStore::open(&path).unwrap();
    assert_eq!(store.len().unwrap(), 400);
    thread::scope(|s| {
        for t in 0..4u64 {
            let store = &store;
            let values = &values;
            s.spawn(move || {
                let reader = store.reader().unwrap();
                for id in (t..400).step_by(4) {
                    assert_eq!(reader.get(id).unwrap().unwrap(), &values[id as usize][..]);
                }
                assert!(reader.get(400).unwrap().is_none());
            });
        }
    });
}

#[test]
fn a_full_map_grows_and_keeps_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big");
    let mut w = SampleStoreWriter::create(&path).unwrap();
    let before = w.map_size();
    let value = vec![0xabu8; 1 << 20];
    let total = (INITIAL_MAP_SIZE >> 20) as u64 + 40;
    for id in (0..total).step_by(8) {
        let batch: Vec<(u64, &[u8])> = (id..(id + 8).min(total)).map(|i| (i, value.as_slice())).collect();
        w.put_batch(&batch).unwrap();
    }
    assert!(w.map_growths() > 0 && w.map_size() > before);
    w.finish().unwrap();
    let store = SampleStore::open(&path).unwrap();
    let reader = store.reader().unwrap();
    assert_eq!(reader.len().unwrap(), total);
    assert_eq!(reader.get(total - 1).unwrap().unwrap(), &value[..]);
}

#[test]
fn a_store_opened_twice_in_one_process_is_shared_and_reopens_after_both_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("twice.lmdb");
    let mut w = SampleStoreWriter::create(&path).unwrap();
    w.put_batch(&[(7, b"seven".as_slice())]).unwrap();
    w.finish().unwrap();
    let first = SampleStore::open(&path).unwrap();
    // Another spelling of the same directory is the same store.
    let second = SampleStore::open(&dir.path().join(".").join("twice.lmdb")).unwrap();
    assert_eq!((first.len().unwrap(), second.len().unwrap()), (1, 1));
    drop(first);
    assert_eq!(second.len().unwrap(), 1);
    drop(second);
    assert_eq!(SampleStore::open(&path).unwrap().len().unwrap(), 1);
}

#[test]
fn opening_a_missing_store_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = SampleStore::open(&dir.path().join("nope")).err().unwrap();
    assert!(err.to_string().contains("nope"), "{err}");
}

#[test]
fn opening_a_trace_store_as_sample_store_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t");
    TraceStoreWriter::create(&path).unwrap().finish().unwrap();
    let err = SampleStore::open(&path).err().unwrap();
    assert!(err.to_string().contains("\"samples\""), "{err}");
}

fn trace(writer: &mut TraceStoreWriter, path: &[&str], tag: f32) -> Trace {
    let mut choices: Vec<Choice> = path
        .iter()
        .map(|a| Choice {
            address: writer.address_id(a),
            controlled: true,
            distribution: Distribution::Uniform { low: 0.0, high: 1.0 },
            value: f64::from(tag),
        })
        .collect();
    choices.push(Choice {
        address: writer.address_id("obs"),
        controlled: false,
        distribution: Distribution::Normal { mean: 0.0, std: 1.0 },
        value: 0.5,
    });
    Trace { shape: vec![2, 2, 2], observation: vec![tag; 8], choices }
}

#[test]
fn traces_are_stored_grouped_by_trace_type_with_their_dictionary() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces");
    let mut w = TraceStoreWriter::create(&path).unwrap();
    let kinds: [&[&str]; 3] = [&["a", "b"], &["a"], &["a", "b", "c"]];
    let mut expected: Vec<Vec<Trace>> = vec![Vec::new(); 3];
    for i in 0..5000 {
        let k = (i * 7 + i / 3) % 3;
        let t = trace(&mut w, kinds[k], i as f32);
        w.add(&t).unwrap();
        expected[k].push(t);
    }
    w.finish().unwrap();

    let store = TraceStore::open(&path).unwrap();
    assert_eq!(store.len(), 5000);
    assert_eq!(store.addresses(), ["a", "b", "obs", "c"]);
    let types = store.trace_types();
    let mut next = 0;
    for t in types {
        assert_eq!(t.first, next);
        next += t.count;
        let k = kinds.iter().position(|names| {
            names.iter().map(|n| store.addresses().iter().position(|a| a == n).unwrap() as u32).collect::<Vec<_>>()
                == t.addresses
        });
        let k = k.expect("type table names an unknown type");
        for (j, want) in expected[k].iter().enumerate() {
            assert_eq!(&store.get(t.first + j as u64).unwrap().unwrap(), want);
        }
    }
    assert_eq!(next, 5000);
    assert!(store.get(5000).unwrap().is_none());
    assert!(types.windows(2).all(|w| w[0].count >= w[1].count), "types are not most frequent first");
}

/// Two stores finished with one shared dictionary: the same address has
/// the same id in both, whatever order each writer met them in.
#[test]
fn stores_finished_with_a_shared_dictionary_use_its_ids() {
    let dir = tempfile::tempdir().unwrap();
    let dictionary: Vec<String> = ["c", "obs", "b", "a", "unused"].iter().map(|s| s.to_string()).collect();
    for (name, kinds) in [("one", [&["a", "b"][..], &["a"]]), ("two", [&["c"][..], &["b", "a"]])] {
        let path = dir.path().join(name);
        let mut w = TraceStoreWriter::create(&path).unwrap();
        let mut written = Vec::new();
        for i in 0..10 {
            // The second kind is the more frequent, so it is stored first.
            let t = trace(&mut w, kinds[usize::from(i % 3 != 0)], i as f32);
            w.add(&t).unwrap();
            written.push(t);
        }
        let local = w.addresses();
        w.finish_with_dictionary(&dictionary).unwrap();
        let store = TraceStore::open(&path).unwrap();
        assert_eq!(store.addresses(), dictionary.as_slice());
        let global = |id: u32| dictionary.iter().position(|d| *d == local[id as usize]).unwrap() as u32;
        let types = store.trace_types();
        assert_eq!(types.iter().map(|t| t.count).collect::<Vec<_>>(), [6, 4]);
        let frequent: Vec<u32> =
            kinds[1].iter().map(|n| dictionary.iter().position(|d| d == n).unwrap() as u32).collect();
        assert_eq!(types[0].addresses, frequent);
        let stored: Vec<Trace> = (0..10).map(|i| store.get(i).unwrap().unwrap()).collect();
        for t in &written {
            let mut want = t.clone();
            for c in &mut want.choices {
                c.address = global(c.address);
            }
            assert!(stored.contains(&want), "{name}: a trace was lost or kept its writer's ids");
        }
    }
    let path = dir.path().join("three");
    let mut w = TraceStoreWriter::create(&path).unwrap();
    let t = trace(&mut w, &["zzz"], 0.0);
    w.add(&t).unwrap();
    let err = w.finish_with_dictionary(&dictionary).unwrap_err().to_string();
    assert!(err.contains("\"zzz\"") && err.contains("dictionary"), "{err}");
    assert!(!path.exists(), "a store finished with a bad dictionary is visible");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "a failed writer left its temporary files: {left:?}");
}

/// Regressions found by the `trace` fuzz target: remapping accepted bytes
/// that do not decode (a dimension product that overflows before a zero
/// dimension; a controlled flag of 0x50).
#[test]
fn remapping_fails_where_decoding_fails() {
    // Four dimensions: three of 2^32 - 1 (the product overflows), then 0; no choices.
    let mut overflow = vec![4u8];
    for d in [u32::MAX, u32::MAX, u32::MAX, 0] {
        overflow.extend_from_slice(&d.to_le_bytes());
    }
    overflow.extend_from_slice(&0u32.to_le_bytes());
    // No dimension (one value), one Poisson choice whose controlled flag is 0x50.
    let mut flag = vec![0u8, 0, 0, 0, 0];
    flag.extend_from_slice(&1u32.to_le_bytes());
    flag.extend_from_slice(&0u32.to_le_bytes());
    flag.extend_from_slice(&[0x50, 3]);
    flag.extend_from_slice(&2.0f64.to_le_bytes());
    flag.extend_from_slice(&1.0f64.to_le_bytes());
    for bytes in [overflow, flag] {
        assert!(trace_codec::decode(&bytes).is_err());
        assert!(trace_codec::remap_addresses(&mut bytes.clone(), &[0; 64]).is_err(), "{bytes:02x?}");
    }
}

#[test]
fn categorical_and_poisson_choices_round_trip() {
    let t = Trace {
        shape: vec![3],
        observation: vec![1.0, 2.0, 3.0],
        choices: vec![
            Choice {
                address: 0,
                controlled: true,
                distribution: Distribution::Categorical { probs: vec![0.2, 0.8] },
                value: 1.0,
            },
            Choice { address: 1, controlled: true, distribution: Distribution::Poisson { rate: 3.5 }, value: 2.0 },
            Choice { address: 2, controlled: false, distribution: Distribution::Bernoulli { p: 0.1 }, value: 0.0 },
        ],
    };
    let mut bytes = Vec::new();
    trace_codec::encode(&t, &mut bytes);
    assert_eq!(trace_codec::decode(&bytes).unwrap(), t);
    assert_eq!(t.trace_type(), vec![0, 1]);
}

proptest! {
    /// Remapping ids in place equals decoding, renumbering and encoding, and
    /// damaged bytes are an error, never a panic.
    #[test]
    fn remapping_ids_in_place_equals_renumbering_the_decoded_trace(cut in 0usize..200, shift in 0u32..5) {
        let t = Trace {
            shape: vec![2, 3],
            observation: vec![0.5; 6],
            choices: vec![
                Choice { address: 0, controlled: true, distribution: Distribution::Categorical { probs: vec![0.5; 2] }, value: 1.0 },
                Choice { address: 2, controlled: false, distribution: Distribution::Normal { mean: 0.0, std: 1.0 }, value: 0.1 },
                Choice { address: 1, controlled: true, distribution: Distribution::Poisson { rate: 2.0 }, value: 3.0 },
            ],
        };
        let map: Vec<u32> = (0..3).map(|a| (a + shift) * 7).collect();
        let mut bytes = Vec::new();
        trace_codec::encode(&t, &mut bytes);
        let mut renumbered = t.clone();
        for c in &mut renumbered.choices {
            c.address = map[c.address as usize];
        }
        let mut want = Vec::new();
        trace_codec::encode(&renumbered, &mut want);
        let mut cut_bytes = bytes[..cut.min(bytes.len())].to_vec();
        trace_codec::remap_addresses(&mut bytes, &map).unwrap();
        prop_assert_eq!(&bytes, &want);
        if cut < want.len() {
            prop_assert!(trace_codec::remap_addresses(&mut cut_bytes, &map).is_err());
        }
        prop_assert!(trace_codec::remap_addresses(&mut want.clone(), &map[..2]).is_err());
    }

    /// A stored trace cut short or with a corrupted byte is an error or a
    /// different valid trace, never a panic or an over-sized allocation.
    #[test]
    fn corrupt_trace_bytes_never_panic(cut in 0usize..200, flip in 0usize..200, bit in 0u8..8) {
        let t = Trace {
            shape: vec![2, 3],
            observation: (0..6).map(|v| v as f32).collect(),
            choices: vec![Choice { address: 7, controlled: true, distribution: Distribution::Categorical { probs: vec![0.5; 3] }, value: 1.0 }],
        };
        let mut bytes = Vec::new();
        trace_codec::encode(&t, &mut bytes);
        let cut = cut % bytes.len();
        prop_assert!(trace_codec::decode(&bytes[..cut]).is_err());
        let mut flipped = bytes.clone();
        let i = flip % flipped.len();
        flipped[i] ^= 1 << bit;
        let _ = trace_codec::decode(&flipped);
    }
}
