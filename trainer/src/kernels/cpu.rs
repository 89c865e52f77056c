//! Which compiled version of the kernels runs: the widest the CPU
//! supports (AVX-512, then AVX2 with FMA, then the portable build) until
//! something else chooses; the faster on this CPU when
//! [`calibrate`](super::calibrate::calibrate) has measured them (`trainer
//! train` does at start-up); or forced (tests of each path on one machine,
//! benchmarks, and users who want one) with
//! `STAGEHAND_KERNELS=portable|avx2|avx512|avx512+avx2-wgrad3d` or [`force`].
//! [`calibrate::choice`](super::calibrate::choice) says which runs and how
//! it was chosen.
//!
//! Every path computes the same sums in the same order with fused
//! multiply-adds, so results are bit-identical whichever runs; the wider
//! ones only do more of them per instruction.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// A compiled version of the kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelPath {
    /// Built for the target's baseline (SSE2 on x86-64): runs anywhere.
    Portable,
    /// AVX2 and FMA (x86-64 since Haswell and Zen).
    Avx2,
    /// AVX-512 F, VL, DQ and BW, with FMA (Skylake-SP, Ice Lake, Sapphire
    /// Rapids, Zen 4 and later).
    Avx512,
}

/// The environment variable that forces a path.
pub const KERNELS_ENV: &str = "STAGEHAND_KERNELS";

/// 0: not chosen yet; otherwise 1 + the path's index.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// How [`CHOSEN`] was chosen: a [`ChosenBy`] as its index.
static CHOSEN_BY: AtomicU8 = AtomicU8::new(ChosenBy::Widest as u8);

/// Which kernel the AVX-512 path runs for the 3-D weight gradient's
/// 3-tap blocks: 0 as [`splits_512_bit_vectors`] says, 1 its own, 2 the
/// AVX2 one.
static WEIGHT_GRAD_3D: AtomicU8 = AtomicU8::new(0);

/// How the path that runs was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChosenBy {
    /// The widest this CPU supports: nothing measured or forced one.
    Widest,
    /// `STAGEHAND_KERNELS` or [`force`].
    Forced,
    /// The fastest of the candidates [`calibrate`](super::calibrate::calibrate) timed.
    Measured,
}

impl KernelPath {
    /// Every path, narrowest first.
    pub const ALL: [KernelPath; 3] = [KernelPath::Portable, KernelPath::Avx2, KernelPath::Avx512];

    /// Its name in `STAGEHAND_KERNELS`.
    pub fn name(self) -> &'static str {
        match self {
            KernelPath::Portable => "portable",
            KernelPath::Avx2 => "avx2",
            KernelPath::Avx512 => "avx512",
        }
    }

    /// Whether this CPU can run it.
    pub fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            match self {
                KernelPath::Portable => true,
                KernelPath::Avx2 => has!("avx2") && has!("fma"),
                KernelPath::Avx512 => {
                    has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw") && has!("fma")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == KernelPath::Portable
        }
    }

    fn from_name(name: &str) -> Option<KernelPath> {
        KernelPath::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// A path this CPU cannot run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this CPU cannot run the {} kernels", .0.name())]
pub struct Unsupported(pub KernelPath);

/// The widest path this CPU supports.
pub fn best() -> KernelPath {
    KernelPath::ALL.into_iter().rev().find(|p| p.supported()).unwrap_or(KernelPath::Portable)
}

/// The path the kernels take: the forced one, else `STAGEHAND_KERNELS`
/// (when this CPU supports it; otherwise a warning and the best), else the best.
pub fn path() -> KernelPath {
    match CHOSEN.load(Ordering::Relaxed) {
        0 => {
            let chosen = from_env();
            CHOSEN.store(1 + chosen as u8, Ordering::Relaxed);
            chosen
        }
        n => KernelPath::ALL[usize::from(n - 1)],
    }
}

/// The suffix of the AVX-512 path that takes the AVX2 3-D weight gradient
/// (`calibrate::Candidate::name`).
pub(crate) const AVX2_WEIGHT_GRAD_3D: &str = "+avx2-wgrad3d";

fn from_env() -> KernelPath {
    let Ok(name) = std::env::var(KERNELS_ENV) else { return best() };
    // A forced name means exactly the kernels it names, so that the report
    // says what was asked for: `avx512` its own throughout (not the table
    // of CPU families), `avx512+avx2-wgrad3d` the AVX2 3-D weight gradient.
    let (path_name, weight_grad_on_avx2) = match name.strip_suffix(AVX2_WEIGHT_GRAD_3D) {
        Some(path_name) => (path_name, true),
        None => (name.as_str(), false),
    };
    let path = KernelPath::from_name(path_name).filter(|p| !weight_grad_on_avx2 || *p == KernelPath::Avx512);
    match path {
        Some(path) if path.supported() => {
            CHOSEN_BY.store(ChosenBy::Forced as u8, Ordering::Relaxed);
            if path == KernelPath::Avx512 {
                set_weight_grad_3d_on_avx2(weight_grad_on_avx2);
            }
            path
        }
        Some(path) => {
            tracing::warn!("{KERNELS_ENV}={name}: {}; using {}", Unsupported(path), best().name());
            best()
        }
        None => {
            tracing::warn!(
                "{KERNELS_ENV}={name}: expected portable, avx2, avx512 or avx512{AVX2_WEIGHT_GRAD_3D}; using {}",
                best().name()
            );
            best()
        }
    }
}

/// Whether this CPU runs 512-bit vector operations as two 256-bit halves
/// and also has AVX2 with FMA: AMD family 19h (Zen 4, the only family of
/// it with AVX-512; Zen 5 is 1Ah, with full-width units). A kernel whose
/// AVX-512 version spends shuffles to fill 16 lanes gains nothing from
/// them there, and runs its AVX2 version instead (the same bits), unless
/// [`calibrate`](super::calibrate::calibrate) measured otherwise: this
/// table is the default of a process that did not measure.
pub fn splits_512_bit_vectors() -> bool {
    static SPLITS: OnceLock<bool> = OnceLock::new();
    *SPLITS.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            let vendor = __cpuid(0);
            let amd = [vendor.ebx, vendor.edx, vendor.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163];
            let signature = __cpuid(1).eax;
            let base = (signature >> 8) & 0xf;
            let family = if base == 0xf { base + ((signature >> 20) & 0xff) } else { base };
            amd && family == 0x19 && KernelPath::Avx2.supported()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Whether the AVX-512 path runs the AVX2 kernel for the 3-D weight
/// gradient's 3-tap blocks (the same bits): as measured by
/// [`calibrate`](super::calibrate::calibrate) once it has, else where
/// [`splits_512_bit_vectors`].
pub fn weight_grad_3d_on_avx2() -> bool {
    match WEIGHT_GRAD_3D.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => splits_512_bit_vectors(),
    }
}

/// Run the kernels on `path` from now on, in every thread of the process.
pub fn force(path: KernelPath) -> Result<(), Unsupported> {
    set(path, ChosenBy::Forced)
}

/// Run the kernels on `path`, chosen `how`.
pub(crate) fn set(path: KernelPath, how: ChosenBy) -> Result<(), Unsupported> {
    if !path.supported() {
        return Err(Unsupported(path));
    }
    CHOSEN.store(1 + path as u8, Ordering::Relaxed);
    CHOSEN_BY.store(how as u8, Ordering::Relaxed);
    Ok(())
}

/// Make the AVX-512 path run the AVX2 kernel (`true`) or its own for the
/// 3-D weight gradient's 3-tap blocks, overriding [`splits_512_bit_vectors`].
pub(crate) fn set_weight_grad_3d_on_avx2(on_avx2: bool) {
    WEIGHT_GRAD_3D.store(if on_avx2 { 2 } else { 1 }, Ordering::Relaxed);
}

/// How the path [`path`] gives was chosen.
pub fn chosen_by() -> ChosenBy {
    // Resolve the environment first: it may force the path.
    let _ = path();
    match CHOSEN_BY.load(Ordering::Relaxed) {
        1 => ChosenBy::Forced,
        2 => ChosenBy::Measured,
        _ => ChosenBy::Widest,
    }
}

/// Makes this thread's floating-point arithmetic flush denormal results to
/// zero and read denormal operands as zero (MXCSR's FTZ and DAZ bits on
/// x86-64; nothing elsewhere). A product with a denormal operand or result
/// takes a microcode assist of about a hundred cycles on Intel cores: a
/// CosmoGAN step whose discriminator saturated, its gradients denormal,
/// took ten times as long as the others. Values that small are below what
/// training resolves; TensorFlow runs its kernels with the same two bits
/// set (its `ScopedFlushDenormal`).
pub fn flush_denormals() {
    #[cfg(target_arch = "x86_64")]
    {
        /// FTZ (bit 15) and DAZ (bit 6): Intel SDM vol. 1, §10.2.3.
        const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);
        let mut control: u32 = 0;
        // SAFETY: STMXCSR stores the 32-bit register into `control`, which
        // lives for the instruction; LDMXCSR loads it back with the two
        // mode bits set (reserved bits unchanged, so no #GP). Only this
        // thread's denormal modes change.
        #[allow(unsafe_code)]
        unsafe {
            std::arch::asm!("stmxcsr [{0}]", in(reg) &mut control, options(nostack, preserves_flags));
            control |= FTZ_DAZ;
            std::arch::asm!("ldmxcsr [{0}]", in(reg) &control, options(nostack, preserves_flags));
        }
    }
}

/// `wide!(name, body, (args))` defines `name(args)`, which runs `body(args)`
/// (an `#[inline(always)]` function, so
/// compiled into each version) built for the [`KernelPath`] that
/// [`path`] chooses: a portable build targets SSE2, half the AVX2
/// vector width, and computes `mul_add` in software (slowly, but with the
/// same result). Every multiply-add is fused on every path, so results do
/// not depend on the CPU.
macro_rules! wide {
    ($name:ident, $body:ident, ($($arg:ident: $ty:ty),*)) => {
        #[allow(clippy::too_many_arguments)]
        fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                fn avx2($($arg: $ty),*) {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
                #[allow(clippy::too_many_arguments)]
                fn avx512($($arg: $ty),*) {
                    $body($($arg),*)
                }
                match $crate::kernels::cpu::path() {
                    // SAFETY: `cpu::path` only chooses a path the CPU supports.
                    #[allow(unsafe_code)]
                    $crate::kernels::cpu::KernelPath::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    #[allow(unsafe_code)]
                    $crate::kernels::cpu::KernelPath::Avx2 => return unsafe { avx2($($arg),*) },
                    $crate::kernels::cpu::KernelPath::Portable => {}
                }
            }
            $body($($arg),*)
        }
    };
}
pub(crate) use wide;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::hint::black_box;

    /// A quarter of the smallest normal f32: denormal under IEEE rules.
    fn denormal_product() -> f32 {
        black_box(f32::MIN_POSITIVE) * black_box(0.25)
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_pools_threads_flush_denormal_products_to_zero_and_other_threads_keep_them() {
        let flushed = super::super::on_pool(|| rayon::broadcast(|_| denormal_product()));
        assert_eq!(flushed.len(), rayon::current_num_threads());
        assert!(flushed.iter().all(|&v| v == 0.0), "{flushed:?}");
        let elsewhere = std::thread::spawn(denormal_product).join().unwrap();
        assert!(elsewhere > 0.0 && elsewhere < f32::MIN_POSITIVE, "a thread of its own keeps IEEE rules: {elsewhere}");
    }
}
