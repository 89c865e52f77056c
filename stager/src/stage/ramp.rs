//! How many of a rank's read threads may read at once. Staging for a
//! service reads in the order training needs the files, and what matters
//! is when each file is complete: eight threads reading eight files at once
//! share the source's bandwidth, so the first-needed file is complete only
//! when the eighth is. A ramp admits one thread, then one more each time a
//! file completes, up to all of them: the first files get the whole
//! bandwidth and arrive first, and the threads' concurrency (which a
//! latency-bound parallel file system needs) is reached after a handful of
//! files. A plain stage, where only the end matters, admits all at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Admission of read threads.
pub(super) struct Ramp {
    admitted: AtomicUsize,
}

impl Ramp {
    /// Every thread reads at once.
    pub(super) fn all() -> Ramp {
        Ramp { admitted: AtomicUsize::new(usize::MAX) }
    }

    /// One thread at first, one more per completed file.
    pub(super) fn one_by_one() -> Ramp {
        Ramp { admitted: AtomicUsize::new(1) }
    }

    /// Block thread `thread` (0-based) until it is admitted: `true`, or
    /// `false` as soon as `nothing_left()` says there is nothing to read.
    pub(super) fn enter(&self, thread: usize, nothing_left: impl Fn() -> bool) -> bool {
        loop {
            if self.admitted.load(Ordering::Acquire) > thread {
                return true;
            }
            if nothing_left() {
                return false;
            }
            // Files take milliseconds at the least; a waiting thread costs nothing.
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// A file is complete: admit one more thread.
    pub(super) fn file_done(&self) {
        let _ = self.admitted.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_admitted_one_per_completed_file_and_leave_when_nothing_is_left() {
        let ramp = Ramp::one_by_one();
        assert!(ramp.enter(0, || false), "the first thread reads at once");
        let left = AtomicUsize::new(1);
        std::thread::scope(|s| {
            let second = s.spawn(|| ramp.enter(1, || left.load(Ordering::SeqCst) == 0));
            let third = s.spawn(|| ramp.enter(2, || left.load(Ordering::SeqCst) == 0));
            std::thread::sleep(Duration::from_millis(20));
            assert!(!second.is_finished() && !third.is_finished(), "admitted before any file completed");
            ramp.file_done();
            assert!(second.join().unwrap(), "the second thread after the first file");
            std::thread::sleep(Duration::from_millis(20));
            assert!(!third.is_finished(), "the third needs a second completed file");
            left.store(0, Ordering::SeqCst);
            assert!(!third.join().unwrap(), "nothing left to read: it leaves without reading");
        });
        let all = Ramp::all();
        assert!(all.enter(7, || false));
        all.file_done();
        assert!(all.enter(usize::MAX - 1, || false), "admitting more never overflows");
    }
}
