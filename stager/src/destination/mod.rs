//! A node's destination, all of it: where it is, what it holds and how a
//! file gets there. Its layout:
//!
//! ```text
//! DEST/<path of each file in the manifest>    placed files, whole and checked
//! DEST/.stagehand/lock                        one job at a time (`lock`)
//! DEST/.stagehand/journal*.jsonl              what is placed, one per writing rank (`journal`)
//! DEST/.stagehand/tmp/<file index>.part       files being written (`journal::part_path`)
//! DEST/.stagehand/placement.json              what this node holds, written when a stage has
//! DEST/.stagehand/source-manifest.json          finished (`formats::placement_record`)
//! ```
//!
//! A file is written under its temporary name by exactly one rank of the
//! node (the rank that read it, the node's writer receiving it over MPI,
//! or in the naive copy the rank that copies it) through a
//! [`part::PartFile`], checked, renamed into place
//! ([`directory::prepare_destination`] never follows a link out of the
//! destination) and journaled in batches. `verify` re-hashes what a
//! node holds.

pub mod directory;
pub mod journal;
pub mod lock;
pub mod part;
pub mod space;
pub mod verify;

use std::path::PathBuf;

use cluster::World;

/// This rank's node's destination: `template` as the node's writer (its
/// lowest rank) expands it. Every rank of a node writes into, and verifies,
/// that one directory.
pub fn node_destination(world: &World, template: &str) -> Result<PathBuf, cluster::paths::TemplateError> {
    let t = world.topology();
    let writer = cluster::paths::PathVars { node: t.node, rank: world.ranks_of_node(t.node)[0], local_rank: 0 };
    cluster::paths::expand(template, &writer)
}
