//! Sizes and rates on the command line: `64MiB`, `1GiB`, `10GB/s`.

/// Parse a byte size such as `64MiB`, `1.5GB` or `4096`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    parse_size::parse_size(text.trim()).map_err(|e| format!("{text:?} is not a size like 64MiB or 1GB: {e}"))
}

/// Parse a rate in bytes per second such as `10GB/s` or `2.5GiB/s`.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let size = text.trim().strip_suffix("/s").unwrap_or(text.trim());
    match parse_bytes(size) {
        // A rate of nothing per second would take forever (and its pacing
        // divides by it).
        Ok(0) => Err(format!("{text:?}: a rate must be above 0")),
        Ok(bytes) => Ok(bytes as f64),
        Err(_) => Err(format!("{text:?} is not a rate like 10GB/s or 800MiB/s")),
    }
}

/// Format bytes for people: `1.50 GiB`.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_of_zero_is_refused() {
        for zero in ["0", "0GB/s", "0 MiB/s"] {
            let Err(e) = parse_rate(zero) else { panic!("{zero} was accepted") };
            assert!(e.contains("above 0"), "{zero}: {e}");
        }
        assert_eq!(parse_rate("1B/s"), Ok(1.0));
    }

    #[test]
    fn sizes_and_rates_parse() {
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_rate("10GB/s"), Ok(1e10));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_rate("fast/s").is_err());
        assert_eq!(human_bytes(1.5 * 1024.0 * 1024.0 * 1024.0), "1.50 GiB");
    }
}
