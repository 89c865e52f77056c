//! `tf.train.Example` decoding: any bytes decode or fail with an error,
//! and every feature of a decoded Example can be read by name and type.
#![no_main]

use formats::example::Example;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if let Ok(example) = Example::decode_bytes(input) {
        for name in ["x", "y", "label", ""] {
            let _ = example.bytes(name);
            let _ = example.floats(name);
            let _ = example.int64s(name);
        }
    }
});
