//! `tf.train.Example` decoding: any bytes decode or fail with an error,
//! and every feature of a decoded Example can be read by name and type.

use formats::example::Example;

/// One input, as the fuzz target `example` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    if let Ok(example) = Example::decode_bytes(input) {
        for name in ["x", "y", "label", ""] {
            let _ = example.bytes(name);
            let _ = example.floats(name);
            let _ = example.int64s(name);
        }
    }
}
