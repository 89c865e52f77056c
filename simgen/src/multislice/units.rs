//! Physical quantities as the command line spells them: `200A`, `20nm`,
//! `1.3mm`, `200kV`, `20mrad`, and thickness ranges `150A..250A`. A bare
//! number takes the default unit of the quantity.

/// A quantity that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a {what} (e.g. {example})")]
pub struct UnitError {
    /// What was given.
    pub text: String,
    /// The quantity.
    pub what: &'static str,
    /// A valid spelling.
    pub example: &'static str,
}

fn parse(text: &str, units: &[(&str, f64)], what: &'static str, example: &'static str) -> Result<f64, UnitError> {
    let bad = || UnitError { text: text.to_owned(), what, example };
    let t = text.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic() || c == 'Å' || c == 'µ').unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    let factor = units.iter().find(|(u, _)| *u == unit.trim()).map(|(_, f)| *f).ok_or_else(bad)?;
    let v = value * factor;
    if v.is_finite() { Ok(v) } else { Err(bad()) }
}

/// A length in Å (bare numbers are Å).
pub fn length(text: &str) -> Result<f64, UnitError> {
    let units = [("", 1.0), ("A", 1.0), ("Å", 1.0), ("nm", 10.0), ("um", 1e4), ("µm", 1e4), ("mm", 1e7)];
    parse(text, &units, "length", "200A, 20nm or 1.3mm")
}

/// An accelerating voltage in V (bare numbers are kV).
pub fn voltage(text: &str) -> Result<f64, UnitError> {
    parse(text, &[("", 1e3), ("kV", 1e3), ("V", 1.0), ("MV", 1e6)], "voltage", "200kV")
}

/// An angle in rad (bare numbers are mrad).
pub fn angle(text: &str) -> Result<f64, UnitError> {
    parse(text, &[("", 1e-3), ("mrad", 1e-3), ("rad", 1.0)], "angle", "20mrad")
}

/// A thickness or a range `LOW..HIGH` of them, Å.
pub fn length_range(text: &str) -> Result<(f64, f64), UnitError> {
    match text.split_once("..") {
        Some((lo, hi)) => Ok((length(lo)?, length(hi)?)),
        None => length(text).map(|l| (l, l)),
    }
}

/// A scan `NXxNY` (`32x32`) or a single count for both axes.
pub fn scan(text: &str) -> Result<(usize, usize), UnitError> {
    let bad = || UnitError { text: text.to_owned(), what: "scan", example: "32x32" };
    let parse = |t: &str| t.trim().parse::<usize>().map_err(|_| bad());
    match text.split_once(['x', 'X']) {
        Some((a, b)) => Ok((parse(a)?, parse(b)?)),
        None => parse(text).map(|n| (n, n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_with_and_without_units() {
        assert_eq!(length("200A").unwrap(), 200.0);
        assert_eq!(length("20nm").unwrap(), 200.0);
        assert_eq!(length("1.3mm").unwrap(), 1.3e7);
        assert_eq!(length("0").unwrap(), 0.0);
        assert_eq!(voltage("200kV").unwrap(), 2e5);
        assert_eq!(voltage("300").unwrap(), 3e5);
        assert!((angle("20mrad").unwrap() - 0.02).abs() < 1e-15);
        assert_eq!(length_range("150A..25nm").unwrap(), (150.0, 250.0));
        assert_eq!(scan("32x16").unwrap(), (32, 16));
        assert_eq!(scan("8").unwrap(), (8, 8));
    }

    #[test]
    fn nonsense_is_refused_with_an_example() {
        for bad in ["200 parsecs", "kV", "", "1e999A"] {
            let e = length(bad).unwrap_err().to_string();
            assert!(e.contains("e.g."), "{e}");
        }
        assert!(voltage("200kv").is_err(), "units are case-sensitive: kv is not kV");
        assert!(scan("8x").is_err());
    }
}
