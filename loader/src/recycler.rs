//! Where a consumed batch's buffers go back for reuse, and how many a
//! loader may make.
//!
//! A loader makes a batch buffer when none is free. Buffers stocked before
//! the first epoch ([`Recycler::stock`]) are made only as far as the free
//! memory holds them, and a stocked recycler is *bounded*: its loaders'
//! workers wait for a buffer to come back rather than make one more, as
//! long as the consumer has batches to take meanwhile. Otherwise a loader
//! of 1.8 GB UNet3D batches whose consumer holds one more batch than
//! planned makes a buffer in the middle of an epoch, faulted in page by
//! page while the consumer waits, and out of the page cache where the
//! dataset's files are, which are then read from disk again
//! (`docs/benchmarks.md`, DLIO).
//!
//! ```
//! use loader::pipeline::{Batch, Recycler};
//!
//! let buffers = Recycler::default();
//! buffers.recycle(Batch::default());
//! assert_eq!(buffers.held(), 1);
//! assert!(!buffers.bounded(), "nothing was stocked");
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::dataset::Dataset;
use crate::pipeline::{Batch, largest_batch_of_records, lock};

/// What a worker of a loader on a bounded recycler may do for a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Take a free one, or make one: the consumer waits for this batch
    /// next (or the loader stops).
    TakeOrMake,
    /// Take a free one, or wait for one: the consumer has an earlier batch
    /// to take first.
    TakeOrWait,
    /// Wait, even if one is free: the loader this one follows still has
    /// batches to deliver, and its workers come first.
    Later,
}

/// Memory [`Recycler::stock`] leaves free at the least: the process itself
/// still allocates as it runs.
const STOCK_MARGIN: u64 = 1 << 30;

/// Hands a consumed batch's buffers back: cloned out of a
/// [`Loader`](crate::pipeline::Loader) (see
/// [`Loader::recycler`](crate::pipeline::Loader::recycler)), so a consumer
/// that hands batches on (the Python package gives them to NumPy) returns
/// them when the last user is done, even after the loader moved to the
/// next epoch or is gone.
#[derive(Clone, Default)]
pub struct Recycler {
    pool: Arc<Pool>,
}

#[derive(Default)]
struct Pool {
    free: Mutex<Vec<Batch>>,
    /// Signalled when a buffer comes back, and when what a waiting worker
    /// waits on may have changed (a batch delivered, a consumer waiting,
    /// a loader stopping).
    changed: Condvar,
    /// Buffers were stocked ([`Recycler::stock`]).
    bounded: AtomicBool,
}

impl Recycler {
    /// Give a batch's buffers back.
    pub fn recycle(&self, batch: Batch) {
        lock(&self.pool.free).push(batch);
        self.pool.changed.notify_all();
    }

    /// Batch buffers held for reuse now.
    pub fn held(&self) -> usize {
        lock(&self.pool.free).len()
    }

    /// True once buffers were stocked: loaders on this recycler then keep
    /// to them, and make a buffer only for a batch the consumer waits for.
    pub fn bounded(&self) -> bool {
        self.pool.bounded.load(Ordering::Relaxed)
    }

    /// A free buffer for a worker's batch; `None` means make one. On a
    /// bounded recycler, `turn()` says whether the worker may take one now
    /// (asked with the free list locked, so a change it depends on,
    /// announced by [`wake`](Self::wake), is not missed).
    pub(crate) fn take_or_wait(&self, turn: impl Fn() -> Turn) -> Option<Batch> {
        let mut free = lock(&self.pool.free);
        if !self.bounded() {
            return free.pop();
        }
        loop {
            match turn() {
                Turn::TakeOrMake => return free.pop(),
                Turn::TakeOrWait => {
                    if let Some(batch) = free.pop() {
                        return Some(batch);
                    }
                }
                Turn::Later => {}
            }
            free = self.pool.changed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Tell workers waiting in [`take_or_wait`](Self::take_or_wait) to
    /// look again. Call without holding a loader's state lock (workers
    /// take the free list's lock, then the state's).
    pub(crate) fn wake(&self) {
        if self.bounded() {
            let _free = lock(&self.pool.free);
            self.pool.changed.notify_all();
        }
    }

    /// Make buffers for `count` batches of `batch` records of `dataset`
    /// now, each at the largest such batch's size with its pages in place,
    /// so that the first batches of the loaders recycling through this
    /// one are read into memory that is ready rather than faulted in and
    /// zeroed page by page as the bytes arrive (a UNet3D batch is about
    /// 1 GB). Counts the buffers it holds already, and makes one buffer at
    /// a time while the machine's free memory holds it
    /// ([`buffers_to_stock`]), so that ranks of a node stocking at once see
    /// what the others have made. The recycler is then
    /// [`bounded`](Self::bounded). For datasets of records whose lengths
    /// are known; others get nothing. Returns the bytes made.
    pub fn stock(&self, dataset: &dyn Dataset, batch: usize, count: usize) -> usize {
        self.stock_within(dataset, batch, count, cluster::memory::free_bytes)
    }

    /// [`stock`](Self::stock) with the free memory told by `free_bytes`
    /// before each buffer, for a caller that budgets memory itself.
    pub fn stock_within(
        &self,
        dataset: &dyn Dataset,
        batch: usize,
        count: usize,
        mut free_bytes: impl FnMut() -> Option<u64>,
    ) -> usize {
        let Some(bytes) = largest_batch_of_records(dataset, batch.max(1)) else {
            return 0;
        };
        let mut made = 0;
        while buffers_to_stock(count, self.held(), bytes, free_bytes()) > 0 {
            let mut records = Vec::new();
            crate::buffer::reserve(&mut records, bytes);
            crate::buffer::populate(&mut records);
            self.recycle(Batch { records, ..Batch::default() });
            made += 1;
        }
        if self.held() > 0 {
            self.pool.bounded.store(true, Ordering::Relaxed);
        }
        made * bytes
    }
}

/// How many buffers of `bytes` to make so that `count` are held, `held`
/// being held already, within `free` bytes of free memory less a margin
/// (no limit where the kernel does not say). The margin is a GiB or one
/// buffer, whichever is more: ranks of a node stocking at the same time
/// each see the buffers the others have made, not the one each is making.
/// Memory taken beyond what is free comes out of the page cache, where the
/// dataset's files most likely are, and the first epoch reads them from
/// disk again (`docs/benchmarks.md`, DLIO).
pub fn buffers_to_stock(count: usize, held: usize, bytes: usize, free: Option<u64>) -> usize {
    let missing = count.saturating_sub(held);
    match free {
        Some(free) if bytes > 0 => {
            let room = free.saturating_sub(STOCK_MARGIN.max(bytes as u64)) / bytes as u64;
            missing.min(usize::try_from(room).unwrap_or(usize::MAX))
        }
        _ => missing,
    }
}
