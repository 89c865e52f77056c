//! Keep freed memory in the process between training steps.
//!
//! A step allocates and frees the same large tensors every time (8 MiB per
//! activation at CosmoFlow's first layer). glibc serves allocations above
//! its mmap threshold with fresh mappings and unmaps them on free, so every
//! step paid page faults and page zeroing for every activation: 20 % of a
//! `mlperf-small` step on this project's bench machine (0.111 → 0.087 s,
//! `cargo bench -p stagehand-trainer --bench step`). Raising the threshold
//! (and the heap trim threshold) lets freed blocks be reused instead.

/// Largest allocation still served from the heap (glibc's own ceiling).
const MMAP_THRESHOLD: i32 = 32 << 20;
/// Free memory at the top of the heap kept rather than returned to the OS.
const TRIM_THRESHOLD: i32 = 1 << 30;

/// Tell the allocator to keep and reuse freed blocks up to 32 MiB (up to
/// 1 GiB of free heap in all). Call once at start-up; a no-op where the
/// allocator is not glibc's.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters, under the allocator's
    // own lock; it touches no memory of ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
