//! Moving values between slices and the arrays that stand for one vector
//! register in the portable kernels.

/// `L` values from the start of `s`, as one vector register's worth.
#[inline(always)]
pub(crate) fn load<const L: usize>(s: &[f32]) -> [f32; L] {
    let mut v = [0.0; L];
    v.copy_from_slice(&s[..L]);
    v
}
