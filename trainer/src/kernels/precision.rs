//! Reduced precision as the seeds trained in it, on the CPU: which
//! precision the convolutions and dense layers compute in, and how a value
//! is rounded to it.
//!
//! The policy is PyTorch's `torch.autocast`: under `bf16` (or `f16`) a
//! convolution or dense layer reads its input, weight and bias rounded to
//! the half type, multiplies them exactly (the product of two 8-bit
//! significands fits in f32's 24) and sums in f32, and its output is
//! rounded to the half type again; in the backward pass the incoming
//! gradient is rounded before it is used and the gradients it produces
//! are rounded on the way out. Everything else (BatchNorm, activations,
//! pooling, losses) computes in f32 on what it is given; the master
//! weights, the optimiser's state and the gradient exchange stay f32
//! because the engine keeps them outside the network.
//!
//! The choice is process-wide (the engine sets it once from `--precision`,
//! like the kernel path of [`cpu`](super::cpu)); [`scoped`] overrides it
//! on one thread, for tests that compare precisions side by side.
//!
//! ```
//! use trainer::kernels::precision::{Precision, round_bf16};
//!
//! // 1 + 2⁻⁸ lies halfway between two bf16 values: ties go to even.
//! assert_eq!(round_bf16(1.0 + 1.0 / 256.0), 1.0);
//! assert_eq!(round_bf16(1.0 + 3.0 / 256.0), 1.0 + 4.0 / 256.0);
//! assert_eq!(Precision::Bf16.round(0.1), 0.10009765625);
//! ```

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

/// Values a task rounds: rounding is a pass over memory, and threads pay
/// off only on large slices.
const ROUNDING_CHUNK: usize = 1 << 16;

/// What the convolutions and dense layers compute in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Single precision throughout (the default).
    #[default]
    F32,
    /// bfloat16 inputs, weights and outputs, f32 sums (8 significand
    /// bits, f32's range): AVX512_BF16 hosts compute it natively.
    Bf16,
    /// IEEE half inputs, weights and outputs, f32 sums (11 significand
    /// bits, largest value 65504): what GPUs train in with loss scaling.
    /// Emulated on the CPU (rounding, at f32 speed or slower).
    F16,
}

impl Precision {
    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::F16 => "f16",
        }
    }

    /// `x` rounded to this precision (unchanged for f32).
    pub fn round(self, x: f32) -> f32 {
        match self {
            Precision::F32 => x,
            Precision::Bf16 => round_bf16(x),
            Precision::F16 => round_f16(x),
        }
    }

    /// Every value of `values` rounded to this precision, in place. bf16
    /// on a CPU with AVX512_BF16 rounds 16 values an instruction
    /// (`VCVTNEPS2BF16`, which [`round_bf16`] matches bit for bit).
    pub fn round_in_place(self, values: &mut [f32]) {
        use rayon::prelude::*;
        let chunks = values.par_chunks_mut(ROUNDING_CHUNK);
        match self {
            Precision::F32 => {}
            #[cfg(target_arch = "x86_64")]
            Precision::Bf16 if has_avx512_bf16() => chunks.for_each(|c| {
                // SAFETY: the CPU has AVX512_BF16 and AVX-512 F/BW.
                #[allow(unsafe_code)]
                unsafe {
                    vector::round_bf16_in_place(c)
                }
            }),
            Precision::Bf16 => chunks.for_each(|c| c.iter_mut().for_each(|v| *v = round_bf16(*v))),
            Precision::F16 => chunks.for_each(|c| c.iter_mut().for_each(|v| *v = round_f16(*v))),
        }
    }

    /// `values` rounded to this precision, as a new vector.
    pub fn rounded(self, values: &[f32]) -> Vec<f32> {
        use rayon::prelude::*;
        if self == Precision::F32 {
            return values.to_vec();
        }
        // One parallel pass, each value read once and written rounded: a
        // copy then a rounding pass went over memory twice, the copy on one
        // thread.
        let round_chunk = |(to, from): (&mut [MaybeUninit<f32>], &[f32])| match self {
            #[cfg(target_arch = "x86_64")]
            Precision::Bf16 if has_avx512_bf16() => {
                // SAFETY: the CPU has AVX512_BF16 and AVX-512 F/BW; the
                // chunks are as long as each other.
                #[allow(unsafe_code)]
                unsafe {
                    vector::round_bf16_into(from, to)
                }
            }
            _ => to.iter_mut().zip(from).for_each(|(to, &v)| {
                to.write(self.round(v));
            }),
        };
        // SAFETY: the chunks of the output and of `values` pair up one for
        // one, equally long, and `round_chunk` writes every slot of its own.
        #[allow(unsafe_code)]
        unsafe {
            super::uninit::written_whole(values.len(), |out| {
                out.par_chunks_mut(ROUNDING_CHUNK).zip(values.par_chunks(ROUNDING_CHUNK)).for_each(round_chunk)
            })
        }
    }

    /// Whether this CPU computes it natively: bf16 with AVX512_BF16, on
    /// the AVX-512 kernel path (`STAGEHAND_KERNELS=avx2` or `portable`
    /// takes it away, as on a CPU without it); f32 always; f16 never (it
    /// is emulated).
    pub fn native(self) -> bool {
        match self {
            Precision::F32 => true,
            Precision::Bf16 => has_avx512_bf16() && super::cpu::path() == super::cpu::KernelPath::Avx512,
            Precision::F16 => false,
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the CPU has AVX512_BF16 (with the AVX-512 foundation our bf16
/// kernels also use).
pub fn has_avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512bf16") && has!("avx512f") && has!("avx512bw") && has!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `x` rounded to bfloat16 exactly as `VCVTNEPS2BF16` rounds it (Intel
/// SDM, "convert_fp32_to_bfloat16"): zeros and denormals become a zero of
/// their sign, infinities stay, NaNs become quiet NaNs, and everything else
/// rounds to nearest, ties to even, on the upper 16 bits. The portable
/// reference the vector kernels are checked against bit for bit.
pub fn round_bf16(x: f32) -> f32 {
    let bits = x.to_bits();
    let exponent = bits & 0x7f80_0000;
    let rounded = if exponent == 0 {
        bits & 0x8000_0000
    } else if exponent == 0x7f80_0000 {
        if bits & 0x007f_ffff != 0 { (bits & 0xffff_0000) | 0x0040_0000 } else { bits }
    } else {
        let lsb = (bits >> 16) & 1;
        bits.wrapping_add(0x7fff + lsb) & 0xffff_0000
    };
    f32::from_bits(rounded)
}

/// `x` rounded to IEEE 754 binary16 (to nearest, ties to even; beyond
/// 65504 an infinity, as a GPU's f16 overflows), back in f32.
pub fn round_f16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vector {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    /// `values[i] = round_bf16(values[i])` with `VCVTNEPS2BF16`, 16 at a time.
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F and BW.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn round_bf16_in_place(values: &mut [f32]) {
        let whole = values.len() / 16 * 16;
        for at in (0..whole).step_by(16) {
            // SAFETY: `at + 16 <= whole <= len`; the CPU has the features.
            unsafe {
                let v = _mm512_loadu_ps(values.as_ptr().add(at));
                _mm512_storeu_si512(values.as_mut_ptr().add(at).cast(), round16(v));
            }
        }
        for v in &mut values[whole..] {
            *v = super::round_bf16(*v);
        }
    }

    /// `to[i] = round_bf16(from[i])`, as [`round_bf16_in_place`].
    ///
    /// # Safety
    /// The CPU must have AVX512_BF16 and AVX-512 F and BW; `to` is as long
    /// as `from`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn round_bf16_into(from: &[f32], to: &mut [MaybeUninit<f32>]) {
        assert_eq!(from.len(), to.len());
        let whole = from.len() / 16 * 16;
        for at in (0..whole).step_by(16) {
            // SAFETY: `at + 16 <= whole <=` both lengths; the CPU has the
            // features.
            unsafe {
                let v = _mm512_loadu_ps(from.as_ptr().add(at));
                _mm512_storeu_si512(to.as_mut_ptr().add(at).cast(), round16(v));
            }
        }
        for (to, &v) in to[whole..].iter_mut().zip(&from[whole..]) {
            to.write(super::round_bf16(v));
        }
    }

    /// 16 values rounded to bf16 (`VCVTNEPS2BF16`) and widened back to f32
    /// bits.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    fn round16(v: __m512) -> __m512i {
        // SAFETY: a value conversion between vector types of one size.
        let half: __m256i = unsafe { std::mem::transmute(_mm512_cvtneps_pbh(v)) };
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16)
    }
}

/// 0: f32; 1: bf16; 2: f16.
static PROCESS: AtomicU8 = AtomicU8::new(0);

thread_local! {
    /// This thread's override of [`PROCESS`] ([`scoped`]).
    static OVERRIDE: Cell<Option<Precision>> = const { Cell::new(None) };
}

fn code(p: Precision) -> u8 {
    match p {
        Precision::F32 => 0,
        Precision::Bf16 => 1,
        Precision::F16 => 2,
    }
}

/// Make `p` the precision of every thread that does not override it.
pub fn set_process(p: Precision) {
    PROCESS.store(code(p), Ordering::Relaxed);
}

/// The precision this thread computes convolutions and dense layers in.
pub fn current() -> Precision {
    OVERRIDE.with(Cell::get).unwrap_or(match PROCESS.load(Ordering::Relaxed) {
        1 => Precision::Bf16,
        2 => Precision::F16,
        _ => Precision::F32,
    })
}

/// Run `f` on this thread in precision `p`, then restore what was there.
pub fn scoped<T>(p: Precision, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Precision>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(p))));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_with_ties_to_even_on_the_upper_half() {
        // Halfway between 1 and the next bf16 (1 + 2⁻⁷): down to the even 1.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 1.0);
        // Just above halfway: up.
        assert_eq!(round_bf16(1.0 + 2f32.powi(-8) + 2f32.powi(-20)), 1.0 + 2f32.powi(-7));
        // Halfway above an odd one: up to the even.
        assert_eq!(round_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
        assert_eq!(round_bf16(-2.5), -2.5);
        // The largest f32 rounds past bf16's largest into infinity, as the
        // instruction does.
        assert_eq!(round_bf16(f32::MAX), f32::INFINITY);
        assert_eq!(round_bf16(f32::NEG_INFINITY), f32::NEG_INFINITY);
    }

    #[test]
    fn bf16_flushes_denormals_to_a_zero_of_their_sign_and_quiets_nans() {
        let tiny = f32::from_bits(0x0000_1234);
        assert_eq!(round_bf16(tiny).to_bits(), 0);
        assert_eq!(round_bf16(-tiny).to_bits(), 0x8000_0000);
        assert_eq!(round_bf16(-0.0).to_bits(), 0x8000_0000);
        let signalling = f32::from_bits(0x7f80_0001);
        let quiet = round_bf16(signalling);
        assert!(quiet.is_nan());
        assert_eq!(quiet.to_bits() & 0x0040_0000, 0x0040_0000);
        assert_eq!(quiet.to_bits() & 0xffff, 0);
        // The smallest normal survives.
        assert_eq!(round_bf16(f32::MIN_POSITIVE), f32::MIN_POSITIVE);
    }

    #[test]
    fn every_bf16_value_is_its_own_rounding_and_halves_fit_in_sixteen_bits() {
        for upper in (0u32..=0xffff).step_by(7) {
            let x = f32::from_bits(upper << 16);
            let exponent = x.to_bits() & 0x7f80_0000;
            if x.is_nan() || exponent == 0 {
                continue;
            }
            assert_eq!(round_bf16(x).to_bits(), x.to_bits());
        }
        for x in [0.1f32, 2.71, -1234.567, 6.0e-30] {
            assert_eq!(round_bf16(x).to_bits() & 0xffff, 0);
            // Half a unit in the last of 8 significant bits: at most 2⁻⁸ of x.
            assert!((round_bf16(x) - x).abs() <= x.abs() * 2f32.powi(-8));
        }
    }

    #[test]
    fn f16_overflows_beyond_65504_and_keeps_eleven_bits() {
        assert_eq!(round_f16(65504.0), 65504.0);
        assert_eq!(round_f16(65520.0), f32::INFINITY);
        assert_eq!(round_f16(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(round_f16(1.0 + 3.0 * 2f32.powi(-11)), 1.0 + 2f32.powi(-9));
        // Gradients below f16's smallest subnormal vanish: what loss
        // scaling exists to prevent.
        assert_eq!(round_f16(1.0e-8), 0.0);
    }

    #[test]
    fn a_scoped_precision_holds_on_its_thread_only_and_is_restored() {
        assert_eq!(current(), Precision::F32);
        scoped(Precision::Bf16, || {
            assert_eq!(current(), Precision::Bf16);
            let other = std::thread::spawn(current).join().unwrap_or(Precision::F16);
            assert_eq!(other, Precision::F32);
            scoped(Precision::F16, || assert_eq!(current(), Precision::F16));
            assert_eq!(current(), Precision::Bf16);
        });
        assert_eq!(current(), Precision::F32);
    }

    #[test]
    fn the_vector_rounding_gives_the_portable_bits_for_every_kind_of_value() {
        let specials = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN_POSITIVE];
        let mut values: Vec<f32> = specials.to_vec();
        values.extend((0..100_003u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761))));
        let rounded = Precision::Bf16.rounded(&values);
        for (v, r) in values.iter().zip(&rounded) {
            let want = round_bf16(*v);
            assert!(r.to_bits() == want.to_bits() || (r.is_nan() && want.is_nan()), "{v:e}: {r:e}, want {want:e}");
        }
        assert_eq!(Precision::F16.rounded(&[1.0e-8, 65520.0]), vec![0.0, f32::INFINITY]);
        assert_eq!(Precision::F32.rounded(&[0.1]), vec![0.1]);
    }

    #[test]
    fn slices_round_like_single_values() {
        let mut values: Vec<f32> = (0..200_000).map(|i| (i as f32 * 0.37).sin() * 1000.0).collect();
        let expected: Vec<f32> = values.iter().map(|&v| round_bf16(v)).collect();
        Precision::Bf16.round_in_place(&mut values);
        assert_eq!(values, expected);
    }
}
