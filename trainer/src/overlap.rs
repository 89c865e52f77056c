//! Gradients averaged during back-propagation (Kurth et al. 2018, TensorFlow
//! at scale, §II; Laanait et al. 2019, §4): the gradient tensors are
//! grouped into buffers of a fixed byte size, and a buffer is handed to a
//! communication thread as soon as back-propagation has produced every
//! tensor in it, so its allreduce runs under the rest of the backward pass.
//! The optimiser step then waits only for what is not yet reduced.
//!
//! The groups are a [`FusionPlan`] over the tensors in reverse order:
//! back-propagation produces the last layers' gradients first, so the
//! first buffer fills first. Buffers are handed over strictly in their
//! order, which is the same on every rank whatever the step's timing, so
//! the ranks' collectives always match. Needs `MPI_THREAD_MULTIPLE`.

use cluster::World;
use cluster::allreduce::{AllreduceError, Exchange};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::exchange::{bits, bitvector};
use crate::fusion::FusionPlan;
use crate::summing_thread::SummingThread;

/// A buffer on its way to or from the communication thread: its index, what
/// this rank sends, and the sum.
type InFlight = (usize, Vec<f32>, Vec<f32>);

/// What can go wrong between the training thread and the communication
/// thread.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OverlapError {
    /// A tensor's gradient came from two segments of the backward pass: it
    /// was not final when first handed over.
    #[error(
        "parameter tensor {0} has gradients in two segments of the backward pass; a model that cuts its backward pass must keep each parameter within one segment"
    )]
    Twice(usize),
    /// The communication thread ended (a panic in it; MPI errors abort).
    #[error("the gradient communication thread has ended")]
    ThreadGone,
}

/// Each step: [`put_weighted`](Self::put_weighted) every gradient as
/// back-propagation produces it (buffers leave as they fill), say when
/// [`backward_ended`](Self::backward_ended), then [`finish`](Self::finish)
/// and read the [`averaged`](Self::averaged) sums.
pub struct OverlapExchange {
    /// Over the tensors in reverse order (tensor `t` is entry `n - 1 - t`).
    plan: FusionPlan,
    /// Per buffer: how many tensors it holds.
    holds: Vec<usize>,
    /// Per buffer: tensors not yet put this step.
    missing: Vec<usize>,
    /// Per tensor: put this step.
    put: Vec<bool>,
    /// Per buffer: (send, sum), `None` while the thread has them.
    buffers: Vec<Option<(Vec<f32>, Vec<f32>)>>,
    /// The next buffer to hand over this step.
    next: usize,
    /// Buffers handed over before [`backward_ended`](Self::backward_ended) this step.
    early: usize,
    /// Buffers handed over early and in all, over the run.
    counts: GroupCounts,
    thread: SummingThread<InFlight>,
    /// For the ranks' agreement on which tensors some rank has a gradient
    /// for (sparse models), on the training thread.
    comm: SimpleCommunicator,
}

/// Groups reduced, and of them those handed to the exchange before the
/// backward pass had ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GroupCounts {
    /// Gradient groups (fusion buffers) reduced.
    pub groups: u64,
    /// Of them, handed to the exchange while back-propagation still ran.
    pub during_backward: u64,
}

impl OverlapExchange {
    /// An exchange of tensors of `lengths` values in groups of at most
    /// `group_bytes` (0: one per tensor), summed as `exchange` says, on a
    /// thread of its own. `None` if MPI lacks thread support. Collective.
    pub fn new(
        world: &World,
        lengths: &[usize],
        group_bytes: usize,
        exchange: Exchange,
    ) -> Option<Result<Self, AllreduceError>> {
        let thread = SummingThread::start(world, exchange, |sum, (_, send, reduced): &mut InFlight| {
            sum.sum_into(send, reduced);
        })?;
        let thread = match thread {
            Ok(thread) => thread,
            Err(e) => return Some(Err(e)),
        };
        let reversed: Vec<usize> = lengths.iter().rev().copied().collect();
        let plan = FusionPlan::new(&reversed, group_bytes);
        let mut holds = vec![0; plan.buffers()];
        for entry in 0..reversed.len() {
            holds[plan.place(entry).0] += 1;
        }
        let buffers = (0..plan.buffers()).map(|b| Some((vec![0.0; plan.buffer_len(b)], vec![0.0; plan.buffer_len(b)])));
        Some(Ok(OverlapExchange {
            missing: holds.clone(),
            holds,
            put: vec![false; lengths.len()],
            buffers: buffers.collect(),
            next: 0,
            early: 0,
            counts: GroupCounts::default(),
            plan,
            thread,
            comm: world.comm().duplicate(),
        }))
    }

    /// Number of groups each step reduces.
    pub fn groups(&self) -> usize {
        self.plan.buffers()
    }

    /// Groups reduced so far, and how many left during back-propagation.
    pub fn counts(&self) -> GroupCounts {
        self.counts
    }

    fn place(&self, t: usize) -> (usize, usize, usize) {
        self.plan.place(self.put.len() - 1 - t)
    }

    /// Put tensor `t`'s gradient, times `weight` (this rank's share of the
    /// sum), in its group; the groups now complete leave for the exchange.
    pub fn put_weighted(&mut self, t: usize, gradient: &[f32], weight: f32) -> Result<(), OverlapError> {
        self.fill(t, |slot| slot.iter_mut().zip(gradient).for_each(|(s, g)| *s = g * weight))
    }

    /// Back-propagation has ended (the last segment's gradients are about
    /// to be put): the groups handed over so far ran under it.
    pub fn backward_ended(&mut self) {
        self.early = self.next;
    }

    fn fill(&mut self, t: usize, write: impl FnOnce(&mut [f32])) -> Result<(), OverlapError> {
        if std::mem::replace(&mut self.put[t], true) {
            return Err(OverlapError::Twice(t));
        }
        let (b, offset, len) = self.place(t);
        let (send, _) = self.buffers[b].as_mut().ok_or(OverlapError::Twice(t))?;
        write(&mut send[offset..offset + len]);
        self.missing[b] -= 1;
        while self.next < self.missing.len() && self.missing[self.next] == 0 {
            let (send, reduced) = self.buffers[self.next].take().ok_or(OverlapError::ThreadGone)?;
            self.thread.send((self.next, send, reduced)).map_err(|_| OverlapError::ThreadGone)?;
            self.next += 1;
        }
        Ok(())
    }

    /// Put zeros for every tensor not put this step (parameters the batch
    /// did not reach, or a rank with no sample), so every group leaves;
    /// wait for every group's sum; make ready for the next step.
    /// Collective.
    pub fn finish(&mut self) -> Result<(), OverlapError> {
        for t in 0..self.put.len() {
            if !self.put[t] {
                self.fill(t, |slot| slot.fill(0.0))?;
            }
        }
        for _ in 0..self.buffers.len() {
            let (b, send, reduced) = self.thread.recv().ok_or(OverlapError::ThreadGone)?;
            self.buffers[b] = Some((send, reduced));
        }
        self.counts.groups += self.buffers.len() as u64;
        self.counts.during_backward += self.early as u64;
        self.missing.copy_from_slice(&self.holds);
        self.put.fill(false);
        (self.next, self.early) = (0, 0);
        Ok(())
    }

    /// As [`finish`](Self::finish) for a model whose gradients may be
    /// sparse: the ranks also agree which tensors some rank had a gradient
    /// for (`present`: this rank's), with one allreduce of a bitvector, and
    /// the optimiser leaves the others alone. Every group is reduced whole
    /// (zeros where a rank had nothing), so the bytes are those of a dense
    /// exchange. Collective.
    pub fn finish_present(&mut self, present: &[bool]) -> Result<Vec<bool>, OverlapError> {
        self.finish()?;
        let mut union = vec![0u64; present.len().div_ceil(64)];
        self.comm.all_reduce_into(&bitvector(present)[..], &mut union[..], SystemOperation::bitwise_or());
        Ok(bits(&union, present.len()))
    }

    /// Tensor `t`'s sum over the ranks of its weighted gradients, after
    /// [`finish`](Self::finish); `None` while its group is in flight.
    pub fn averaged(&self, t: usize) -> Option<&[f32]> {
        let (b, offset, len) = self.place(t);
        self.buffers[b].as_ref().map(|(_, reduced)| &reduced[offset..offset + len])
    }
}
