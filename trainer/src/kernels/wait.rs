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
//! during a step the pool holds its idle workers awake
//! ([`rayon_core::keep_awake`], our patch of rayon-core), each looking for
//! work again after yielding its core to any other runnable thread. It
//! lives in rayon's own idle loop, not in a job: a job that looked for
//! work until the step ended could be taken by a thread waiting inside a
//! `join` of the step's own work, and would hold that `join`, and so the
//! step, for good (`vendor/rayon-core/PATCHED.md`). It pays only where every pool
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

/// Runs `work` on the calling thread, the pool's idle threads waiting
/// for its parallel operations as `policy` says: awake from the start of
/// `work` to its end, however it ends (a panic included), under
/// [`WaitPolicy::Active`]. The pool is the caller's ([`super::on_pool`]),
/// or the global one when called from outside any pool.
pub fn busy<T>(policy: WaitPolicy, work: impl FnOnce() -> T) -> T {
    if policy == WaitPolicy::Passive || rayon::current_num_threads() < 2 {
        return work();
    }
    let _awake = rayon_core::keep_awake();
    work()
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
    fn parallel_work_gives_the_same_results_under_either_policy_and_the_holds_end() {
        let expected: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
        for policy in [WaitPolicy::Active, WaitPolicy::Passive] {
            // Fifty steps, each one parallel operation.
            let steps: Vec<Vec<u64>> = super::super::on_pool(|| {
                (0..50).map(|_| busy(policy, || (0..10_000u64).into_par_iter().map(|i| i * i).collect())).collect()
            });
            assert!(steps.iter().all(|step| *step == expected), "{policy:?}");
        }
        assert!(every_hold_released(), "the pool was left held awake");
    }

    #[test]
    fn a_step_holds_the_pool_awake_until_it_ends_and_a_panicking_one_too() {
        let held = super::super::on_pool(|| busy(WaitPolicy::Active, rayon_core::awake_holds));
        assert!(held >= 1, "no hold during an active step");
        let caught =
            super::super::on_pool(|| std::panic::catch_unwind(|| busy(WaitPolicy::Active, || panic!("step failed"))));
        assert!(caught.is_err());
        assert!(every_hold_released(), "the pool was left held awake");
    }

    #[test]
    fn steps_of_nested_joins_finish_when_other_steps_share_the_pool() {
        // The hang the active policy once had: a thread waiting inside a
        // join of a step's work (a nested parallel operation, as a
        // convolution inside a parallel loop makes) took that step's
        // looking job, which held the join until the step ended. Two step
        // sequences at once (the test harness runs tests on several
        // threads over the global pool) each with nested joins; a hang
        // fails within a minute instead of holding CI.
        let (sent, finished) = std::sync::mpsc::channel();
        for sequence in 0..2u64 {
            let sent = sent.clone();
            std::thread::spawn(move || {
                let sums: Vec<u64> = super::super::on_pool(|| {
                    (0..300u64)
                        .map(|step| {
                            busy(WaitPolicy::Active, || {
                                (0..16u64)
                                    .into_par_iter()
                                    .map(|row| {
                                        (0..2_000u64).into_par_iter().map(|i| i ^ (row + step + sequence)).sum::<u64>()
                                    })
                                    .sum::<u64>()
                            })
                        })
                        .collect()
                });
                let _ = sent.send(sums);
            });
        }
        for _ in 0..2 {
            let sums = finished.recv_timeout(std::time::Duration::from_secs(60));
            assert!(sums.is_ok_and(|sums| sums.len() == 300), "a step sequence did not finish within a minute");
        }
        assert!(every_hold_released(), "the pool was left held awake");
    }

    /// Whether every hold on the pool is released within a few seconds
    /// (the tests of this module run at once, each step holding the pool
    /// while it runs; one never released keeps its threads awake for good).
    fn every_hold_released() -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while rayon_core::awake_holds() > 0 {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }
}
