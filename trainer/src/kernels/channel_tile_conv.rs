//! The 3³ forward convolution (and so the input gradient, a forward pass
//! with the flipped kernel) on AVX-512 with a tile of voxels × output
//! channels in registers: 6 voxels × 64 channels, 12 × 32 or 16 × 16 (16
//! to 24 accumulators), each weight vector loaded once for the tile's
//! voxels and each input value broadcast straight from memory into the
//! multiply-add.
//!
//! Why: the row kernels ([`direct_conv`](super::direct_conv)) put a row's
//! voxels in the lanes, and a row 31 or 33 voxels wide (Etalumis' largest
//! layer, its input gradient) fills its vectors by halves; they also load
//! each input row once per kernel tap and group of output channels. The
//! channel kernels ([`channel_conv`](super::channel_conv)) put 16 output
//! channels in the lanes but hold 8 accumulators, too few to keep both FMA
//! units busy past their latency. Here the rows' width does not matter
//! (the tile runs along a row, its tail as tiles of 8, 4, 2 and 1), and every
//! multiply-add takes one weight vector already in a register and one
//! input value from L1. This is the blocking of oneDNN's AVX-512 direct
//! convolution (output channels in blocks of 16 in the lanes, a run of
//! output voxels in registers), kept on our NCDHW layout.
//!
//! A tile takes the taps of a few input channels at a time, not all of
//! them: with every input channel, each tile streamed the group's whole
//! weights (442 KB for 64 → 64 channels) and a 9-row window of every input
//! plane, which together overflow L2. Instead an output plane's sums wait
//! in a buffer (voxel by voxel, the group's channels contiguous) while the
//! tiles sweep the plane once per block of input channels, whose weights
//! stay in L1 and whose input planes in L2; the plane is written out when
//! its last block is added.
//!
//! Summation order: each output is the bias, then the taps in the order
//! input channel, depth, height, width, each a fused multiply-add: the
//! order of the row and channel kernels (a sum left in the buffer between
//! blocks is an f32, as in a register), so every path gives the same bits
//! and which one runs may depend on the CPU. Under `--precision bf16` on a
//! CPU with AVX512_BF16 the tiles take the input channels in pairs, each
//! `VDPBF16PS` summing two channels' products of bf16 operands: the same
//! loops, other sums (`docs/precision.md`).

use rayon::prelude::*;

use super::conv_shape::ConvShape;
use super::cpu::{self, KernelPath};
use super::uninit::F32Slot;

/// Output channels in a vector.
const LANES: usize = 16;

/// Taps of a 3³ kernel.
const TAPS: usize = 27;

/// Input channels whose taps a tile adds before it moves on: their weights
/// (27 KB for 64 output channels) stay in L1 and their input planes in L2
/// while the tiles sweep a whole output plane.
const IN_BLOCK: usize = 4;

/// Whether a forward pass of `shape` runs here: a 3³ kernel, output
/// channels in whole vectors of [`LANES`], on a CPU running the AVX-512
/// kernels.
pub(super) fn applies(shape: &ConvShape) -> bool {
    shape.kernel == 3 && shape.c_out.is_multiple_of(LANES) && cpu::path() == KernelPath::Avx512
}

/// The least share of the kernel's rows inside a zero border for which the
/// tiles test each row: the version that tests them runs the rows it keeps
/// about 7 % slower (`docs/benchmarks.md`, Etalumis), so a border that
/// skips less is computed as if it held values.
const SKIP_AT_LEAST: f64 = 0.25;

/// The share of the kernel rows (plane and row of the input) of a forward
/// pass of `shape` that fall inside the input's zero `border`.
fn skipped_share(shape: &ConvShape, border: usize) -> f64 {
    let inside = |edge: usize, padded: usize| {
        let rows = (0..edge).flat_map(|at| (0..3).map(move |k| at + k));
        rows.filter(|&row| row >= border && row < padded - border).count() as f64 / (3 * edge) as f64
    };
    let [d, h, _] = shape.volume;
    let [pd, ph, _] = shape.padded();
    1.0 - inside(d, pd) * inside(h, ph)
}

/// Output channels per task: 64 where they divide `c_out`, else 32, else
/// 16 (the widest group of at most four vectors).
fn group(c_out: usize) -> usize {
    if c_out.is_multiple_of(64) {
        64
    } else if c_out.is_multiple_of(32) {
        32
    } else {
        LANES
    }
}

/// Forward pass into `y` [batch, c_out, D, H, W] from the padded input
/// (`direct_conv`'s layout) and `channel_conv`'s channels-last weights
/// [c_in, 27, c_out], every element of `y` written once (it may start
/// uninitialised). Parallel over samples and groups of output channels.
///
/// The input's planes and rows within `border` of its edges (in depth and
/// height) must hold zeros: their taps are skipped. An input gradient's
/// padded output gradient is mostly such borders on small volumes (two
/// voxels each side for a valid convolution's). Skipping changes no sum:
/// a zero product added to a sum leaves it as it is, except a sum of -0,
/// which only a bias of -0 could start; so a border comes without a bias.
pub(super) fn forward_padded<S: F32Slot>(
    shape: &ConvShape,
    padded: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    border: usize,
    y: &mut [S],
) {
    assert!(applies(shape), "the AVX-512 channel-tile kernel for {shape:?}");
    assert!(border == 0 || bias.is_none(), "a zero border skipped under a bias");
    assert!(border < 3, "a border of {border} around the padded input of a 3³ kernel");
    let [pd, ph, pw] = shape.padded();
    let volume = pd * ph * pw;
    assert_eq!(padded.len(), shape.batch * shape.c_in * volume, "padded input of {shape:?}");
    assert_eq!(weights.len(), shape.weight_len(), "weights of {shape:?}");
    assert_eq!(y.len(), shape.output_len(), "output of {shape:?}");
    if let Some(b) = bias {
        assert_eq!(b.len(), shape.c_out, "bias of {shape:?}");
    }
    let voxels = shape.voxels();
    let group = group(shape.c_out);
    let groups = shape.c_out / group;
    let skip = skipped_share(shape, border) >= SKIP_AT_LEAST;
    #[cfg(target_arch = "x86_64")]
    if super::bf16_gemm::native_here() {
        // Input channels in pairs, each lane of the weights' and each
        // input value a bf16 pair of two channels' (an odd last channel
        // paired with zeros): the same tiles in half the multiply-adds.
        let rows = shape.c_in.div_ceil(2);
        let input = super::bf16_gemm::row_pairs(padded, volume, shape.c_in);
        let weights = super::bf16_gemm::row_pairs(weights, TAPS * shape.c_out, shape.c_in);
        return y.par_chunks_mut(group * voxels).enumerate().for_each(|(task, out)| {
            let (n, co) = (task / groups, task % groups * group);
            let input = &input[n * rows * volume..][..rows * volume];
            let tile = avx512::Operands { shape, input, weights: &weights, bias, co, border };
            // SAFETY: as below, and `native_here` holds only where the
            // CPU has AVX512_BF16.
            #[allow(unsafe_code)]
            unsafe {
                forward_group::<S, avx512::Bf16Pairs>(tile, (group, skip), out)
            };
        });
    }
    y.par_chunks_mut(group * voxels).enumerate().for_each(|(task, out)| {
        let (n, co) = (task / groups, task % groups * group);
        let input = &padded[n * shape.c_in * volume..][..shape.c_in * volume];
        #[cfg(target_arch = "x86_64")]
        {
            let tile = avx512::Operands { shape, input, weights, bias, co, border };
            // SAFETY: `applies` held, so the CPU has AVX-512; the slices'
            // lengths were checked above against `shape`, and `co + group`
            // is at most `c_out`.
            #[allow(unsafe_code)]
            unsafe {
                forward_group::<S, avx512::F32>(tile, (group, skip), out)
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("AVX-512 kernels chosen on {} for {input:p} {out:p} {co}", std::env::consts::ARCH);
    });
}

/// [`avx512::forward_group`] for a group of `group` channels: tiles of R
/// voxels × V vectors, V·R accumulators and V weight vectors within the
/// 32 registers.
///
/// # Safety
/// As [`avx512::forward_group`].
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
unsafe fn forward_group<S: F32Slot, P: avx512::Products>(
    tile: avx512::Operands<'_, P::Value>,
    (group, skip): (usize, bool),
    out: &mut [S],
) {
    // SAFETY: the caller's.
    unsafe {
        match (group, skip) {
            (64, false) => avx512::forward_group::<4, 6, false, S, P>(tile, out),
            (64, true) => avx512::forward_group::<4, 6, true, S, P>(tile, out),
            (32, false) => avx512::forward_group::<2, 12, false, S, P>(tile, out),
            (32, true) => avx512::forward_group::<2, 12, true, S, P>(tile, out),
            (_, false) => avx512::forward_group::<1, 16, false, S, P>(tile, out),
            (_, true) => avx512::forward_group::<1, 16, true, S, P>(tile, out),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::{
        __m512, __m512bh, __m512i, _mm512_dpbf16_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_epi32,
        _mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::{ConvShape, F32Slot, IN_BLOCK, LANES, TAPS};

    /// What a group's tiles read, in rows of `E` (an input channel's f32
    /// values, or [`Bf16Pairs`]' pairs of two channels' bf16 values).
    #[derive(Clone, Copy)]
    pub(super) struct Operands<'a, E> {
        pub(super) shape: &'a ConvShape,
        /// The sample's padded input [rows, PD, PH, PW].
        pub(super) input: &'a [E],
        /// Channels-last weights [rows, 27, c_out].
        pub(super) weights: &'a [E],
        pub(super) bias: Option<&'a [f32]>,
        /// The group's first output channel.
        pub(super) co: usize,
        /// Planes and rows of zeros at the input's edges, whose taps are
        /// skipped.
        pub(super) border: usize,
    }

    /// How a tile multiplies: its operands' rows and its multiply-add.
    /// The tiles' loops are written once ([`add_taps`]); each kind's
    /// [`Products::add_taps`] builds them for its instructions' CPU
    /// features (a trait method cannot carry target features itself).
    pub(super) trait Products {
        /// One value of an operand's row.
        type Value: Copy + Sync;
        /// Input channels in one row.
        const CHANNELS: usize;
        /// A weight vector of 16 output channels from `at`.
        ///
        /// # Safety
        /// 16 values from `at` are readable, on a CPU with the features.
        unsafe fn weights(at: *const Self::Value) -> __m512;
        /// One input value (or pair) in every lane.
        ///
        /// # Safety
        /// On a CPU with the kind's features.
        unsafe fn input(value: Self::Value) -> __m512;
        /// `acc` + the products of `w` and `x`, lane by lane.
        ///
        /// # Safety
        /// On a CPU with the kind's features.
        unsafe fn add(acc: __m512, w: __m512, x: __m512) -> __m512;
        /// [`add_taps`] built with this kind's features.
        ///
        /// # Safety
        /// As [`add_taps`], on a CPU with the features.
        unsafe fn add_taps<const V: usize, const T: usize, const SKIP: bool>(
            tile: &Operands<'_, Self::Value>,
            at: [usize; 3],
            rows: std::ops::Range<usize>,
            sums: &mut [f32],
        );
    }

    /// f32 values, a fused multiply-add per input channel.
    pub(super) struct F32;

    impl Products for F32 {
        type Value = f32;
        const CHANNELS: usize = 1;
        #[inline(always)]
        unsafe fn weights(at: *const f32) -> __m512 {
            // SAFETY: the caller's.
            unsafe { _mm512_loadu_ps(at) }
        }
        #[inline(always)]
        unsafe fn input(value: f32) -> __m512 {
            // SAFETY: the caller's.
            unsafe { _mm512_set1_ps(value) }
        }
        #[inline(always)]
        unsafe fn add(acc: __m512, w: __m512, x: __m512) -> __m512 {
            // SAFETY: the caller's.
            unsafe { _mm512_fmadd_ps(w, x, acc) }
        }
        #[inline(always)]
        unsafe fn add_taps<const V: usize, const T: usize, const SKIP: bool>(
            tile: &Operands<'_, f32>,
            at: [usize; 3],
            rows: std::ops::Range<usize>,
            sums: &mut [f32],
        ) {
            #[target_feature(enable = "avx512f,avx2,fma")]
            #[inline]
            unsafe fn built<const V: usize, const T: usize, const SKIP: bool>(
                tile: &Operands<'_, f32>,
                at: [usize; 3],
                rows: std::ops::Range<usize>,
                sums: &mut [f32],
            ) {
                // SAFETY: the caller's.
                unsafe { add_taps::<F32, V, T, SKIP>(tile, at, rows, sums) }
            }
            // SAFETY: the caller's.
            unsafe { built::<V, T, SKIP>(tile, at, rows, sums) }
        }
    }

    /// Two input channels' bf16 values in each lane (the even channel in
    /// the low half), `VDPBF16PS` summing both channels' products: half the
    /// multiply-adds of [`F32`] (`--precision bf16`, AVX512_BF16).
    pub(super) struct Bf16Pairs;

    impl Products for Bf16Pairs {
        type Value = u32;
        const CHANNELS: usize = 2;
        #[inline(always)]
        unsafe fn weights(at: *const u32) -> __m512 {
            // SAFETY: the caller's; the pairs' bits read as floats.
            unsafe { _mm512_loadu_ps(at.cast()) }
        }
        #[inline(always)]
        unsafe fn input(value: u32) -> __m512 {
            // SAFETY: the caller's; 512 bits either way.
            unsafe { std::mem::transmute::<__m512i, __m512>(_mm512_set1_epi32(value as i32)) }
        }
        #[inline(always)]
        unsafe fn add(acc: __m512, w: __m512, x: __m512) -> __m512 {
            // SAFETY: the caller's; the vectors' bits are bf16 pairs.
            unsafe {
                let (w, x) = (std::mem::transmute::<__m512, __m512bh>(w), std::mem::transmute::<__m512, __m512bh>(x));
                _mm512_dpbf16_ps(acc, w, x)
            }
        }
        #[inline(always)]
        unsafe fn add_taps<const V: usize, const T: usize, const SKIP: bool>(
            tile: &Operands<'_, u32>,
            at: [usize; 3],
            rows: std::ops::Range<usize>,
            sums: &mut [f32],
        ) {
            #[target_feature(enable = "avx512f,avx512bf16,avx2,fma")]
            #[inline]
            unsafe fn built<const V: usize, const T: usize, const SKIP: bool>(
                tile: &Operands<'_, u32>,
                at: [usize; 3],
                rows: std::ops::Range<usize>,
                sums: &mut [f32],
            ) {
                // SAFETY: the caller's.
                unsafe { add_taps::<Bf16Pairs, V, T, SKIP>(tile, at, rows, sums) }
            }
            // SAFETY: the caller's.
            unsafe { built::<V, T, SKIP>(tile, at, rows, sums) }
        }
    }

    /// Output channels `co..co + V·LANES` of one sample into `out` (those
    /// channels' planes), an output plane at a time: the plane's sums, in
    /// `scratch` voxel by voxel with the group's channels contiguous, start
    /// at the bias and take [`IN_BLOCK`] input channels at a time over
    /// every row of the plane, in tiles of `R` voxels (a row's last voxels
    /// in tiles of 8, 4, 2 and 1); then the plane goes to `out`.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512 F and `P`'s features; `input` must hold
    /// one sample's padded input of `shape` in `P`'s rows, `weights` its
    /// channels-last weights, `out` the group's planes,
    /// `co + V·LANES <= shape.c_out`.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn forward_group<const V: usize, const R: usize, const SKIP: bool, S: F32Slot, P: Products>(
        tile: Operands<'_, P::Value>,
        out: &mut [S],
    ) {
        let Operands { shape, bias, co, .. } = tile;
        let width = V * LANES;
        let bias = match bias {
            Some(b) => b[co..co + width].to_vec(),
            None => vec![0.0; width],
        };
        assert_eq!(out.len(), width * shape.voxels(), "the planes of a group of {width} channels");
        let [d, h, w] = shape.volume;
        let plane = h * w;
        // Whole cache lines: a tile loads and stores its sums 16 lanes at
        // a time.
        let mut sums = super::super::uninit::LineAligned::zeros(plane * width);
        for z in 0..d {
            for voxel in sums.chunks_exact_mut(width) {
                voxel.copy_from_slice(&bias);
            }
            let (rows, block) = (shape.c_in.div_ceil(P::CHANNELS), IN_BLOCK / P::CHANNELS);
            for first in (0..rows).step_by(block) {
                let channels = first..(first + block).min(rows);
                for yy in 0..h {
                    let row = &mut sums[yy * w * width..][..w * width];
                    let mut x = 0;
                    // SAFETY: as this function's; each tile only when its
                    // voxels remain in the row (x + T <= w).
                    unsafe {
                        while x + R <= w {
                            P::add_taps::<V, R, SKIP>(&tile, [z, yy, x], channels.clone(), row);
                            x += R;
                        }
                        if R > 8 && w - x >= 8 {
                            P::add_taps::<V, 8, SKIP>(&tile, [z, yy, x], channels.clone(), row);
                            x += 8;
                        }
                        if R > 4 && w - x >= 4 {
                            P::add_taps::<V, 4, SKIP>(&tile, [z, yy, x], channels.clone(), row);
                            x += 4;
                        }
                        if R > 2 && w - x >= 2 {
                            P::add_taps::<V, 2, SKIP>(&tile, [z, yy, x], channels.clone(), row);
                            x += 2;
                        }
                        if w - x >= 1 {
                            P::add_taps::<V, 1, SKIP>(&tile, [z, yy, x], channels.clone(), row);
                        }
                    }
                }
            }
            let voxels = d * plane;
            let out = out.as_mut_ptr();
            for (v, voxel) in sums.chunks_exact(width).enumerate() {
                for (j, value) in voxel.iter().enumerate() {
                    // SAFETY: `out` holds the group's `width` planes of
                    // `voxels` (checked above), j < width and
                    // z·plane + v < voxels. Unchecked: with a check per
                    // value the stores took a fifth of a 16-channel
                    // layer's time.
                    unsafe { out.add(j * voxels + z * plane + v).write(S::holding(*value)) };
                }
            }
        }
    }

    /// Add to the sums of voxels `x..x + T` of row (`z`, `yy`), `row` the
    /// output row's sums (voxel by voxel, the group's channels contiguous),
    /// the taps of input `channels`.
    ///
    /// # Safety
    ///
    /// As [`forward_group`], `channels` (rows of `P`'s operands) within
    /// theirs, and `x + T <= W`; built only inside a function with `P`'s
    /// features ([`Products::add_taps`]).
    #[inline(always)]
    unsafe fn add_taps<P: Products, const V: usize, const T: usize, const SKIP: bool>(
        tile: &Operands<'_, P::Value>,
        [z, yy, x]: [usize; 3],
        channels: std::ops::Range<usize>,
        row: &mut [f32],
    ) {
        let shape = tile.shape;
        let [pd, ph, pw] = shape.padded();
        let (c_out, volume) = (shape.c_out, pd * ph * pw);
        assert!(row.len() >= (x + T) * V * LANES, "a row of sums for voxels up to {}", x + T);
        let sums = row[x * V * LANES..].as_mut_ptr();
        // SAFETY: AVX-512 F, in every kind's features.
        let mut acc = [[unsafe { _mm512_setzero_ps() }; V]; T];
        for (t, a) in acc.iter_mut().enumerate() {
            for (k, lanes) in a.iter_mut().enumerate() {
                // SAFETY: voxel x + t's V vectors of sums, inside `row`
                // (asserted above).
                *lanes = unsafe { _mm512_loadu_ps(sums.add((t * V + k) * LANES)) };
            }
        }
        let corner = (z * ph + yy) * pw + x;
        // The kernel rows that reach inside the border: padded planes
        // z + kd and rows yy + kh in border..pd - border (..ph - border),
        // bit 3·kd + kh. A test per kernel row in the unrolled loops, not
        // loops over these ranges: those took registers the accumulators
        // needed (a forward pass 1.5× slower).
        let inside = |at: usize, edge: usize, k: usize| at + k >= tile.border && at + k < edge - tile.border;
        let mut reach = if SKIP { 0u32 } else { 0x1ff };
        for kd in (0..3).filter(|_| SKIP) {
            for kh in 0..3 {
                if inside(z, pd, kd) && inside(yy, ph, kh) {
                    reach |= 1 << (kd * 3 + kh);
                }
            }
        }
        for ci in channels {
            // SAFETY: channel `ci` of the sample's input and its weights
            // (`forward_group`'s contract); the reads below stay inside:
            // rows `z + kd`, `yy + kh` and columns up to `x + T + 1` of a
            // padded volume of edges (d + 2, h + 2, w + 2).
            let channel = unsafe { tile.input.as_ptr().add(ci * volume + corner) };
            let taps = unsafe { tile.weights.as_ptr().add(ci * TAPS * c_out + tile.co) };
            for kd in 0..3 {
                for kh in 0..3 {
                    if SKIP && reach & (1 << (kd * 3 + kh)) == 0 {
                        continue;
                    }
                    let row = unsafe { channel.add(kd * ph * pw + kh * pw) };
                    for kw in 0..3 {
                        let at = unsafe { taps.add(((kd * 3 + kh) * 3 + kw) * c_out) };
                        let mut wv = [unsafe { _mm512_setzero_ps() }; V];
                        for (k, v) in wv.iter_mut().enumerate() {
                            *v = unsafe { P::weights(at.add(LANES * k)) };
                        }
                        for (t, a) in acc.iter_mut().enumerate() {
                            let xv = unsafe { P::input(*row.add(t + kw)) };
                            for (lanes, wk) in a.iter_mut().zip(&wv) {
                                *lanes = unsafe { P::add(*lanes, *wk, xv) };
                            }
                        }
                    }
                }
            }
        }
        for (t, a) in acc.iter().enumerate() {
            for (k, lanes) in a.iter().enumerate() {
                // SAFETY: as the loads above.
                unsafe { _mm512_storeu_ps(sums.add((t * V + k) * LANES), *lanes) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share of kernel rows in the border, counted by hand for
    /// Etalumis' input gradients (a valid convolution's: a border of two).
    #[test]
    fn the_skipped_share_counts_the_kernel_rows_in_the_border() {
        let at = |volume| ConvShape { batch: 1, c_in: 64, c_out: 64, volume, kernel: 3 };
        assert_eq!(skipped_share(&at([18, 33, 33]), 0), 0.0);
        // Planes: 48 of 54 kernel rows reach the 16 planes of values, rows
        // 93 of 99.
        let big = 1.0 - (48.0 / 54.0) * (93.0 / 99.0);
        assert!((skipped_share(&at([18, 33, 33]), 2) - big).abs() < 1e-12);
        assert!(skipped_share(&at([18, 33, 33]), 2) < SKIP_AT_LEAST);
        // 8 × 15 × 15: 18 of 24 and 39 of 45.
        let small = 1.0 - (18.0 / 24.0) * (39.0 / 45.0);
        assert!((skipped_share(&at([8, 15, 15]), 2) - small).abs() < 1e-12);
        assert!(skipped_share(&at([8, 15, 15]), 2) >= SKIP_AT_LEAST);
    }
}
