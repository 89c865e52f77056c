//! How the pool's threads wait between the parallel operations of a
//! training step: asleep (rayon's own way) or awake, looking for work.
//!
//! A step of a small network is hundreds of parallel operations of tens
//! to hundreds of microseconds each, and between them the thread that
//! drives the step does serial work (burn's graph, small element-wise
//! operations). rayon puts an idle worker to sleep after a few dozen
//! rounds of looking for work, so most operations start by waking the
//! other threads through the kernel (a futex, an interrupt to another
//! core in a VM): a profile of the inverse model's `small` step had a
//! tenth of its samples in the kernel's wake-up path, on the critical
//! path of the driving thread. OpenMP runtimes, which PyTorch and
//! TensorFlow run their kernels on, keep their threads spinning for a
//! while after each parallel region (`OMP_WAIT_POLICY=active`,
//! `GOMP_SPINCOUNT`); [`WaitPolicy::Active`] is the same for rayon:
//! during a step each other worker runs a job that looks for work
//! ([`rayon::yield_now`]) until the step ends, yielding its core to any
//! other runnable thread between looks. It pays only where every pool
//! thread has a core of its own: with more ranks and threads than cores
//! a looking thread takes time from one that computes, which is why
//! [`WaitPolicy::auto`] chooses it only then (`docs/benchmarks.md`,
//! "Waiting between operations").
//!
//! ```
//! use trainer::kernels::wait::{WaitPolicy, busy};
//!
//! let sum: u64 = trainer::kernels::on_pool(|| {
//!     busy(WaitPolicy::Active, || {
//!         use rayon::prelude::*;
//!         (0..1000u64).into_par_iter().sum()
//!     })
//! });
//! assert_eq!(sum, 499_500);
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Looking jobs running now, in every pool (what the tests check ends).
static LOOKING: AtomicUsize = AtomicUsize::new(0);

/// How idle pool threads wait during a training step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitPolicy {
    /// Awake, looking for work (yielding the core between looks).
    Active,
    /// Asleep until woken (rayon's default).
    Passive,
}

impl WaitPolicy {
    /// Active when each of the `pool_threads` of each of the
    /// `ranks_on_machine` ranks has one of the machine's `cores` to
    /// itself; passive otherwise (several ranks on few cores, as the tests
    /// and demos run them), and with one thread, which has no one to wait
    /// for.
    pub fn auto(ranks_on_machine: usize, pool_threads: usize, cores: usize) -> WaitPolicy {
        let wanted = ranks_on_machine.max(1).saturating_mul(pool_threads);
        if pool_threads > 1 && wanted <= cores { WaitPolicy::Active } else { WaitPolicy::Passive }
    }

    /// [`WaitPolicy::auto`] for this process's pool and the cores it may
    /// run on (its affinity and quota, as `available_parallelism` says).
    pub fn auto_here(ranks_on_machine: usize) -> WaitPolicy {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        WaitPolicy::auto(ranks_on_machine, rayon::current_num_threads(), cores)
    }

    /// The policy's name, as the option and the report spell it.
    pub fn name(self) -> &'static str {
        match self {
            WaitPolicy::Active => "active",
            WaitPolicy::Passive => "passive",
        }
    }
}

/// Runs `work` on the calling thread, the pool's other threads waiting
/// for its parallel operations as `policy` says. Called from a pool thread
/// ([`super::on_pool`]); from elsewhere every pool thread looks for work.
pub fn busy<T>(policy: WaitPolicy, work: impl FnOnce() -> T) -> T {
    if policy == WaitPolicy::Passive || rayon::current_num_threads() < 2 {
        return work();
    }
    let done = Arc::new(AtomicBool::new(false));
    let caller = rayon::current_thread_index();
    let looking = Arc::clone(&done);
    // One job on every pool thread (a broadcast: each thread takes its
    // own, so no thread runs two). The caller's copy returns at once: the
    // caller takes it only while it waits inside `work`, and looking for
    // work there until `work` ends would never end.
    rayon::spawn_broadcast(move |context| {
        if Some(context.index()) == caller {
            return;
        }
        LOOKING.fetch_add(1, Ordering::AcqRel);
        while !looking.load(Ordering::Acquire) {
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                std::thread::yield_now();
            }
        }
        LOOKING.fetch_sub(1, Ordering::AcqRel);
    });
    let _done = SetOnDrop(done);
    work()
}

/// Sets its flag when dropped, so that the looking jobs end however
/// `work` ends (a panic included).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    #[test]
    fn auto_is_active_only_when_every_pool_thread_has_a_core() {
        assert_eq!(WaitPolicy::auto(1, 2, 2), WaitPolicy::Active);
        assert_eq!(WaitPolicy::auto(2, 32, 64), WaitPolicy::Active);
        // 4 ranks of 2 threads on 2 cores: the tests' and demo's mpirun.
        assert_eq!(WaitPolicy::auto(4, 2, 2), WaitPolicy::Passive);
        assert_eq!(WaitPolicy::auto(2, 2, 2), WaitPolicy::Passive);
        // One thread waits for no one.
        assert_eq!(WaitPolicy::auto(1, 1, 8), WaitPolicy::Passive);
        assert_eq!(WaitPolicy::auto(0, 2, 2), WaitPolicy::Active);
    }

    #[test]
    fn parallel_work_gives_the_same_results_under_either_policy_and_the_lookers_end() {
        let expected: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
        for policy in [WaitPolicy::Active, WaitPolicy::Passive] {
            // Fifty steps, each one parallel operation.
            let steps: Vec<Vec<u64>> = super::super::on_pool(|| {
                (0..50).map(|_| busy(policy, || (0..10_000u64).into_par_iter().map(|i| i * i).collect())).collect()
            });
            assert!(steps.iter().all(|step| *step == expected), "{policy:?}");
        }
        assert!(every_looker_ended(), "a looker was left holding a pool thread");
    }

    #[test]
    fn a_panicking_step_ends_its_lookers() {
        let caught =
            super::super::on_pool(|| std::panic::catch_unwind(|| busy(WaitPolicy::Active, || panic!("step failed"))));
        assert!(caught.is_err());
        assert!(every_looker_ended(), "a looker was left holding a pool thread");
    }

    /// Whether every looking job has ended within a few seconds of its
    /// step (one still running holds its pool thread for good).
    fn every_looker_ended() -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while LOOKING.load(Ordering::Acquire) > 0 {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }
}
