//! Manifests: any bytes load as a manifest or fail with an error; a loaded
//! manifest validates or says why, and placement over a few nodes either
//! works or says why.

use std::path::Path;

use formats::manifest::Manifest;
use formats::placement::Policy;

/// One input, as the fuzz target `manifest` runs it: panics where the
/// parser breaks what it promises.
pub fn check(input: &[u8]) {
    let Ok(manifest) = Manifest::from_json(input, Path::new("<fuzz>/manifest.json")) else { return };
    if manifest.validate().is_err() {
        return;
    }
    let _ = (manifest.total_bytes(), manifest.total_samples(), manifest.followers());
    for policy in [Policy::Replicate, Policy::Shard, Policy::PerNode(1), Policy::PerNode(3)] {
        for nodes in [1, 2, 5] {
            if let Ok(needs) = manifest.files_per_node(nodes, policy, 7) {
                assert_eq!(needs.len(), nodes);
                assert!(needs.iter().flatten().all(|&f| f < manifest.files.len()));
            }
        }
    }
}
