//! Sizes and rates on the command line: `64MiB`, `1GiB`, `10GB/s`.

/// Parse a byte size such as `64MiB`, `1.5GB` or `4096`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    if significant_digits(text.trim()) > MAX_DIGITS {
        return Err(format!("{text:?} has more than {MAX_DIGITS} digits: no size needs that many"));
    }
    // parse_size rounds `0.5` to 1 byte, which a report then shows as if
    // it had been asked for; a fraction of a byte is a mistake.
    let number: String =
        text.trim().chars().take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | ' ')).collect();
    let unit = text.trim()[number.len()..].trim();
    let fractional = number.split_once('.').is_some_and(|(_, f)| f.chars().any(|c| c.is_ascii_digit() && c != '0'));
    if fractional && (unit.is_empty() || unit.eq_ignore_ascii_case("b")) {
        return Err(format!("{text:?} is not a whole number of bytes"));
    }
    parse_size::parse_size(text.trim()).map_err(|e| format!("{text:?} is not a size like 64MiB or 1GB: {e}"))
}

/// parse_size 1.x rounds a number whose digits overflow u64 by adding 1
/// to a mantissa that may be u64::MAX, unchecked: 20 or more significant
/// digits panic in a debug build and wrap to a wrong size in a release one
/// (found by the `options` fuzz target). With at most 19 the mantissa
/// stays below 10^19 and cannot overflow.
const MAX_DIGITS: usize = 19;

/// Digits of the number `text` starts with, leading zeros not counted.
fn significant_digits(text: &str) -> usize {
    text.chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | ' '))
        .filter(char::is_ascii_digit)
        .skip_while(|&c| c == '0')
        .count()
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

    /// Regression: the fuzz target's crash input, a number just past u64::MAX.
    #[test]
    fn a_number_of_too_many_digits_is_refused_not_wrapped() {
        for text in ["0184467440737095516155", "18446744073709551615", "99999999999999999999999GB"] {
            let Err(e) = parse_bytes(text) else { panic!("{text} was accepted") };
            assert!(e.contains("digits"), "{text}: {e}");
        }
        assert_eq!(parse_bytes("0000000000000000000000064MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1_000_000"), Ok(1_000_000));
    }

    /// A hostile test's case: `--chunk-size 0.5` was reported as 1.
    #[test]
    fn a_fraction_of_a_byte_is_refused() {
        for text in ["0.5", "1.25B", " 3.7 b"] {
            let Err(e) = parse_bytes(text) else { panic!("{text} was accepted") };
            assert!(e.contains("whole number of bytes"), "{text}: {e}");
        }
        assert_eq!(parse_bytes("2.0"), Ok(2));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
    }

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
