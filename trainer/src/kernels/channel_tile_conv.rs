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
//! Summation order: each output is the bias, then the taps in the order
//! input channel, depth, height, width, each a fused multiply-add: the
//! order of the row and channel kernels, so every path gives the same bits
//! and which one runs may depend on the CPU.

use rayon::prelude::*;

use super::conv_shape::ConvShape;
use super::cpu::{self, KernelPath};
use super::uninit::F32Slot;

/// Output channels in a vector.
const LANES: usize = 16;

/// Taps of a 3³ kernel.
const TAPS: usize = 27;

/// Whether a forward pass of `shape` runs here: a 3³ kernel, output
/// channels in whole vectors of [`LANES`], on a CPU running the AVX-512
/// kernels.
pub(super) fn applies(shape: &ConvShape) -> bool {
    shape.kernel == 3 && shape.c_out.is_multiple_of(LANES) && cpu::path() == KernelPath::Avx512
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
pub(super) fn forward_padded<S: F32Slot>(
    shape: &ConvShape,
    padded: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    y: &mut [S],
) {
    assert!(applies(shape), "the AVX-512 channel-tile kernel for {shape:?}");
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
    y.par_chunks_mut(group * voxels).enumerate().for_each(|(task, out)| {
        let (n, co) = (task / groups, task % groups * group);
        let input = &padded[n * shape.c_in * volume..][..shape.c_in * volume];
        // SAFETY: `applies` held, so the CPU has AVX-512; the slices'
        // lengths were checked above against `shape`, and `co + group`
        // is at most `c_out`. Tiles of R voxels × V vectors: V·R
        // accumulators and V weight vectors within the 32 registers.
        #[cfg(target_arch = "x86_64")]
        #[allow(unsafe_code)]
        unsafe {
            match group {
                64 => avx512::forward_group::<4, 6, S>(shape, input, weights, bias, co, out),
                32 => avx512::forward_group::<2, 12, S>(shape, input, weights, bias, co, out),
                _ => avx512::forward_group::<1, 16, S>(shape, input, weights, bias, co, out),
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("AVX-512 kernels chosen on {} for {input:p} {out:p} {co}", std::env::consts::ARCH);
    });
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::{ConvShape, F32Slot, LANES, TAPS};

    /// Where a tile reads and writes, for groups of `V` vectors.
    struct Tile<'a, const V: usize> {
        shape: &'a ConvShape,
        /// The sample's padded input [c_in, PD, PH, PW].
        input: &'a [f32],
        /// Channels-last weights [c_in, 27, c_out].
        weights: &'a [f32],
        /// The group's first output channel.
        co: usize,
        /// The bias of the group's channels, or zeros.
        start: [__m512; V],
    }

    /// Output channels `co..co + V·LANES` of one sample into `out` (those
    /// channels' planes), row by row in tiles of `R` voxels, a row's last
    /// voxels in tiles of 8, 4, 2 and 1.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512 F; `input` must hold one sample's padded
    /// input of `shape`, `weights` its channels-last weights, `out` the
    /// group's planes, `co + V·LANES <= shape.c_out`.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) unsafe fn forward_group<const V: usize, const R: usize, S: F32Slot>(
        shape: &ConvShape,
        input: &[f32],
        weights: &[f32],
        bias: Option<&[f32]>,
        co: usize,
        out: &mut [S],
    ) {
        let mut start = [_mm512_setzero_ps(); V];
        if let Some(b) = bias {
            let b = &b[co..co + V * LANES];
            for (k, s) in start.iter_mut().enumerate() {
                // SAFETY: floats 16k..16k + 16 of the group's V·LANES.
                *s = unsafe { _mm512_loadu_ps(b.as_ptr().add(LANES * k)) };
            }
        }
        assert_eq!(out.len(), V * LANES * shape.voxels(), "the planes of a group of {} channels", V * LANES);
        let tile = Tile::<V> { shape, input, weights, co, start };
        let [d, h, w] = shape.volume;
        for z in 0..d {
            for yy in 0..h {
                let mut x = 0;
                while x + R <= w {
                    // SAFETY: as this function's, and x + R <= w.
                    unsafe { forward_tile::<V, R, S>(&tile, z, yy, x, out) };
                    x += R;
                }
                // SAFETY: as above: each tile only when its voxels remain.
                unsafe {
                    if R > 8 && w - x >= 8 {
                        forward_tile::<V, 8, S>(&tile, z, yy, x, out);
                        x += 8;
                    }
                    if R > 4 && w - x >= 4 {
                        forward_tile::<V, 4, S>(&tile, z, yy, x, out);
                        x += 4;
                    }
                    if R > 2 && w - x >= 2 {
                        forward_tile::<V, 2, S>(&tile, z, yy, x, out);
                        x += 2;
                    }
                    if w - x >= 1 {
                        forward_tile::<V, 1, S>(&tile, z, yy, x, out);
                    }
                }
            }
        }
    }

    /// Voxels `x..x + T` of row (`z`, `yy`) for the group's channels.
    ///
    /// # Safety
    ///
    /// As [`forward_group`], and `x + T <= W`.
    #[target_feature(enable = "avx512f,avx2,fma")]
    #[inline]
    unsafe fn forward_tile<const V: usize, const T: usize, S: F32Slot>(
        tile: &Tile<'_, V>,
        z: usize,
        yy: usize,
        x: usize,
        out: &mut [S],
    ) {
        let shape = tile.shape;
        let [d, h, w] = shape.volume;
        let [pd, ph, pw] = shape.padded();
        let (c_in, c_out, volume) = (shape.c_in, shape.c_out, pd * ph * pw);
        let mut acc = [tile.start; T];
        let corner = (z * ph + yy) * pw + x;
        for ci in 0..c_in {
            // SAFETY: channel `ci` of the sample's input and its weights
            // (`forward_group`'s contract); the reads below stay inside:
            // rows `z + kd`, `yy + kh` and columns up to `x + T + 1` of a
            // padded volume of edges (d + 2, h + 2, w + 2).
            let channel = unsafe { tile.input.as_ptr().add(ci * volume + corner) };
            let taps = unsafe { tile.weights.as_ptr().add(ci * TAPS * c_out + tile.co) };
            for kd in 0..3 {
                for kh in 0..3 {
                    let row = unsafe { channel.add(kd * ph * pw + kh * pw) };
                    for kw in 0..3 {
                        let at = unsafe { taps.add(((kd * 3 + kh) * 3 + kw) * c_out) };
                        let mut wv = [_mm512_setzero_ps(); V];
                        for (k, v) in wv.iter_mut().enumerate() {
                            *v = unsafe { _mm512_loadu_ps(at.add(LANES * k)) };
                        }
                        for (t, a) in acc.iter_mut().enumerate() {
                            let xv = _mm512_set1_ps(unsafe { *row.add(t + kw) });
                            for (lanes, wk) in a.iter_mut().zip(&wv) {
                                *lanes = _mm512_fmadd_ps(*wk, xv, *lanes);
                            }
                        }
                    }
                }
            }
        }
        let voxels = d * h * w;
        let first = (z * h + yy) * w + x;
        let mut lanes = [0.0f32; 4 * LANES];
        let out = out.as_mut_ptr();
        for (t, a) in acc.iter().enumerate() {
            for (k, v) in a.iter().enumerate() {
                // SAFETY: floats 16k..16k + 16 of `lanes`, k < V <= 4.
                unsafe { _mm512_storeu_ps(lanes.as_mut_ptr().add(LANES * k), *v) };
            }
            for (j, value) in lanes[..V * LANES].iter().enumerate() {
                // SAFETY: `out` holds the group's V·LANES planes of
                // `voxels` (`forward_group` checked), j < V·LANES and
                // first + t < voxels. Unchecked: with a check per value
                // the stores took a fifth of a 16-channel layer's time.
                unsafe { out.add(j * voxels + first + t).write(S::holding(*value)) };
            }
        }
    }
}
