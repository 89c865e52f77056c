//! Waiting for MPI without taking a core. Open MPI's blocking calls spin
//! (and, oversubscribed, yield in a loop); on a node whose cores read,
//! write and hash, a spinning wait takes the CPU from the threads it waits
//! for. These wait by testing with short sleeps in between.
//!
//! ```no_run
//! # let world = cluster::World::init()?;
//! use mpi::traits::*;
//! let mut buffer = [0u8; 4];
//! mpi::request::scope(|scope| {
//!     let peer = world.comm().process_at_rank(0);
//!     cluster::polite::wait(peer.immediate_receive_into(scope, &mut buffer[..]));
//! });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

/// Polls that sleep longer each time, up to a cap.
#[derive(Debug, Clone)]
pub struct Backoff {
    polls: u64,
    spins: u64,
    step_us: u64,
    cap: u64,
}

impl Backoff {
    /// Poll `spins` times without sleeping, then sleep `step_us`, `2 step_us`,
    /// ... up to `cap step_us` microseconds between polls.
    pub fn new(spins: u64, step_us: u64, cap: u64) -> Self {
        Backoff { polls: 0, spins, step_us, cap }
    }

    /// Waiting for one message or request: spin twice, then sleep up to
    /// 200 us, so a transfer of a few milliseconds ends within a tenth of
    /// its time of being noticed.
    pub fn polite() -> Self {
        Backoff::new(2, 20, 10)
    }

    /// One poll found nothing: wait before the next.
    pub fn snooze(&mut self) {
        self.polls = (self.polls + 1).min(self.cap);
        if self.polls > self.spins {
            std::thread::sleep(Duration::from_micros(self.step_us * self.polls));
        }
    }

    /// A poll found something: the next wait starts short again.
    pub fn reset(&mut self) {
        self.polls = 0;
    }
}

/// Wait for `request` by testing it, [`Backoff::polite`] in between.
pub fn wait<'a, B: ?Sized, S: mpi::request::Scope<'a>>(mut request: mpi::request::Request<'a, B, S>) {
    let mut idle = Backoff::polite();
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        idle.snooze();
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;
    use std::time::{Duration, Instant};

    #[test]
    fn backoff_spins_then_sleeps_longer_up_to_its_cap() {
        let mut idle = Backoff::new(2, 100, 3);
        let started = Instant::now();
        idle.snooze();
        idle.snooze();
        assert!(started.elapsed() < Duration::from_micros(100), "the first two polls spin");
        let started = Instant::now();
        for _ in 0..4 {
            idle.snooze();
        }
        // 300 us each, the cap: at least 1.2 ms.
        assert!(started.elapsed() >= Duration::from_micros(1200));
        idle.reset();
        let started = Instant::now();
        idle.snooze();
        assert!(started.elapsed() < Duration::from_micros(100), "a reset spins again");
    }
}
