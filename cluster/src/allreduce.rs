//! Summing a buffer of `f32` over every rank: one flat `MPI_Allreduce`, or
//! hierarchically as Kurth et al. 2018 ("Exascale Deep Learning for Climate
//! Analytics", SC18, section V-A3) exchanged gradients: reduce inside the
//! node, let each of the node's ranks run the inter-node allreduce on its
//! own part of the buffer, then gather the parts inside the node.
//!
//! Inside a node the first and last steps move memory only; between nodes
//! each rank sends 1/L of the buffer (L ranks per node) instead of all of
//! it, and the L inter-node allreduces run at once over the node's links.
//! Summing in another order, the result differs from the flat sum by
//! floating-point reassociation alone: each value is a sum of one term per
//! rank, and any order of summing R terms is within (R - 1) ε Σ|x| of the
//! exact sum (ε = 2⁻²⁴ for `f32`), so the two results are within twice that
//! of each other.
//!
//! ```no_run
//! # let world = cluster::World::init()?;
//! use cluster::allreduce::{Exchange, SumAllreduce};
//! let mut sum = SumAllreduce::new(&world, Exchange::Hierarchical)?;
//! let mine = vec![1.0f32; 1000];
//! let mut total = vec![0.0f32; 1000];
//! sum.sum_into(&mine, &mut total);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use mpi::collective::SystemOperation;
use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use crate::{ThreadComm, World};

/// How a buffer is summed over the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exchange {
    /// [`Hierarchical`](Exchange::Hierarchical) where every node holds the
    /// same number of ranks, [`Flat`](Exchange::Flat) where they differ
    /// ([`resolved`](Exchange::resolved)). Hierarchical is the faster where
    /// both apply: on one machine its ring inside the node beats Open MPI's
    /// allreduce (`docs/benchmarks.md`, the exchange), across many nodes it
    /// crosses the network fewer times (`trainer exchange-model`), and on
    /// nodes of one rank it is the flat allreduce.
    #[default]
    Auto,
    /// One allreduce over every rank.
    Flat,
    /// Reduce-scatter inside the node (a ring), allreduce of each part
    /// between nodes, all-gather inside the node (Kurth et al. 2018, V-A3).
    Hierarchical,
}

impl Exchange {
    /// The exchange this one stands for on `world`: `Auto` settled (see
    /// there), the others as they are.
    pub fn resolved(self, world: &World) -> Exchange {
        match self {
            Exchange::Auto if even_nodes(world).is_ok() => Exchange::Hierarchical,
            Exchange::Auto => Exchange::Flat,
            chosen => chosen,
        }
    }
}

/// Whether every node of `world` holds as many ranks as node 0.
fn even_nodes(world: &World) -> Result<(), AllreduceError> {
    let counts: Vec<usize> = (0..world.topology().nodes).map(|n| world.ranks_of_node(n).len()).collect();
    match counts.iter().enumerate().find(|&(_, &c)| c != counts[0]) {
        Some((node, &ranks)) => Err(AllreduceError::UnevenNodes { node, ranks, first: counts[0] }),
        None => Ok(()),
    }
}

impl std::fmt::Display for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Exchange::Auto => "auto",
            Exchange::Flat => "flat",
            Exchange::Hierarchical => "hierarchical",
        })
    }
}

/// Why a hierarchical exchange cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AllreduceError {
    /// The nodes hold different numbers of ranks: the parts of the buffer
    /// would not line up between nodes.
    #[error(
        "a hierarchical exchange needs the same number of ranks on every node; node {node} has {ranks}, node 0 has {first}"
    )]
    UnevenNodes {
        /// A node whose count differs.
        node: usize,
        /// Its ranks.
        ranks: usize,
        /// Node 0's ranks.
        first: usize,
    },
    /// MPI gave this rank no communicator from a split every rank joins.
    #[error("MPI gave rank {rank} no communicator when splitting the world into nodes")]
    Split {
        /// This rank.
        rank: usize,
    },
}

/// A communicator an exchange holds: a plain one, or one threads may share.
pub trait HoldsComm {
    /// The communicator.
    fn comm(&self) -> &SimpleCommunicator;
}

impl HoldsComm for SimpleCommunicator {
    fn comm(&self) -> &SimpleCommunicator {
        self
    }
}

impl HoldsComm for ThreadComm {
    fn comm(&self) -> &SimpleCommunicator {
        ThreadComm::comm(self)
    }
}

/// A sum over every rank on communicators of its own (duplicates and
/// splits of the world's, so it never matches another library's
/// messages). `SumAllreduce<ThreadComm>` may move to another thread.
pub struct SumAllreduce<C: HoldsComm = SimpleCommunicator> {
    world: C,
    hierarchy: Option<Hierarchy<C>>,
    /// Wait for each collective by testing it with sleeps in between
    /// ([`crate::polite`]) instead of in MPI's spinning wait.
    polite: bool,
}

struct Hierarchy<C> {
    /// The ranks of this node.
    node: C,
    /// The ranks of every node with this rank's local rank.
    across: C,
    /// The buffer padded to a whole number of parts, then the gathered sum.
    padded: Vec<f32>,
    /// This rank's part, summed inside the node.
    part: Vec<f32>,
    /// Its part summed over the nodes.
    part_sum: Vec<f32>,
    /// The reduce-scatter's buffers: the partial sum a step receives, and
    /// the one it forwards.
    ring: [Vec<f32>; 2],
}

/// Whether `exchange` builds the hierarchy on `world`; an error for a
/// hierarchical exchange asked of uneven nodes.
fn builds_hierarchy(exchange: Exchange, world: &World) -> Result<bool, AllreduceError> {
    match exchange {
        Exchange::Flat => Ok(false),
        Exchange::Hierarchical => even_nodes(world).map(|()| true),
        Exchange::Auto => Ok(even_nodes(world).is_ok()),
    }
}

impl SumAllreduce<SimpleCommunicator> {
    /// A sum over `world`'s ranks, exchanged as `exchange` says.
    pub fn new(world: &World, exchange: Exchange) -> Result<Self, AllreduceError> {
        let hierarchy = if builds_hierarchy(exchange, world)? { Some(split(world)?) } else { None };
        Ok(SumAllreduce { world: world.comm().duplicate(), hierarchy, polite: false })
    }
}

impl SumAllreduce<ThreadComm> {
    /// As [`new`](SumAllreduce::new), for a sum that runs on a thread of
    /// its own beside others: `None` unless MPI granted
    /// `MPI_THREAD_MULTIPLE`. It waits for the other ranks politely: a
    /// collective entered before the other ranks reach it would otherwise
    /// spin on a core the training thread beside it computes on.
    pub fn for_threads(world: &World, exchange: Exchange) -> Option<Result<Self, AllreduceError>> {
        let world_comm = world.thread_comm()?;
        let split = match builds_hierarchy(exchange, world) {
            Ok(true) => split(world).map(Some),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        };
        let hierarchy = match split {
            Ok(hierarchy) => hierarchy.map(|h| Hierarchy {
                node: ThreadComm(h.node),
                across: ThreadComm(h.across),
                padded: h.padded,
                part: h.part,
                part_sum: h.part_sum,
                ring: h.ring,
            }),
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(SumAllreduce { world: world_comm, hierarchy, polite: true }))
    }
}

/// The node and across-nodes communicators of `world`, whose nodes are
/// even ([`builds_hierarchy`]). Collective.
fn split(world: &World) -> Result<Hierarchy<SimpleCommunicator>, AllreduceError> {
    let t = world.topology();
    let color = |c: usize| Color::with_value(c as i32);
    let key = t.rank as i32;
    // Every rank passes a colour, so MPI gives every rank a communicator
    // from each split; `None` would be an MPI fault.
    let split =
        |c: usize| world.comm().split_by_color_with_key(color(c), key).ok_or(AllreduceError::Split { rank: t.rank });
    let node = split(t.node)?;
    let across = split(t.local_rank)?;
    Ok(Hierarchy { node, across, padded: Vec::new(), part: Vec::new(), part_sum: Vec::new(), ring: Default::default() })
}

impl<C: HoldsComm> SumAllreduce<C> {
    /// Ranks summed over.
    pub fn ranks(&self) -> usize {
        self.world.comm().size() as usize
    }

    /// How this sum is exchanged.
    pub fn exchange(&self) -> Exchange {
        if self.hierarchy.is_some() { Exchange::Hierarchical } else { Exchange::Flat }
    }

    /// `recv` = the sum over every rank of its `send` (the same length on
    /// every rank). Collective.
    pub fn sum_into(&mut self, send: &[f32], recv: &mut [f32]) {
        assert_eq!(send.len(), recv.len(), "send and receive buffers differ in length");
        let polite = self.polite;
        let Some(h) = &mut self.hierarchy else {
            all_reduce(self.world.comm(), send, recv, polite);
            return;
        };
        let locals = h.node.comm().size() as usize;
        if locals == 1 {
            // Nothing to sum inside a node of one rank.
            all_reduce(h.across.comm(), send, recv, polite);
            return;
        }
        let part = send.len().div_ceil(locals);
        h.part.resize(part, 0.0);
        h.part_sum.resize(part, 0.0);
        // Whole parts need no copy into or out of a padded buffer.
        let whole = send.len() == part * locals;
        if !whole {
            h.padded.clear();
            h.padded.extend_from_slice(send);
            h.padded.resize(part * locals, 0.0);
        }
        let parts = if whole { send } else { &h.padded[..] };
        ring_reduce_scatter(h.node.comm(), parts, &mut h.part[..], &mut h.ring, polite);
        // On one node the node's sum is the whole sum.
        let summed = if h.across.comm().size() > 1 {
            all_reduce(h.across.comm(), &h.part[..], &mut h.part_sum[..], polite);
            &h.part_sum[..]
        } else {
            &h.part[..]
        };
        if whole {
            all_gather(h.node.comm(), summed, recv, polite);
        } else {
            all_gather(h.node.comm(), summed, &mut h.padded[..], polite);
            recv.copy_from_slice(&h.padded[..send.len()]);
        }
    }
}

/// `recv` = the sum of every rank's `send`.
fn all_reduce(comm: &SimpleCommunicator, send: &[f32], recv: &mut [f32], polite: bool) {
    let sum = SystemOperation::sum();
    if polite {
        mpi::request::scope(|scope| crate::polite::wait(comm.immediate_all_reduce_into(scope, send, recv, sum)));
    } else {
        comm.all_reduce_into(send, recv, sum);
    }
}

/// Tag of the reduce-scatter's messages (on the node's communicator, which
/// carries no other point-to-point message).
const RING_TAG: i32 = 7;

/// `part` = the sum over `comm`'s ranks of this rank's part of `send`
/// (parts of `part.len()` in rank order), by a ring: in L - 1 steps each
/// rank adds its own share of one part to the partial sum it receives from
/// the rank before it and passes it on, so that the last step leaves each
/// rank its own part summed over all L. Every rank copies and sums
/// (L - 1)/L of the buffer, all at once. Written here rather than taken
/// from MPI because Open MPI 4.1's `MPI_Reduce_scatter_block` sums the
/// whole buffer on one rank and scatters it (its fixed choice on a node's
/// ranks), which made the hierarchical exchange slower than the flat one
/// (`docs/benchmarks.md`, the exchange). Each part is summed on one rank
/// in one order, so every rank gathers the same bits.
fn ring_reduce_scatter(
    comm: &SimpleCommunicator,
    send: &[f32],
    part: &mut [f32],
    [incoming, partial]: &mut [Vec<f32>; 2],
    polite: bool,
) {
    let (ranks, rank, len) = (comm.size() as usize, comm.rank() as usize, part.len());
    assert_eq!(send.len(), ranks * len, "the buffer is not {ranks} parts of {len}");
    let own = |block: usize| &send[block * len..][..len];
    if ranks == 1 {
        part.copy_from_slice(send);
        return;
    }
    let next = comm.process_at_rank(((rank + 1) % ranks) as i32);
    let previous = comm.process_at_rank(((rank + ranks - 1) % ranks) as i32);
    incoming.resize(len, 0.0);
    partial.resize(len, 0.0);
    // Step s sends the partial sum of part (rank - 1 - s) and receives
    // that of part (rank - 2 - s); step 0 sends this rank's own share.
    for step in 0..ranks - 1 {
        let outgoing: &[f32] = if step == 0 { own((rank + ranks - 1) % ranks) } else { &partial[..] };
        send_receive(&next, outgoing, &previous, &mut incoming[..], polite);
        let block = (rank + 2 * ranks - 2 - step) % ranks;
        let sum = if step == ranks - 2 { &mut part[..] } else { &mut partial[..] };
        for ((s, a), b) in sum.iter_mut().zip(incoming.iter()).zip(own(block)) {
            *s = a + b;
        }
    }
}

/// Send `outgoing` to `to` while receiving `incoming` from `from`.
fn send_receive(
    to: &mpi::topology::Process<'_>,
    outgoing: &[f32],
    from: &mpi::topology::Process<'_>,
    incoming: &mut [f32],
    polite: bool,
) {
    if polite {
        mpi::request::scope(|scope| {
            let sent = to.immediate_send_with_tag(scope, outgoing, RING_TAG);
            crate::polite::wait(from.immediate_receive_into_with_tag(scope, incoming, RING_TAG));
            crate::polite::wait(sent);
        });
    } else {
        mpi::point_to_point::send_receive_into_with_tags(outgoing, to, RING_TAG, incoming, from, RING_TAG);
    }
}

/// `recv` = every rank's `part`, in rank order.
fn all_gather(comm: &SimpleCommunicator, part: &[f32], recv: &mut [f32], polite: bool) {
    if polite {
        mpi::request::scope(|scope| crate::polite::wait(comm.immediate_all_gather_into(scope, part, recv)));
    } else {
        comm.all_gather_into(part, recv);
    }
}
