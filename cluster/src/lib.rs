//! Stagehand's cluster layer: everything that knows about ranks and nodes.
//!
//! - [`World`]: MPI initialisation (the `mpi` crate over the site's MPI), rank,
//!   size, and the node [`Topology`].
//! - [`Topology`]: which node a rank is on, from the shared-memory split of
//!   `MPI_COMM_WORLD`, or from `STAGEHAND_RANKS_PER_NODE=k` (consecutive ranks
//!   grouped into pretend nodes, for tests and demos on one machine).
//! - [`paths`]: node-local path templates (`/tmp/bb/node{node}`, `$TMPDIR/data`).
//! - [`logging`]: a `tracing` subscriber that prefixes rank and node.
//! - [`memory`]: a rank's peak resident memory, for reports.
//! - [`panic`]: a panic on any thread of a rank prints one line naming it
//!   and ends the job with `MPI_Abort` (installed by [`World::init`]).
//! - [`polite`]: waiting for an MPI request without spinning on a core
//!   other threads need.
//! - [`progress`]: per-rank counters that workers bump without blocking,
//!   gathered to one progress bar on rank 0.
//!
//! ```no_run
//! let world = cluster::World::init()?;
//! cluster::logging::init(world.topology(), None);
//! let dest = cluster::paths::expand("/tmp/bb/node{node}", &world.topology().path_vars())?;
//! tracing::info!("staging into {}", dest.display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Pure pieces (topology arithmetic, template expansion) are separate from
//! the MPI calls (the `mpi` feature, on by default: [`World`], [`panic`],
//! [`progress`]) and tested without MPI; the MPI paths are tested under
//! `mpirun` by the `stagehand-e2e` crate.

pub mod allocator;
#[cfg(feature = "mpi")]
pub mod allreduce;
pub mod logging;
pub mod memory;
#[cfg(feature = "mpi")]
pub mod panic;
pub mod paths;
#[cfg(feature = "mpi")]
pub mod polite;
#[cfg(feature = "mpi")]
pub mod progress;
mod topology;
#[cfg(feature = "mpi")]
mod world;

pub use topology::{RANKS_PER_NODE_ENV, Topology, TopologyError};
#[cfg(feature = "mpi")]
pub use world::{ThreadComm, World, WorldError};
