//! Averaging gradients across ranks: fused buffers, summed over the ranks
//! flat or hierarchically ([`cluster::allreduce`]), scaled by 1/ranks.
//! [`GradientExchange`] blocks; [`LaggedExchange`] runs the allreduce of
//! step t on a communication thread while step t + 1 computes, and hands
//! the average over at step t + 1 (the climate paper's one-step gradient
//! lag).

use cluster::World;
use cluster::allreduce::{AllreduceError, Exchange, SumAllreduce};
use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use rayon::prelude::*;

use crate::fusion::FusionPlan;
use crate::summing_thread::SummingThread;

/// Blocking fused allreduce-average on a private duplicate of the world
/// communicator (so it never matches another library's messages).
pub struct GradientExchange {
    plan: FusionPlan,
    fusion_bytes: usize,
    send: Vec<Vec<f32>>,
    recv: Vec<Vec<f32>>,
    sum: SumAllreduce,
    /// For the ranks' agreement on which tensors to reduce.
    comm: SimpleCommunicator,
    /// Gradient values reduced so far, and what reducing every tensor each
    /// time would have been.
    reduced: (u64, u64),
    /// The tensors whose averaged slots may hold something other than
    /// zeros: only they need zeroing when a step leaves them out.
    recv_holds: Vec<bool>,
}

impl GradientExchange {
    /// An exchange for tensors of `lengths` values, fused into buffers of at
    /// most `fusion_bytes` (0: one allreduce per tensor), summed as
    /// `exchange` says. Collective.
    pub fn new(
        world: &World,
        lengths: &[usize],
        fusion_bytes: usize,
        exchange: Exchange,
    ) -> Result<Self, AllreduceError> {
        let plan = FusionPlan::new(lengths, fusion_bytes);
        let (send, recv) = (plan.allocate(), plan.allocate());
        let sum = SumAllreduce::new(world, exchange)?;
        Ok(GradientExchange {
            plan,
            fusion_bytes,
            send,
            recv,
            sum,
            comm: world.comm().duplicate(),
            reduced: (0, 0),
            recv_holds: vec![false; lengths.len()],
        })
    }

    /// (gradient values reduced, values a reduction of every tensor each
    /// time would have moved) so far.
    pub fn reduced_values(&self) -> (u64, u64) {
        self.reduced
    }

    /// The fusion plan.
    pub fn plan(&self) -> &FusionPlan {
        &self.plan
    }

    /// Put tensor `t`'s local gradient in its fusion slot, divided by the
    /// number of ranks on the way: a trainer copies gradients out of the
    /// model anyway, so fusion and the division cost no extra pass over
    /// memory, and [`average_slots`](Self::average_slots) is the allreduce
    /// alone (what Horovod calls prescaling).
    pub fn put(&mut self, t: usize, gradient: &[f32]) {
        self.put_weighted(t, gradient, 1.0 / self.sum.ranks() as f32);
    }

    /// Put tensor `t`'s gradient with this rank's share `weight` of the
    /// sum (its samples over the step's samples on all ranks), for steps
    /// whose ranks hold batches of different sizes: the sum is then the
    /// gradient of the mean loss over every sample of the step.
    ///
    /// Returns whether every value of `gradient` is finite, checked in the
    /// same pass over memory, which for a large tensor is shared by the
    /// pool's threads: this runs between the backward pass and the
    /// optimiser, when no other work is left to the step.
    pub fn put_weighted(&mut self, t: usize, gradient: &[f32], weight: f32) -> bool {
        let (b, offset, len) = self.plan.place(t);
        debug_assert_eq!(gradient.len(), len, "tensor {t}");
        let slot = &mut self.send[b][offset..offset + len];
        let put = |(slot, gradient): (&mut [f32], &[f32])| {
            slot.iter_mut().zip(gradient).for_each(|(s, g)| *s = g * weight);
            loader::finite::all_finite(gradient)
        };
        if len < PARALLEL_FROM {
            put((slot, gradient))
        } else {
            slot.par_chunks_mut(CHUNK).zip(gradient.par_chunks(CHUNK)).map(put).reduce(|| true, |a, b| a && b)
        }
    }

    /// Put zeros for tensor `t`: a rank with no sample in this step.
    pub fn put_zeros(&mut self, t: usize) {
        let (b, offset, len) = self.plan.place(t);
        self.send[b][offset..offset + len].fill(0.0);
    }

    /// Tensor `t`'s averaged gradient after [`average_slots`](Self::average_slots).
    pub fn averaged(&self, t: usize) -> &[f32] {
        let (b, offset, len) = self.plan.place(t);
        &self.recv[b][offset..offset + len]
    }

    /// Average what was [`put`](Self::put) in the slots over the ranks: sum
    /// the pre-divided gradients. Collective.
    pub fn average_slots(&mut self) {
        if self.sum.ranks() == 1 {
            // The sum over one rank is its own slots: the buffers change
            // places rather than going through a reduction that copies
            // every value (every slot is put again before the next one).
            std::mem::swap(&mut self.send, &mut self.recv);
        } else {
            for (s, r) in self.send.iter().zip(self.recv.iter_mut()) {
                self.sum.sum_into(s, r);
            }
        }
        let total = self.plan.total() as u64;
        self.reduced = (self.reduced.0 + total, self.reduced.1 + total);
        self.recv_holds.fill(true);
    }

    /// Average only the tensors that some rank has a gradient for
    /// (`present`: this rank's, in tensor order), as Etalumis did for the
    /// proposal layers of addresses a minibatch did not visit (Baydin et
    /// al. 2019, section V-B). The ranks agree on which tensors those are
    /// with one allreduce of a bitvector; then the agreed tensors' slots
    /// (zeros where a rank had none: [`put`](Self::put) them anyway) are
    /// packed into fusion buffers of their own and reduced. Returns which
    /// tensors were averaged; the others' [`averaged`](Self::averaged)
    /// gradients are zeros. Collective.
    pub fn average_present(&mut self, present: &[bool]) -> Vec<bool> {
        let mut union = vec![0u64; present.len().div_ceil(64)];
        self.comm.all_reduce_into(&bitvector(present)[..], &mut union[..], SystemOperation::bitwise_or());
        let agreed = bits(&union, present.len());
        if agreed.iter().all(|&a| a) {
            self.average_slots();
            return agreed;
        }
        let tensors: Vec<usize> = (0..agreed.len()).filter(|&t| agreed[t]).collect();
        let lengths: Vec<usize> = tensors.iter().map(|&t| self.plan.place(t).2).collect();
        let packed = FusionPlan::new(&lengths, self.fusion_bytes);
        if self.sum.ranks() == 1 {
            // The sum over one rank is its own slots: no packing, no
            // reduction (an Etalumis `paper` step put 17 M of 57 M values
            // through two packed copies and zeroed all 57 M).
            for &t in &tensors {
                let (b, offset, len) = self.plan.place(t);
                self.recv[b][offset..offset + len].copy_from_slice(&self.send[b][offset..offset + len]);
            }
        } else {
            let slots: Vec<&[f32]> = tensors
                .iter()
                .map(|&t| {
                    let (b, offset, len) = self.plan.place(t);
                    &self.send[b][offset..offset + len]
                })
                .collect();
            let mut send = packed.allocate();
            packed.pack(&slots, &mut send);
            let mut recv = packed.allocate();
            for (s, r) in send.iter().zip(recv.iter_mut()) {
                self.sum.sum_into(s, r);
            }
            for (k, &t) in tensors.iter().enumerate() {
                let (b, offset, len) = self.plan.place(t);
                let (pb, poffset, _) = packed.place(k);
                self.recv[b][offset..offset + len].copy_from_slice(&recv[pb][poffset..poffset + len]);
            }
        }
        for (t, holds) in self.recv_holds.iter_mut().enumerate() {
            if *holds && !agreed[t] {
                let (b, offset, len) = self.plan.place(t);
                self.recv[b][offset..offset + len].fill(0.0);
            }
            *holds = agreed[t];
        }
        self.reduced = (self.reduced.0 + packed.total() as u64, self.reduced.1 + self.plan.total() as u64);
        agreed
    }

    /// Replace every tensor by its average over the ranks. Collective.
    pub fn average(&mut self, tensors: &mut [&mut [f32]]) {
        let views: Vec<&[f32]> = tensors.iter().map(|t| &**t).collect();
        self.plan.pack(&views, &mut self.send);
        for (s, r) in self.send.iter().zip(self.recv.iter_mut()) {
            self.sum.sum_into(s, r);
        }
        let scale = 1.0 / self.sum.ranks() as f32;
        self.plan.unpack(&self.recv, tensors, scale);
    }
}

/// Values of a slot one task of [`GradientExchange::put_weighted`] takes.
const CHUNK: usize = 1 << 16;
/// Slots shorter than this are put by the calling thread alone.
const PARALLEL_FROM: usize = 4 * CHUNK;

/// `flags` as bits, 64 to a word, flag `i` in bit `i % 64` of word `i / 64`.
pub fn bitvector(flags: &[bool]) -> Vec<u64> {
    let mut words = vec![0u64; flags.len().div_ceil(64)];
    for (i, _) in flags.iter().enumerate().filter(|(_, f)| **f) {
        words[i / 64] |= 1 << (i % 64);
    }
    words
}

/// The first `n` flags of a [`bitvector`].
pub fn bits(words: &[u64], n: usize) -> Vec<bool> {
    (0..n).map(|i| words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)).collect()
}

/// A send and a receive set of fusion buffers.
type Buffers = (Vec<Vec<f32>>, Vec<Vec<f32>>);

/// One-step-lagged fused allreduce-average: [`submit`](Self::submit) the
/// gradients of step t (packed, then reduced on a communication thread),
/// [`take`](Self::take) their average while at step t + 1. Needs
/// `MPI_THREAD_MULTIPLE`.
pub struct LaggedExchange {
    plan: FusionPlan,
    ranks: usize,
    thread: SummingThread<Buffers>,
    /// (send, receive) buffer sets: here between exchanges, with the
    /// communication thread while one is in flight.
    spare: Option<Buffers>,
}

impl LaggedExchange {
    /// As [`GradientExchange::new`]; `None` if MPI lacks thread support.
    pub fn new(
        world: &World,
        lengths: &[usize],
        fusion_bytes: usize,
        exchange: Exchange,
    ) -> Option<Result<Self, AllreduceError>> {
        let thread = SummingThread::start(world, exchange, |sum, (send, recv): &mut Buffers| {
            for (s, r) in send.iter().zip(recv.iter_mut()) {
                sum.sum_into(s, r);
            }
        })?;
        let thread = match thread {
            Ok(thread) => thread,
            Err(e) => return Some(Err(e)),
        };
        let plan = FusionPlan::new(lengths, fusion_bytes);
        let spare = Some((plan.allocate(), plan.allocate()));
        Some(Ok(LaggedExchange { plan, ranks: world.size(), thread, spare }))
    }

    /// Start averaging `tensors` (this step's gradients). Collective; at
    /// most one exchange in flight: [`take`](Self::take) the previous first.
    pub fn submit(&mut self, tensors: &[&[f32]]) {
        let (mut send, recv) = self.spare.take().unwrap_or_else(|| (self.plan.allocate(), self.plan.allocate()));
        self.plan.pack(tensors, &mut send);
        if let Err(returned) = self.thread.send((send, recv)) {
            self.spare = Some(returned);
        }
    }

    /// Write the average of the last submitted gradients into `tensors`;
    /// false if nothing was in flight (the first step of a lagged run).
    pub fn take(&mut self, tensors: &mut [&mut [f32]]) -> bool {
        if self.spare.is_some() {
            return false;
        }
        let Some((send, reduced)) = self.thread.recv() else { return false };
        self.plan.unpack(&reduced, tensors, 1.0 / self.ranks as f32);
        self.spare = Some((send, reduced));
        true
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The union the ranks agree on is the OR of their bitvectors: checked
    /// on disjoint, overlapping and empty sets of every size around a word.
    #[test]
    fn the_or_of_bitvectors_is_the_union_of_the_sets() {
        let union = |sets: &[&[usize]], n: usize| {
            let flags = |set: &[usize]| (0..n).map(|i| set.contains(&i)).collect::<Vec<bool>>();
            let words = sets
                .iter()
                .map(|s| bitvector(&flags(s)))
                .fold(vec![0u64; n.div_ceil(64)], |acc, w| acc.iter().zip(&w).map(|(a, b)| a | b).collect());
            (0..n).filter(|&i| bits(&words, n)[i]).collect::<Vec<usize>>()
        };
        assert_eq!(union(&[&[0, 2], &[1, 3]], 4), [0, 1, 2, 3], "disjoint");
        assert_eq!(union(&[&[0, 63, 64], &[63, 65]], 70), [0, 63, 64, 65], "overlapping, across a word");
        assert_eq!(union(&[&[], &[]], 130), Vec::<usize>::new(), "empty");
        assert_eq!(union(&[&[], &[129]], 130), [129], "one empty");
        assert_eq!(union(&[], 0), Vec::<usize>::new(), "no tensors");
    }

    proptest! {
        #[test]
        fn bits_read_back_what_bitvector_wrote(flags in proptest::collection::vec(any::<bool>(), 0..300)) {
            prop_assert_eq!(bits(&bitvector(&flags), flags.len()), flags);
        }
    }
}
