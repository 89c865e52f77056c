//! The memory policy of the trainer's processes: keep and reuse what a
//! step frees, in glibc's allocator (which the C libraries underneath, Open
//! MPI and HDF5, call) and in mimalloc (which the `trainer` binary and the
//! benches that time its steps declare as Rust's global allocator).
//!
//! A training step frees and reallocates the same tensors every time.
//! mimalloc by default hands the pages of freed memory back to the kernel
//! ("purges" them) a second after they fall free, and it asks for transparent
//! huge pages for its arenas, so the next step faults them in again and the
//! kernel zeroes whole 2 MiB pages: on the large configurations that
//! zeroing is a visible share of a step (docs/benchmarks.md, Allocator).
//! [`keep_freed_memory`] turns purging off, as
//! [`cluster::allocator::keep_freed_memory`] turns off glibc's trimming: the
//! process keeps its peak working set for reuse.
//!
//! ```no_run
//! // First in `main`, before the pool's threads start.
//! trainer::allocator::keep_freed_memory();
//! ```

use std::ffi::{c_int, c_long};

/// The global allocator the `trainer` binary declares.
pub type Allocator = mimalloc::MiMalloc;

/// mimalloc's environment variable for the purge delay: a user who sets it
/// (to give memory back on a crowded node) keeps the choice.
pub const PURGE_DELAY_VARIABLE: &str = "MIMALLOC_PURGE_DELAY";

/// `mi_option_purge_delay` in `mi_option_e` of mimalloc's `mimalloc.h`
/// (v2.1 and v3 alike: it took the place of v2.0's `mi_option_reset_delay`).
/// The `libmimalloc-sys` crate's extended API has no constant for it.
const PURGE_DELAY: c_int = 15;

/// mimalloc v3's default purge delay in milliseconds (`src/options.c`; the
/// header's comment still says v2's 10): a test reads it to check that
/// [`PURGE_DELAY`] still names that option.
pub const DEFAULT_PURGE_DELAY_MS: i64 = 1000;

// mimalloc's C API (`mimalloc.h`), linked through the `mimalloc` crate.
#[allow(unsafe_code)]
unsafe extern "C" {
    fn mi_option_get(option: c_int) -> c_long;
    fn mi_option_set(option: c_int, value: c_long);
}

/// Keep freed memory for reuse in both allocators: glibc's through
/// [`cluster::allocator::keep_freed_memory`], mimalloc's by never purging
/// (unless [`PURGE_DELAY_VARIABLE`] is set). Call it first in `main`,
/// before any thread starts.
pub fn keep_freed_memory() {
    cluster::allocator::keep_freed_memory();
    if std::env::var_os(PURGE_DELAY_VARIABLE).is_none() {
        // SAFETY: mi_option_set stores one integer in mimalloc's option
        // table; any value is valid for the purge delay (-1: never).
        #[allow(unsafe_code)]
        unsafe {
            mi_option_set(PURGE_DELAY, -1);
        }
    }
    // Keeps the crate (and with it the C library these symbols are in)
    // linked into binaries that do not declare it as their allocator.
    let _ = std::mem::size_of::<Allocator>();
}

/// mimalloc's purge delay in milliseconds as it stands (-1: never).
pub fn purge_delay_ms() -> i64 {
    // SAFETY: mi_option_get reads one integer from mimalloc's option table
    // (initialising it from the environment on first use).
    #[allow(unsafe_code)]
    let value = unsafe { mi_option_get(PURGE_DELAY) };
    // `c_long` is 32 bits on some targets.
    #[allow(clippy::useless_conversion)]
    i64::from(value)
}
