//! Checkpoints: the bytes of `state.json` and the four array files (split
//! at 0xFF bytes, which JSON never holds) decode or fail with an error. In
//! the odd mode the target first makes the state's checksums match the
//! arrays, so the fuzzer reaches the length checks behind them.

use std::path::Path;

use formats::checkpoint::{TrainState, decode, values_checksum};
use formats::checksum::Checksum;

const ARRAYS: [&str; 4] = ["params.f32", "first.f32", "second.f32", "model_state.f32"];

/// One input, as the fuzz target `checkpoint` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let Some((&mode, input)) = input.split_first() else { return };
    let mut parts: Vec<&[u8]> = input.splitn(5, |&b| b == 0xff).collect();
    parts.resize(5, &[]);
    let at = Path::new("<fuzz>/epoch-1");
    let arrays = [parts[1], parts[2], parts[3], parts[4]];
    let state = if mode % 2 == 1
        && let Ok(mut state) = serde_json::from_slice::<TrainState>(parts[0])
    {
        for (file, bytes) in ARRAYS.iter().zip(arrays) {
            state.files.insert((*file).to_owned(), format!("{:016x}", Checksum::of(bytes).0));
        }
        let values = |bytes: &[u8]| -> Vec<f32> {
            bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
        };
        // Right only when every tensor's length adds up; else the decoder
        // must say why.
        state.checksum = values_checksum(&[values(arrays[0]), values(arrays[3])]);
        serde_json::to_vec(&state).expect("a state serialises")
    } else {
        parts[0].to_vec()
    };
    if let Ok(checkpoint) = decode(at, &state, arrays) {
        assert_eq!(checkpoint.params.len(), checkpoint.state.lengths.len());
        assert_eq!(checkpoint.model_state.len(), checkpoint.state.state_lengths.len());
    }
}
