//! Loader workers as background work for the kernel's scheduler.
//!
//! Why: a worker sleeps until the consumer takes a batch and wakes it. A
//! thread that slept has little CPU time counted against it, so Linux's
//! scheduler lets the woken worker preempt the thread that woke it, and
//! on a node whose cores all train (2 ranks on 2 cores) the consumer sat
//! in `next()` while the worker decoded its next batch there: "data wait"
//! in most steps though the batch it asked for was ready. `SCHED_BATCH`
//! (sched(7): "this thread is mildly disfavored in scheduling decisions"
//! at wake-up) takes that preemption away; the worker still gets its share
//! of the cores, and any idle core at once. What it did to the wait and
//! the throughput on the hosts measured: `docs/benchmarks.md`, CosmoFlow.

/// Mark the calling thread as batch work (`SCHED_BATCH`, nice unchanged).
/// Needs no privilege. A kernel that refuses leaves the thread as it was:
/// only who waits when changes, never what is delivered, so the refusal
/// is logged, not an error.
pub(crate) fn mark_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 names the calling thread; `param` is a valid
        // sched_param that outlives the call.
        #[allow(unsafe_code)]
        let status = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
        if status != 0 {
            tracing::debug!("loader worker left at its scheduling class: {}", std::io::Error::last_os_error());
        }
    }
}
