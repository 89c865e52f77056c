//! `stager verify`: every rank re-hashes its share of what its node holds
//! against the manifest, and the counts are summed across the job. The
//! node's destination is resolved as `stager stage` resolves it
//! ([`crate::destination::node_destination`]), so verify looks where stage wrote.

use cluster::World;
use formats::manifest::Manifest;
use formats::placement::{PlacementError, Policy};

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
    /// A rank's findings could not be encoded.
    #[error("encoding this rank's findings: {0}")]
    Encode(#[source] serde_json::Error),
    /// Another rank's findings could not be read.
    #[error("reading rank {rank}'s findings: {source}")]
    Decode {
        /// The rank.
        rank: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// Files checked across the job.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    /// Present, of the manifest's size and xxh3.
    pub ok: u64,
    /// Absent or of another size.
    pub missing: u64,
    /// Of the manifest's size but another xxh3.
    pub corrupt: u64,
    /// Each node's counts, by node.
    pub nodes: Vec<NodeVerified>,
}

/// What one node holds of what it should.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeVerified {
    /// The node.
    pub node: usize,
    /// Its destination, expanded.
    pub dest: std::path::PathBuf,
    /// Files it should hold.
    pub files: u64,
    /// Bytes of them.
    pub bytes: u64,
    /// Present, of the manifest's size and xxh3.
    pub ok: u64,
    /// Relative paths absent or of another size.
    pub missing: Vec<String>,
    /// Relative paths of the manifest's size but another xxh3.
    pub corrupt: Vec<String>,
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
    let node_files = &needs[t.node];
    let mut mine = NodeVerified {
        node: t.node,
        dest: dest.clone(),
        files: node_files.len() as u64,
        bytes: node_files.iter().map(|&f| manifest.files[f].bytes).sum(),
        ..NodeVerified::default()
    };
    let mut buffer = Vec::new();
    for &f in node_files.iter().skip(t.local_rank).step_by(t.local_size) {
        let entry = &manifest.files[f];
        let path = dest.join(&entry.path);
        if !crate::destination::directory::is_complete(&path, entry.bytes) {
            tracing::error!("missing or wrong size: {}", path.display());
            mine.missing.push(entry.path.clone());
            continue;
        }
        match formats::checksum::hash_file(&path, &mut buffer) {
            Ok((_, sum)) if sum == entry.xxh3 => mine.ok += 1,
            _ => {
                tracing::error!("checksum differs from the manifest: {}", path.display());
                mine.corrupt.push(entry.path.clone());
            }
        }
    }
    // Every rank's findings to every rank, merged by node: paths are few
    // (only the wrong files), so one all-gather of JSON carries them.
    let text = serde_json::to_vec(&mine).map_err(VerifyError::Encode)?;
    let mut nodes: Vec<NodeVerified> = Vec::new();
    for (rank, bytes) in world.all_gather_bytes(&text).into_iter().enumerate() {
        let theirs: NodeVerified =
            serde_json::from_slice(&bytes).map_err(|source| VerifyError::Decode { rank, source })?;
        match nodes.iter_mut().find(|n| n.node == theirs.node) {
            Some(node) => {
                node.ok += theirs.ok;
                node.missing.extend(theirs.missing);
                node.corrupt.extend(theirs.corrupt);
            }
            None => nodes.push(theirs),
        }
    }
    nodes.sort_by_key(|n| n.node);
    for node in &mut nodes {
        node.missing.sort();
        node.corrupt.sort();
    }
    Ok(Verified {
        ok: nodes.iter().map(|n| n.ok).sum(),
        missing: nodes.iter().map(|n| n.missing.len() as u64).sum(),
        corrupt: nodes.iter().map(|n| n.corrupt.len() as u64).sum(),
        nodes,
    })
}
