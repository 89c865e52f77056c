//! Finding NaN and infinity in decoded samples (and, in the trainer, in
//! losses and gradients): one bad value in one sample makes every
//! parameter NaN within a step, so a run that meets one must stop and name
//! it rather than train on.

/// True if every value is finite. Tests the exponent bits as integers
/// (all ones means infinity or NaN) and ORs the results, which the compiler
/// vectorises; `iter().all(f32::is_finite)` stops early and does not, and
/// runs several times slower on the large arrays this is for.
pub fn all_finite(values: &[f32]) -> bool {
    const EXPONENT: u32 = 0x7f80_0000;
    let mut bad = 0u32;
    for chunk in values.chunks(4096) {
        bad |= chunk.iter().fold(0u32, |acc, v| acc | u32::from(v.to_bits() & EXPONENT == EXPONENT));
        if bad != 0 {
            return false;
        }
    }
    true
}

/// The position and value of the first value that is not finite.
pub fn first_non_finite(values: &[f32]) -> Option<(usize, f32)> {
    if all_finite(values) {
        return None;
    }
    values.iter().position(|v| !v.is_finite()).map(|i| (i, values[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_and_both_infinities_are_found_anywhere_and_extremes_are_finite() {
        let mut values = vec![0.5f32; 10_000];
        values[1] = f32::MAX;
        values[2] = f32::MIN_POSITIVE / 2.0; // subnormal
        values[3] = -0.0;
        assert!(all_finite(&values));
        assert!(all_finite(&[]));
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -f32::NAN] {
            for at in [0, 4095, 4096, 9_999] {
                let mut v = values.clone();
                v[at] = bad;
                assert!(!all_finite(&v));
                let (i, value) = first_non_finite(&v).unwrap();
                assert_eq!(i, at);
                assert_eq!(value.to_bits(), bad.to_bits());
            }
        }
    }
}
