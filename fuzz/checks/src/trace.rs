//! Simulator traces: any bytes decode or fail with an error; a decoded
//! trace encodes to bytes that decode and encode to the same bytes; and
//! rewriting address ids in place fails exactly where decoding fails, and
//! otherwise equals renumbering the decoded trace.

use formats::lmdb::trace_codec::{decode, encode, remap_addresses};

/// Address id a -> 3a + 1 for every id below this many.
const MAPPED: usize = 64;

/// One input, as the fuzz target `trace` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let map: Vec<u32> = (0..MAPPED as u32).map(|a| 3 * a + 1).collect();
    let mut remapped = input.to_vec();
    let remap = remap_addresses(&mut remapped, &map);
    let Ok(trace) = decode(input) else {
        assert!(remap.is_err(), "remapped bytes that do not decode");
        return;
    };
    let _ = trace.trace_type();
    let mut once = Vec::new();
    encode(&trace, &mut once);
    let again = decode(&once).expect("an encoded trace decodes");
    let mut twice = Vec::new();
    encode(&again, &mut twice);
    assert_eq!(once, twice);
    if trace.choices.iter().all(|c| (c.address as usize) < MAPPED) {
        remap.expect("a decodable trace with mapped ids did not remap");
        let mut renumbered = trace.clone();
        for c in &mut renumbered.choices {
            c.address = map[c.address as usize];
        }
        // Bytes, not traces: NaN observations are not equal to themselves.
        let mut want = Vec::new();
        encode(&renumbered, &mut want);
        assert_eq!(remapped, want);
    } else {
        assert!(remap.is_err(), "an id outside the map was remapped");
    }
}
