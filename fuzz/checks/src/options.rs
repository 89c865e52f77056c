//! What users type: placement policies, sizes, rates, read methods and
//! destination templates parse or fail with an error, and a parsed policy
//! prints as text that parses back to it.

use cluster::paths::{PathVars, expand};
use formats::placement::{Policy, files_per_node};
use stager::files::ReadMethod;
use stager::units::{parse_bytes, parse_rate};

/// One input, as the fuzz target `options` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    if let Ok(policy) = text.parse::<Policy>() {
        assert_eq!(policy.to_string().parse::<Policy>().ok(), Some(policy));
        let _ = files_per_node(&[1, 2, 3, 4, 5], 3, policy, 1);
    }
    let _ = parse_bytes(text);
    if let Ok(rate) = parse_rate(text) {
        assert!(rate > 0.0);
    }
    let _ = text.parse::<ReadMethod>();
    let _ = expand(text, &PathVars { node: 3, rank: 7, local_rank: 1 });
}
