//! `stager verify`: every rank re-hashes its share of what its node holds
//! against the manifest, and the counts are summed across the job. The
//! node's destination is resolved as `stager stage` resolves it
//! ([`crate::destination::node_destination`]), so verify looks where stage wrote.

use cluster::World;
use formats::manifest::Manifest;
use formats::placement::{PlacementError, Policy};
use mpi::traits::*;

/// What could not be checked at all (a file that fails the check is
/// counted, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The placement cannot be computed.
    #[error(transparent)]
    Placement(#[from] PlacementError),
    /// The destination template cannot be expanded.
    #[error(transparent)]
    Template(#[from] cluster::paths::TemplateError),
}

/// Files checked across the job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    /// Present, of the manifest's size and xxh3.
    pub ok: u64,
    /// Absent or of another size.
    pub missing: u64,
    /// Of the manifest's size but another xxh3.
    pub corrupt: u64,
}

impl Verified {
    /// True if every file each node needs is there and whole.
    pub fn all_ok(&self) -> bool {
        self.missing + self.corrupt == 0
    }
}

/// Check what each node holds under `dest` (a template) against
/// `manifest`, placed by `policy` and `seed`; each wrong file is logged
/// by path. Collective: every rank gets the job's totals.
pub fn verify(
    world: &World,
    manifest: &Manifest,
    dest: &str,
    policy: Policy,
    seed: u64,
) -> Result<Verified, VerifyError> {
    let t = *world.topology();
    let needs = manifest.files_per_node(t.nodes, policy, seed)?;
    let dest = crate::destination::node_destination(world, dest)?;
    // The ranks of a node share its files: each checks every local_size-th.
    let mut counts = [0u64; 3]; // ok, missing, corrupt
    let mut buffer = Vec::new();
    for &f in needs[t.node].iter().skip(t.local_rank).step_by(t.local_size) {
        let entry = &manifest.files[f];
        let path = dest.join(&entry.path);
        if !crate::destination::directory::is_complete(&path, entry.bytes) {
            tracing::error!("missing or wrong size: {}", path.display());
            counts[1] += 1;
            continue;
        }
        match formats::checksum::hash_file(&path, &mut buffer) {
            Ok((_, sum)) if sum == entry.xxh3 => counts[0] += 1,
            _ => {
                tracing::error!("checksum differs from the manifest: {}", path.display());
                counts[2] += 1;
            }
        }
    }
    let mut totals = [0u64; 3];
    world.comm().all_reduce_into(&counts[..], &mut totals[..], mpi::collective::SystemOperation::sum());
    Ok(Verified { ok: totals[0], missing: totals[1], corrupt: totals[2] })
}
