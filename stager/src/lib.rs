//! The stager: copy a dataset from the shared parallel file system to
//! node-local storage at job start, reading each file from the source once
//! and sending it over MPI to every node that needs it (Kurth et al. 2018).
//!
//! This crate holds the pure parts, testable without MPI or I/O:
//!
//! - [`plan`]: who reads which file and who receives it, identical on every
//!   rank from (manifest, policy, seed, topology); a node's needs and a
//!   file's nodes are [`plan::Subset`]s, so `replicate` on thousands of
//!   nodes lists nothing.
//! - [`simulate`]: predicted staging times of the plan and of the naive copy
//!   at any scale, from bandwidths, naming the bottleneck.
//!
//! ```
//! use formats::placement::{Policy, files_per_node};
//! use stager::plan::Plan;
//!
//! let sizes = [64u64 << 20; 8];
//! let needs = files_per_node(&sizes, 4, Policy::PerNode(4), 7).unwrap();
//! let node_of_rank = [0, 0, 1, 1, 2, 2, 3, 3];
//! let plan = Plan::build(&sizes, &needs, &node_of_rank).unwrap();
//! assert_eq!(plan.source_bytes(), plan.unique_bytes()); // every file read once
//! ```
//!
//! The I/O and MPI parts: [`source`] (the manifest every rank works
//! from), [`files`] (chunked hashing reads, safe
//! destination paths, free space), [`journal`] (what is complete, for
//! resume), [`lock`] (one job per destination), [`stage`] (the MPI
//! execution behind `stager stage`) and [`verify`] (behind `stager
//! verify`).

pub mod capacity;
pub mod destination;
pub mod files;
pub mod peers;
pub mod plan;
pub mod serve;
pub mod sigbus;
pub mod simulate;
pub mod source;
pub mod stage;
pub mod traffic;
pub mod units;
