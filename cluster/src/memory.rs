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

/// Memory the kernel says can be allocated without swapping (Linux
/// `MemAvailable`), or `None` where it does not say.
pub fn available_bytes() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable")
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
    fn available_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(super::available_bytes().is_some_and(|b| b > 0));
        }
    }
}
