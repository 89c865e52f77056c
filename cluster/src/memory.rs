//! What a rank reports about its own memory.

/// Field `name` (a `kB` figure) of `/proc/self/status` or `/proc/meminfo`
/// text, in bytes.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), 0 where
/// unknown: the figure every MPI tool's report gives per rank.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status").ok().and_then(|s| kib_field(&s, "VmHWM")).unwrap_or(0)
}

/// Resident memory of this process now in bytes (Linux `VmRSS`), or `None`
/// where the kernel does not say: what a soak test watches for growth.
pub fn current_rss_bytes() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmRSS")
}

/// Minor page faults this process has taken so far (`getrusage`), or
/// `None` where the call fails: how the allocator policies' tests see a
/// block served from fresh pages rather than reused ones.
pub fn minor_page_faults() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given
    // and returns 0, or returns -1 and writes nothing we read.
    #[allow(unsafe_code)]
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    u64::try_from(usage.ru_minflt).ok()
}

/// Memory the kernel says can be allocated without swapping (Linux
/// `MemAvailable`), or `None` where it does not say.
pub fn available_bytes() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable")
}

/// Memory no one uses now, not even the page cache (Linux `MemFree`), or
/// `None` where the kernel does not say: what can be taken without evicting
/// cached files, which `available_bytes` counts as available.
pub fn free_bytes() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemFree")
}

/// Why `needed` bytes per rank for `what` (the options that ask for it)
/// do not fit in what the machine has available: "`what` needs about X
/// GiB per rank; this machine has Y GiB available". `None` when they fit,
/// or when the kernel does not say what is available. Generators check
/// before MPI starts, so a size the machine cannot hold fails with one
/// line instead of an allocation failure on every rank.
pub fn shortfall(needed: f64, what: &str) -> Option<String> {
    let available = available_bytes()? as f64;
    let gib = |b: f64| b / f64::from(1u32 << 30);
    (needed > available).then(|| {
        format!(
            "{what} needs about {:.1} GiB per rank; this machine has {:.1} GiB available",
            gib(needed),
            gib(available)
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn peak_rss_covers_memory_this_process_touched() {
        let block = vec![1u8; 32 << 20];
        std::hint::black_box(&block);
        if cfg!(target_os = "linux") {
            assert!(super::peak_rss_bytes() >= 32 << 20);
        }
    }

    #[test]
    fn a_size_beyond_the_machine_is_a_shortfall_and_a_small_one_is_not() {
        if cfg!(target_os = "linux") {
            let reason = super::shortfall(1e18, "--size 10").unwrap();
            assert!(reason.starts_with("--size 10 needs about") && reason.ends_with("GiB available"), "{reason}");
            assert_eq!(super::shortfall(1.0, "--size 1"), None);
        }
    }

    #[test]
    fn available_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(super::available_bytes().is_some_and(|b| b > 0));
        }
    }
}
