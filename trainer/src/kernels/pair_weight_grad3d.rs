//! The 3³ weight gradient on AVX-512 for blocks of 8 output channels, from
//! an output gradient laid out in channel pairs: each 512-bit register
//! holds 8 lanes of two channels, so a block's 8 channels × 3 shifts are 12
//! accumulators, every output-gradient vector is one aligned-size load and
//! every input row one broadcast load, with no shuffles in the loop.
//!
//! Why: [`direct_conv`](super::direct_conv)'s AVX-512 block (4 channels)
//! built each channel pair with an insert on the shuffle port, which the
//! 512-bit multiply-adds also need, and held 6 accumulators, too few to
//! cover their latency; its AVX2 block fills half a register. Both ran at
//! under half the rate of the forward tiles at Etalumis' 31-wide rows.
//!
//! Summation order: each (output channel, input channel, tap) has the row
//! kernels' 8 lanes (column `x` in lane `x mod 8`, the row's last columns
//! in the first lanes), summed plane by plane into running totals, the
//! lanes then summed in order: [`direct_conv`]'s weight-gradient order, so
//! the same bits as its portable, AVX2 and AVX-512 blocks.

use rayon::prelude::*;

use super::columns::fill;
use super::conv_shape::ConvShape;
use super::direct_conv::LANES;
use super::uninit;

/// Output channels of one block.
pub(super) const BLOCK: usize = 8;

/// Running totals of one (block, input channel) per kernel row, channel
/// pair and shift: two channels' [`LANES`] lanes each.
pub(super) type Totals = [[[[f32; 2 * LANES]; 3]; BLOCK / 2]; 9];

/// A plane's partial sums `acc` (per channel pair and shift) added to a
/// kernel row's running `totals`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) fn add_to_totals(
    acc: &[[std::arch::x86_64::__m512; 3]; BLOCK / 2],
    totals: &mut [[[f32; 2 * LANES]; 3]; BLOCK / 2],
) {
    use std::arch::x86_64::{_mm512_add_ps, _mm512_loadu_ps, _mm512_storeu_ps};
    for (sums, shifts) in acc.iter().zip(totals.iter_mut()) {
        for (sum, lanes) in sums.iter().zip(shifts.iter_mut()) {
            // SAFETY: `lanes` holds 2 · LANES = 16 floats.
            #[allow(unsafe_code)]
            unsafe {
                _mm512_storeu_ps(lanes.as_mut_ptr(), _mm512_add_ps(_mm512_loadu_ps(lanes.as_ptr()), *sum));
            }
        }
    }
}

/// The tiles of output-channel `blocks` × `inputs` (block-major), from
/// `plane(n, z, block, ci, totals)` adding plane z of sample n's partial
/// sums to a tile's running totals: called plane by plane outside, so a
/// plane of the output gradient is read from cache for every input
/// channel of the task rather than the whole batch's streamed from memory
/// once per input channel (each tap's lanes still see the planes in
/// order); then each channel's lanes summed in order. Shared by the f32
/// and bf16 blocks, whose lanes sum the same columns' products.
pub(super) fn tiles_by_plane(
    shape: &ConvShape,
    blocks: std::ops::Range<usize>,
    inputs: std::ops::Range<usize>,
    mut plane: impl FnMut(usize, usize, usize, usize, &mut Totals),
) -> Vec<[[f32; 27]; BLOCK]> {
    let mut totals: Vec<Totals> = vec![[[[[0.0; 2 * LANES]; 3]; BLOCK / 2]; 9]; blocks.len() * inputs.len()];
    for n in 0..shape.batch {
        for z in 0..shape.volume[0] {
            for (b, block_totals) in blocks.clone().zip(totals.chunks_mut(inputs.len())) {
                for (ci, kept) in inputs.clone().zip(block_totals.iter_mut()) {
                    plane(n, z, b, ci, kept);
                }
            }
        }
    }
    totals
        .iter()
        .map(|kept| {
            let mut tile = [[0.0; 27]; BLOCK];
            for (kernel_row, pairs_of_row) in kept.iter().enumerate() {
                for (q, shifts) in pairs_of_row.iter().enumerate() {
                    for (s, lanes) in shifts.iter().enumerate() {
                        for half in 0..2 {
                            tile[2 * q + half][kernel_row * 3 + s] = lanes[half * LANES..][..LANES].iter().sum();
                        }
                    }
                }
            }
            tile
        })
        .collect()
}

/// The output gradient [batch, c_out, D, H, W] as [batch, D, c_out / 2, H,
/// chunks, 2, LANES]: each row in chunks of [`LANES`] columns, channel `2q`'s
/// chunk then channel `2q + 1`'s, the row's last chunk padded with zeros.
/// `c_out` must be even.
///
/// Plane-major, so that the rows a task reads for one plane (its blocks'
/// pairs) are one contiguous run. Pair-major, they were runs a whole
/// pair's batch apart: on Etalumis' largest layer every run fell on the
/// same L2 sets but for the physical page's bits, sixteen of them for a
/// task of 4 blocks in a 16-way L2, and the layer's time changed from one
/// process to the next with where its pages fell (`docs/benchmarks.md`,
/// Etalumis).
pub(super) fn channel_pairs(shape: &ConvShape, out_grad: &[f32]) -> uninit::LineAligned {
    let [d, h, w] = shape.volume;
    assert!(shape.c_out.is_multiple_of(2) && out_grad.len() == shape.output_len(), "output gradient of {shape:?}");
    let (voxels, chunks) = (d * h * w, w.div_ceil(LANES));
    let row_len = chunks * 2 * LANES;
    let plane_len = shape.c_out / 2 * h * row_len;
    let len = shape.batch * d * plane_len;
    // SAFETY: every chunk of every row of every pair of every plane is
    // written: its columns from the output gradient, zeros after them.
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole_aligned(len, |planes| {
            planes.par_chunks_mut(plane_len).enumerate().for_each(|(p, dst)| {
                let (n, z) = (p / d, p % d);
                for (r, dst_row) in dst.chunks_mut(row_len).enumerate() {
                    let (q, y) = (r / h, r % h);
                    for half in 0..2 {
                        let src = &out_grad[(n * shape.c_out + 2 * q + half) * voxels + (z * h + y) * w..][..w];
                        for c in 0..chunks {
                            let columns = &src[c * LANES..w.min((c + 1) * LANES)];
                            let chunk = &mut dst_row[(2 * c + half) * LANES..][..LANES];
                            chunk[..columns.len()].write_copy_of_slice(columns);
                            fill(&mut chunk[columns.len()..], 0.0);
                        }
                    }
                }
            });
        })
    }
}

/// The 27 taps' gradients of output channels `blocks.start * BLOCK..
/// blocks.end * BLOCK` from input channels `inputs`, from the padded input
/// and [`channel_pairs`] of the output gradient: one tile per (block,
/// input channel), block-major.
///
/// The loops run plane by plane (sample, depth) outside, so a plane of the
/// output gradient is read from cache for every input channel of the task
/// rather than the whole batch's streamed from memory once per input
/// channel; each tap's lanes still see the planes in order.
///
/// # Safety
///
/// The CPU must have AVX-512 F and DQ, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
pub(super) unsafe fn tiles(
    shape: &ConvShape,
    padded: &[f32],
    pairs: &[f32],
    blocks: std::ops::Range<usize>,
    inputs: std::ops::Range<usize>,
) -> Vec<[[f32; 27]; BLOCK]> {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    assert!(shape.kernel == 3 && blocks.end * BLOCK <= shape.c_out && inputs.end <= shape.c_in);
    assert!(padded.len() >= shape.batch * shape.c_in * pd * ph * pw);
    assert!(pairs.len() >= shape.c_out / 2 * shape.batch * d * h * w.div_ceil(LANES) * 2 * LANES);
    // SAFETY: the CPU features are this function's contract; the
    // assertions bound every offset `tiles_unchecked` reads.
    unsafe { avx512::tiles_unchecked(shape, padded, pairs, blocks, inputs) }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm256_maskload_ps, _mm512_broadcast_f32x8, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_setzero_ps,
    };

    use super::super::direct_conv::weight_grad_avx2::tail_mask;
    use super::{BLOCK, ConvShape, LANES, Totals};

    /// Registers of channel pairs in a block.
    const PAIRS: usize = BLOCK / 2;

    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    pub(super) fn tiles_unchecked(
        shape: &ConvShape,
        padded: &[f32],
        pairs: &[f32],
        blocks: std::ops::Range<usize>,
        inputs: std::ops::Range<usize>,
    ) -> Vec<[[f32; 27]; BLOCK]> {
        let [pd, ph, pw] = shape.padded();
        super::tiles_by_plane(shape, blocks, inputs, |n, z, b, ci, kept| {
            let input = &padded[(n * shape.c_in + ci) * pd * ph * pw..][..pd * ph * pw];
            // The closure has this function's features.
            plane(shape, input, pairs, b * BLOCK, n, z, kept)
        })
    }

    /// Plane `z` of sample `n`: its partial sums for output channels
    /// `co..co + BLOCK` against one input channel's padded volume `input`,
    /// added to `kept`.
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    fn plane(shape: &ConvShape, input: &[f32], pairs: &[f32], co: usize, n: usize, z: usize, kept: &mut Totals) {
        let [d, h, w] = shape.volume;
        let [_, ph, pw] = shape.padded();
        let (full, chunks) = (w / LANES, w.div_ceil(LANES));
        let row_len = chunks * 2 * LANES;
        let plane = ((n * d + z) * shape.c_out / 2 + co / 2) * h * row_len;
        for (kernel_row, kept_row) in kept.iter_mut().enumerate() {
            let (kd, kh) = (kernel_row / 3, kernel_row % 3);
            let mut acc = [[_mm512_setzero_ps(); 3]; PAIRS];
            for yy in 0..h {
                let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                let first = plane + yy * row_len;
                // Plain loops, not `array::from_fn`, in these functions: its
                // closures do not carry the target features and were not
                // inlined, a call per load.
                let mut g: [&[f32]; PAIRS] = [&[]; PAIRS];
                for (q, gq) in g.iter_mut().enumerate() {
                    *gq = &pairs[first + q * h * row_len..][..row_len];
                }
                for c in 0..full {
                    // SAFETY: LANES·c + s + LANES <= w + 2 = pw for
                    // s <= 2, and chunk c's 2·LANES floats lie in each
                    // pair's row of `row_len`.
                    let (mut r, mut gv) = ([_mm512_setzero_ps(); 3], [_mm512_setzero_ps(); PAIRS]);
                    unsafe {
                        let p = row.as_ptr().add(LANES * c);
                        for (s, v) in r.iter_mut().enumerate() {
                            *v = _mm512_broadcast_f32x8(load8(p.add(s)));
                        }
                        for (v, gq) in gv.iter_mut().zip(&g) {
                            *v = _mm512_loadu_ps(gq.as_ptr().add(2 * LANES * c));
                        }
                    }
                    add_products(&mut acc, &r, &gv);
                }
                if full < chunks {
                    // SAFETY: the masked loads read columns full·LANES + s
                    // .. w + s <= pw of the row; the pairs' last chunk is
                    // zeros past the row's end.
                    let (mut r, mut gv) = ([_mm512_setzero_ps(); 3], [_mm512_setzero_ps(); PAIRS]);
                    unsafe {
                        let mask = tail_mask(w - LANES * full);
                        let p = row.as_ptr().add(LANES * full);
                        for (s, v) in r.iter_mut().enumerate() {
                            *v = _mm512_broadcast_f32x8(_mm256_maskload_ps(p.add(s), mask));
                        }
                        for (v, gq) in gv.iter_mut().zip(&g) {
                            *v = _mm512_loadu_ps(gq.as_ptr().add(2 * LANES * full));
                        }
                    }
                    add_products(&mut acc, &r, &gv);
                }
            }
            // The plane's partial sums join the running totals.
            super::add_to_totals(&acc, kept_row);
        }
    }

    /// `acc[q][s] += gv[q] · r[s]`, fused, for every pair and shift.
    #[target_feature(enable = "avx512f,avx512dq,avx2,fma")]
    #[inline]
    fn add_products(acc: &mut [[__m512; 3]; PAIRS], r: &[__m512; 3], gv: &[__m512; PAIRS]) {
        for (a, g) in acc.iter_mut().zip(gv) {
            for (lanes, shifted) in a.iter_mut().zip(r) {
                *lanes = _mm512_fmadd_ps(*g, *shifted, *lanes);
            }
        }
    }

    /// Eight floats from `p` as a 256-bit vector.
    ///
    /// # Safety
    ///
    /// `p..p + 8` must be readable.
    #[target_feature(enable = "avx2")]
    unsafe fn load8(p: *const f32) -> std::arch::x86_64::__m256 {
        // SAFETY: the caller's contract.
        unsafe { std::arch::x86_64::_mm256_loadu_ps(p) }
    }
}
