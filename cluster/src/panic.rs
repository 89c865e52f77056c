//! A panic anywhere in a rank ends the whole MPI job.
//!
//! Without this, a rank that panics unwinds, drops its [`World`](crate::World)
//! and calls `MPI_Finalize`, while every other rank waits in its next
//! collective for a partner that will never come: a 4,000-node job hangs
//! until its wall-clock limit. [`abort_job_on_panic`] installs a panic hook
//! that prints one line naming the rank, the node, the thread and where it
//! panicked, then calls `MPI_Abort` on `MPI_COMM_WORLD`, which the MPI
//! launcher turns into the end of every rank.
//!
//! The hook applies to every thread of the process, including the workers
//! of libraries (a loader worker that would otherwise hand its panic to its
//! consumer as an error): in an MPI job the first panic is the one worth
//! reporting, and it ends the job at once.

use std::panic::PanicHookInfo;

use crate::Topology;

/// Exit code of a job ended by a panic (the code Rust gives a panicking
/// process).
pub const PANIC_EXIT_CODE: i32 = 101;

/// The one line printed for a panic: `rank 1 (node 0): thread 'main'
/// panicked at src/x.rs:3:5: message`.
pub fn panic_line(topology: &Topology, thread: Option<&str>, info: &PanicHookInfo<'_>) -> String {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    let location =
        info.location().map_or_else(String::new, |l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()));
    let thread = thread.unwrap_or("<unnamed>");
    // One line: a multi-line message would interleave with other ranks' output.
    let message = message.replace('\n', " | ");
    format!("rank {} (node {}): thread '{thread}' panicked{location}: {message}", topology.rank, topology.node)
}

/// From now on, a panic on any thread of this process prints one line
/// naming the rank and ends every rank of the job with `MPI_Abort` (exit
/// code [`PANIC_EXIT_CODE`]). Outside an initialised MPI (before
/// `MPI_Init` or after `MPI_Finalize`) the line is printed and the panic
/// unwinds as usual.
pub fn abort_job_on_panic(topology: &Topology) {
    let topology = *topology;
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        let line = panic_line(&topology, thread.name(), info);
        crate::logging::print_error(format_args!("{line}"));
        if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
            use mpi::traits::Communicator as _;
            mpi::topology::SimpleCommunicator::world().abort(PANIC_EXIT_CODE);
        }
    }));
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn the_panic_line_names_rank_node_thread_and_place_on_one_line() {
        let topology = Topology::from_leaders(3, &[0, 0, 2, 2]).unwrap_or_else(|e| panic!("{e}"));
        let seen = Arc::new(Mutex::new(None));
        let sink = seen.clone();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let line = panic_line(&topology, std::thread::current().name(), info);
            *sink.lock().unwrap_or_else(|p| p.into_inner()) = Some(line);
        }));
        let outcome = std::thread::Builder::new()
            .name("worker-7".into())
            .spawn(|| panic!("first\nsecond {}", 2))
            .map(|handle| handle.join());
        std::panic::set_hook(previous);
        assert!(matches!(outcome, Ok(Err(_))), "the thread should have panicked");
        let line = seen.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
        assert!(line.starts_with("rank 3 (node 1): thread 'worker-7' panicked at "), "{line}");
        assert!(line.ends_with("panic.rs") || line.contains("src/panic.rs:"), "{line}");
        assert!(line.ends_with(": first | second 2"), "{line}");
        assert!(!line.contains('\n'));
    }
}
