//! How a process asks glibc's allocator to treat large blocks. Two
//! policies, chosen once at start-up by each binary:
//!
//! - [`map_large_blocks`] (stager, simgen, the soak): blocks of 128 KiB and
//!   more always come from their own mapping and go back to the kernel on
//!   free. glibc otherwise raises its mmap threshold each time such a block
//!   is freed, so the next 1 MiB chunk buffer comes from a thread's arena
//!   instead, and the arenas keep what they once held: a long-running loop
//!   of stage-and-load rounds crept up in steps of 2 to 6 MiB per rank.
//!   With the threshold fixed it stays flat (docs/reliability.md, soak).
//! - [`keep_freed_memory`] (trainer): the opposite. A training step frees
//!   and reallocates the same large tensors every time; keeping them in the
//!   heap saves the page faults and zeroing of fresh mappings. glibc will
//!   not serve a block above 32 MiB from a heap while it may map it (its
//!   threshold's ceiling), and the threads' own arenas map what exceeds
//!   their 64 MiB heaps; a CosmoGAN `paper` step's transposed-convolution
//!   buffers are larger than both. So this policy maps nothing and keeps
//!   one arena: every block comes from the main heap and is reused there
//!   (docs/benchmarks.md, CosmoGAN, has the page faults per step).
//!   jemalloc and mimalloc, tried in its place, faulted more, not less.
//!
//! Both fix the threshold, which is what stops glibc's dynamic adjustment.
//! Where the allocator is not glibc's they do nothing.

/// glibc's default mmap threshold, fixed: 128 KiB.
const MAP_THRESHOLD: i32 = 128 << 10;
/// Largest allocation [`keep_freed_memory`] serves from the heap (glibc's
/// own ceiling).
const KEEP_MMAP_THRESHOLD: i32 = 32 << 20;
/// Free memory at the top of the heap [`keep_freed_memory`] keeps.
const KEEP_TRIM_THRESHOLD: i32 = 1 << 30;

/// One of glibc's allocator parameters (`mallopt`'s `M_*`).
#[derive(Debug, Clone, Copy)]
enum Param {
    MmapThreshold,
    TrimThreshold,
    /// Blocks that may come from their own mapping at once.
    MaxMappings,
    /// Arenas in all (1: the main heap alone, shared by every thread).
    MaxArenas,
}

/// Serve blocks of 128 KiB and more from their own mappings, always, and
/// return them to the kernel when freed: resident memory then follows what
/// is in use, round after round.
pub fn map_large_blocks() {
    set(&[(Param::MmapThreshold, MAP_THRESHOLD)]);
}

/// Keep and reuse freed blocks of every size (up to 1 GiB of free heap at
/// its top) instead of returning them, all threads on one heap: for
/// processes that free and reallocate the same large buffers every step.
///
/// Call it first in `main`, before any thread starts: a thread that has
/// allocated already keeps the arena it was given.
pub fn keep_freed_memory() {
    set(&[
        (Param::MmapThreshold, KEEP_MMAP_THRESHOLD),
        (Param::TrimThreshold, KEEP_TRIM_THRESHOLD),
        (Param::MaxMappings, 0),
        (Param::MaxArenas, 1),
    ]);
}

#[allow(unused_variables)]
fn set(settings: &[(Param, i32)]) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for &(param, value) in settings {
        let param = match param {
            Param::MmapThreshold => libc::M_MMAP_THRESHOLD,
            Param::TrimThreshold => libc::M_TRIM_THRESHOLD,
            Param::MaxMappings => libc::M_MMAP_MAX,
            Param::MaxArenas => libc::M_ARENA_MAX,
        };
        // SAFETY: mallopt only sets allocator parameters, under the
        // allocator's own lock; it touches no memory of ours.
        #[allow(unsafe_code)]
        unsafe {
            libc::mallopt(param, value);
        }
    }
}
