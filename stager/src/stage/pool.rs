//! A rank's in-flight budget: at most `capacity` chunks read but not yet
//! sent, and the buffers they are read into, reused most recent first (the
//! buffer a receiver has just copied from is the likeliest still in cache).

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::files::AlignedBuffer;

pub(super) struct Pool {
    state: Mutex<State>,
    freed: Condvar,
    capacity: usize,
    buffer_len: usize,
}

struct State {
    in_flight: usize,
    spare: Vec<AlignedBuffer>,
}

impl Pool {
    /// Room for `max_inflight / buffer_len` chunks (at least one).
    pub(super) fn new(max_inflight: u64, buffer_len: usize) -> Self {
        let capacity = usize::try_from(max_inflight / buffer_len.max(1) as u64).unwrap_or(usize::MAX).max(1);
        Pool {
            state: Mutex::new(State { in_flight: 0, spare: Vec::new() }),
            freed: Condvar::new(),
            capacity,
            buffer_len,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait for room for one more chunk, then count it in flight.
    pub(super) fn reserve(&self) {
        let mut state = self.lock();
        while state.in_flight >= self.capacity {
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.in_flight += 1;
    }

    /// A buffer for a reserved chunk: a spare one, or a new one (there are
    /// never more buffers than reservations).
    pub(super) fn buffer(&self) -> AlignedBuffer {
        self.lock().spare.pop().unwrap_or_else(|| AlignedBuffer::new(self.buffer_len))
    }

    /// A reserved chunk is done with; keep its buffer, if it had one.
    pub(super) fn release(&self, buffer: Option<AlignedBuffer>) {
        let mut state = self.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        if let Some(buffer) = buffer {
            state.spare.push(buffer);
        }
        drop(state);
        self.freed.notify_one();
    }

    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.lock().in_flight
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn capacity_is_the_budget_in_whole_buffers_and_at_least_one() {
        assert_eq!(Pool::new(100, 10).capacity, 10);
        assert_eq!(Pool::new(99, 10).capacity, 9);
        assert_eq!(Pool::new(5, 10).capacity, 1);
        assert_eq!(Pool::new(0, 0).capacity, 1);
    }

    #[test]
    fn buffers_are_reused_most_recent_first() {
        let pool = Pool::new(3 * 4096, 4096);
        pool.reserve();
        pool.reserve();
        let (a, b) = (pool.buffer(), pool.buffer());
        let (pa, pb) = (a.as_slice().as_ptr(), b.as_slice().as_ptr());
        pool.release(Some(a));
        pool.release(Some(b));
        pool.reserve();
        assert_eq!(pool.buffer().as_slice().as_ptr(), pb);
        pool.reserve();
        assert_eq!(pool.buffer().as_slice().as_ptr(), pa);
    }

    #[test]
    fn reserve_waits_while_the_budget_is_spent() {
        let pool = Pool::new(2 * 4096, 4096);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..200 {
                        pool.reserve();
                        most.fetch_max(pool.in_flight(), Ordering::SeqCst);
                        std::thread::yield_now();
                        pool.release(None);
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
        assert_eq!(pool.in_flight(), 0);
    }
}
