//! What a rank reports about its own memory.

/// Peak resident memory of this process in bytes (Linux `VmHWM`), 0 where
/// unknown: the figure every MPI tool's report gives per rank.
pub fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resident memory of this process now in bytes (Linux `VmRSS`), or `None`
/// where the kernel does not say: what a soak test watches for growth.
pub fn current_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Memory the kernel says can be allocated without swapping (Linux
/// `MemAvailable`), or `None` where it does not say.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
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
