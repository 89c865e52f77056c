//! A thread of its own that sums buffers over the ranks while the training
//! thread computes: what the one-step-lagged exchange
//! ([`LaggedExchange`](crate::exchange::LaggedExchange)) and the exchange
//! during back-propagation ([`OverlapExchange`](crate::overlap::OverlapExchange))
//! both run their allreduces on. Needs `MPI_THREAD_MULTIPLE`.

use std::sync::mpsc;
use std::thread::JoinHandle;

use cluster::allreduce::{AllreduceError, Exchange, SumAllreduce};
use cluster::{ThreadComm, World};

/// Work `T` sent to the thread, summed there by a function given at the
/// start, and sent back in the order it was sent.
pub struct SummingThread<T> {
    to_thread: Option<mpsc::Sender<T>>,
    from_thread: mpsc::Receiver<T>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> SummingThread<T> {
    /// A thread summing over `world` as `exchange` says, applying `sum`
    /// to each piece of work. `None` if MPI lacks thread support (or the
    /// thread cannot start). Collective.
    pub fn start(
        world: &World,
        exchange: Exchange,
        sum: impl Fn(&mut SumAllreduce<ThreadComm>, &mut T) + Send + 'static,
    ) -> Option<Result<Self, AllreduceError>> {
        let mut summing: SumAllreduce<ThreadComm> = match SumAllreduce::for_threads(world, exchange)? {
            Ok(summing) => summing,
            Err(e) => return Some(Err(e)),
        };
        let (to_thread, inbox) = mpsc::channel::<T>();
        let (outbox, from_thread) = mpsc::channel::<T>();
        let thread = std::thread::Builder::new()
            .name("allreduce".into())
            .spawn(move || {
                for mut work in inbox {
                    sum(&mut summing, &mut work);
                    if outbox.send(work).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Ok(SummingThread { to_thread: Some(to_thread), from_thread, thread: Some(thread) }))
    }

    /// Hand `work` to the thread; the work back if the thread has ended.
    pub fn send(&self, work: T) -> Result<(), T> {
        match &self.to_thread {
            Some(tx) => tx.send(work).map_err(|returned| returned.0),
            None => Err(work),
        }
    }

    /// The next piece of work summed; `None` if the thread has ended.
    pub fn recv(&self) -> Option<T> {
        self.from_thread.recv().ok()
    }
}

impl<T> Drop for SummingThread<T> {
    fn drop(&mut self) {
        self.to_thread = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
