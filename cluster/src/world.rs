//! The MPI world: initialisation, rank, size and node topology.

use mpi::Threading;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

use crate::topology::{RANKS_PER_NODE_ENV, Topology, TopologyError};

/// MPI could not be brought up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    /// `MPI_Init_thread` was already called in this process.
    #[error("MPI is already initialised in this process")]
    AlreadyInitialised,
    /// The topology override is malformed.
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// This process's view of the job: MPI, rank, size and node topology.
/// MPI is finalised when the `World` is dropped.
pub struct World {
    world: SimpleCommunicator,
    topology: Topology,
    node_of_rank: Vec<usize>,
    /// Ranks sharing this rank's memory (the real machine, whatever
    /// pretend nodes say: they all share it).
    ranks_on_machine: usize,
    threading: Threading,
    // Dropped last: finalises MPI.
    _universe: Universe,
}

impl World {
    /// Initialise MPI (asking for `MPI_THREAD_MULTIPLE`, so worker threads
    /// and the progress reporter may communicate) and work out the topology:
    /// `STAGEHAND_RANKS_PER_NODE=k` groups consecutive ranks into pretend
    /// nodes; otherwise the shared-memory split of `MPI_COMM_WORLD` decides.
    /// Installs [`abort_job_on_panic`](crate::panic::abort_job_on_panic).
    pub fn init() -> Result<World, WorldError> {
        let (universe, threading) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or(WorldError::AlreadyInitialised)?;
        let world = universe.world();
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        let override_value = std::env::var(RANKS_PER_NODE_ENV).ok();
        let machine = world.split_shared(world.rank());
        let ranks_on_machine = machine.size() as usize;
        let leaders = match Topology::parse_override(override_value.as_deref())? {
            Some(k) => (0..size).map(|r| r / k * k).collect(),
            None => shared_memory_leaders(&world, &machine),
        };
        let topology = Topology::from_leaders(rank, &leaders)?;
        let node_of_rank =
            (0..size).map(|r| Topology::from_leaders(r, &leaders).map(|t| t.node)).collect::<Result<_, _>>()?;
        // From here on a panic on any thread ends the whole job instead of
        // leaving the other ranks waiting in a collective.
        crate::panic::abort_job_on_panic(&topology);
        Ok(World { world, topology, node_of_rank, ranks_on_machine, threading, _universe: universe })
    }

    /// The world communicator.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// This rank's place.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// World rank.
    pub fn rank(&self) -> usize {
        self.topology.rank
    }

    /// World size.
    pub fn size(&self) -> usize {
        self.topology.size
    }

    /// True on rank 0, which prints progress and reports.
    pub fn is_root(&self) -> bool {
        self.topology.rank == 0
    }

    /// The node of every rank, indexed by rank.
    pub fn node_of_rank(&self) -> &[usize] {
        &self.node_of_rank
    }

    /// The ranks of `node`, in rank order.
    pub fn ranks_of_node(&self, node: usize) -> Vec<usize> {
        self.node_of_rank.iter().enumerate().filter(|&(_, &n)| n == node).map(|(r, _)| r).collect()
    }

    /// How many ranks of the job share this rank's machine (its memory):
    /// the shared-memory split of the world, also under pretend nodes,
    /// which share one machine. What a rank may assume of the cores it
    /// has: the machine's divided by this.
    pub fn ranks_on_machine(&self) -> usize {
        self.ranks_on_machine
    }

    /// The thread support level MPI granted.
    pub fn threading(&self) -> Threading {
        self.threading
    }

    /// True if any thread may make MPI calls.
    pub fn supports_thread_multiple(&self) -> bool {
        self.threading == Threading::Multiple
    }

    /// A private duplicate of the world communicator that any thread may use,
    /// or `None` when MPI did not grant `MPI_THREAD_MULTIPLE`. Collective:
    /// every rank calls it at the same point.
    pub fn thread_comm(&self) -> Option<ThreadComm> {
        let dup = self.world.duplicate();
        self.supports_thread_multiple().then_some(ThreadComm(dup))
    }

    /// Every rank's `mine`, indexed by rank. Collective. For small messages
    /// (lists, reports): all of them together must stay under 2 GiB, MPI's
    /// C-int counts; more panics, which ends the job with one line.
    pub fn all_gather_bytes(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let mut lengths = vec![0i32; self.size()];
        let Ok(my_length) = i32::try_from(mine.len()) else {
            panic!("all_gather_bytes: {} bytes exceed MPI's C-int count", mine.len())
        };
        self.world.all_gather_into(&my_length, &mut lengths[..]);
        let offsets: Vec<i32> = lengths.iter().scan(0i32, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
        let total = lengths.iter().map(|&n| n as usize).sum();
        let mut all = vec![0u8; total];
        {
            let mut partition = mpi::datatype::PartitionMut::new(&mut all[..], &lengths[..], &offsets[..]);
            self.world.all_gather_varcount_into(mine, &mut partition);
        }
        lengths.iter().zip(&offsets).map(|(&n, &at)| all[at as usize..(at + n) as usize].to_vec()).collect()
    }

    /// Wait for every rank.
    pub fn barrier(&self) {
        self.world.barrier();
    }

    /// Print `error` as one line naming this rank and node, then end every
    /// rank of the job with exit code 1. What a binary does when a rank fails.
    pub fn fail(&self, error: impl std::fmt::Display) -> ! {
        self.fail_with_code(1, error)
    }

    /// End this rank after an error every rank met at the same point (and
    /// so is ending too): print it as one line naming this rank and node if
    /// `speaks` (one rank speaks, so the job prints one line), finalise MPI
    /// with the other ranks (none is killed mid-message), exit with status 1.
    pub fn exit_agreed(self, speaks: bool, error: impl std::fmt::Display) -> ! {
        if speaks {
            let t = &self.topology;
            crate::logging::print_error(format_args!("rank {} (node {}): {error}", t.rank, t.node));
        }
        drop(self);
        std::process::exit(1)
    }

    /// [`fail`](World::fail) with exit code `code`: 2 when the user asked
    /// for something that cannot be done (the code clap gives usage errors).
    pub fn fail_with_code(&self, code: i32, error: impl std::fmt::Display) -> ! {
        let t = &self.topology;
        crate::logging::print_error(format_args!("rank {} (node {}): {error}", t.rank, t.node));
        self.abort(code)
    }

    /// End every rank of the job with `code` (`MPI_Abort`): what a rank does
    /// when it fails, so no other rank waits forever in a collective.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// Every rank's node leader: the lowest world rank in its shared-memory group.
fn shared_memory_leaders(world: &SimpleCommunicator, node: &SimpleCommunicator) -> Vec<usize> {
    let mut leader = world.rank() as u64;
    node.process_at_rank(0).broadcast_into(&mut leader);
    let mut leaders = vec![0u64; world.size() as usize];
    world.all_gather_into(&leader, &mut leaders[..]);
    leaders.into_iter().map(|l| l as usize).collect()
}

/// A communicator that threads may share: only handed out when MPI granted
/// `MPI_THREAD_MULTIPLE` (see [`World::thread_comm`]).
pub struct ThreadComm(pub(crate) SimpleCommunicator);

impl ThreadComm {
    /// The communicator.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.0
    }
}

// SAFETY: with MPI_THREAD_MULTIPLE, which `World::thread_comm` checks before
// creating a `ThreadComm`, MPI allows calls on one communicator from any
// thread, concurrently; the handle itself is a plain pointer-sized value.
#[allow(unsafe_code)]
unsafe impl Send for ThreadComm {}
// SAFETY: as above.
#[allow(unsafe_code)]
unsafe impl Sync for ThreadComm {}
