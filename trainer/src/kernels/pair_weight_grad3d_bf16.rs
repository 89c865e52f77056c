//! [`pair_weight_grad3d`]'s 3³ weight gradient with bf16 products, under
//! `--precision bf16` on a CPU with AVX512_BF16: the same registers of 8
//! lanes of two output channels, but each lane sums two neighbouring
//! columns' products (`VDPBF16PS`), so a chunk of a row is 16 columns and
//! an instruction does twice an FMA's work. An input row's 16 columns from
//! a shift are one 256-bit load, broadcast to both channels' halves.
//!
//! The operands are bf16 values already (the model rounds a convolution's
//! input and the gradient reaching it: `docs/precision.md`); they are
//! copied once per call into bf16 arrays, the output gradient in the
//! channel-pair layout. The sums are f32, in the instruction's order
//! (denormals read and written as zero), so they differ from the f32
//! kernel's on the same values by rounding only.
//!
//! [`pair_weight_grad3d`]: super::pair_weight_grad3d

#![cfg(target_arch = "x86_64")]

use rayon::prelude::*;

use super::conv_shape::ConvShape;
use super::pair_weight_grad3d::BLOCK;

/// Columns of a row in one chunk: 8 lanes of column pairs.
const CHUNK: usize = 16;

// Each channel's half of a register holds as many lanes as the f32
// kernel's, so both share `tiles_by_plane`'s totals and lane sums.
const _: () = assert!(CHUNK / 2 == super::direct_conv::LANES);

/// The output gradient [batch, c_out, D, H, W] in bf16 as [batch, D,
/// c_out / 2, H, chunks, 2, CHUNK]: each row in chunks of [`CHUNK`]
/// columns, channel `2q`'s chunk then channel `2q + 1`'s, the row's last
/// chunk padded with zeros ([`pair_weight_grad3d::channel_pairs`]'s
/// layout, in chunks of 16). `c_out` must be even.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VL and AVX512_BF16.
///
/// [`pair_weight_grad3d::channel_pairs`]: super::pair_weight_grad3d::channel_pairs
#[allow(unsafe_code)]
pub(super) unsafe fn channel_pairs(shape: &ConvShape, out_grad: &[f32]) -> Vec<u16> {
    let [d, h, w] = shape.volume;
    assert!(shape.c_out.is_multiple_of(2) && out_grad.len() == shape.output_len(), "output gradient of {shape:?}");
    let (voxels, chunks) = (d * h * w, w.div_ceil(CHUNK));
    let row_len = chunks * 2 * CHUNK;
    let plane_len = shape.c_out / 2 * h * row_len;
    let mut planes = vec![0u16; shape.batch * d * plane_len];
    planes.par_chunks_mut(plane_len.max(1)).enumerate().for_each(|(p, dst)| {
        let (n, z) = (p / d, p % d);
        for (r, dst_row) in dst.chunks_mut(row_len).enumerate() {
            let (q, y) = (r / h, r % h);
            for half in 0..2 {
                let src = &out_grad[(n * shape.c_out + 2 * q + half) * voxels + (z * h + y) * w..][..w];
                // SAFETY: the CPU's features are this function's contract;
                // the row holds 2 · CHUNK values per chunk of `src`.
                unsafe { avx512::row_in_chunks(src, half, dst_row) };
            }
        }
    });
    planes
}

/// `padded` (the forward pass's padded input, [batch, c_in] volumes) in
/// bf16.
///
/// # Safety
/// As [`channel_pairs`].
#[allow(unsafe_code)]
pub(super) unsafe fn padded_values(padded: &[f32]) -> Vec<u16> {
    let mut values = vec![0u16; padded.len()];
    values.par_chunks_mut(1 << 14).zip(padded.par_chunks(1 << 14)).for_each(|(dst, src)| {
        // SAFETY: the caller's contract; `dst` is as long as `src`.
        unsafe { avx512::values_to_bf16(src, dst) };
    });
    values
}

/// The 27 taps' gradients of output channels `blocks.start * BLOCK..
/// blocks.end * BLOCK` from input channels `inputs`, from [`padded_values`]
/// and [`channel_pairs`]: one tile per (block, input channel), block-major,
/// as [`pair_weight_grad3d::tiles`] gives them.
///
/// # Safety
/// As [`channel_pairs`], and the CPU must have AVX-512 DQ.
///
/// [`pair_weight_grad3d::tiles`]: super::pair_weight_grad3d::tiles
#[allow(unsafe_code)]
pub(super) unsafe fn tiles(
    shape: &ConvShape,
    padded: &[u16],
    pairs: &[u16],
    blocks: std::ops::Range<usize>,
    inputs: std::ops::Range<usize>,
) -> Vec<[[f32; 27]; BLOCK]> {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    assert!(shape.kernel == 3 && blocks.end * BLOCK <= shape.c_out && inputs.end <= shape.c_in);
    assert!(padded.len() >= shape.batch * shape.c_in * pd * ph * pw);
    assert!(pairs.len() >= shape.c_out / 2 * shape.batch * d * h * w.div_ceil(CHUNK) * 2 * CHUNK);
    // SAFETY: the CPU features are this function's contract; the
    // assertions bound every offset `tiles_unchecked` reads.
    unsafe { avx512::tiles_unchecked(shape, padded, pairs, blocks, inputs) }
}

#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::{
        __m512, __m512bh, __m512i, __mmask16, _mm256_loadu_si256, _mm256_maskz_loadu_epi16, _mm256_storeu_si256,
        _mm512_broadcast_i32x8, _mm512_cvtne2ps_pbh, _mm512_cvtneps_pbh, _mm512_dpbf16_ps, _mm512_loadu_ps,
        _mm512_loadu_si512, _mm512_maskz_loadu_ps, _mm512_setzero_ps, _mm512_setzero_si512, _mm512_storeu_si512,
    };

    use super::super::pair_weight_grad3d::{Totals, add_to_totals, tiles_by_plane};
    use super::{BLOCK, CHUNK, ConvShape};

    /// Registers of channel pairs in a block.
    const PAIRS: usize = BLOCK / 2;

    /// `src` (at most [`CHUNK`] values) rounded to bf16 (`VCVTNEPS2BF16`,
    /// as [`round_bf16`](crate::kernels::precision::round_bf16) rounds)
    /// into `dst`'s first values, zeros after them in `dst`'s first
    /// [`CHUNK`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    #[inline]
    fn to_bf16(src: &[f32], dst: &mut [u16]) {
        assert!(src.len() <= CHUNK && dst.len() >= src.len());
        let mask: __mmask16 = if src.len() == CHUNK { u16::MAX } else { (1u16 << src.len()) - 1 };
        // SAFETY: the mask reads `src.len()` values of `src`.
        let values = unsafe { _mm512_maskz_loadu_ps(mask, src.as_ptr()) };
        let halves: std::arch::x86_64::__m256i = unsafe { std::mem::transmute(_mm512_cvtneps_pbh(values)) };
        if dst.len() >= CHUNK {
            // SAFETY: `dst` holds CHUNK values, 256 bits.
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), halves) };
        } else {
            let mut chunk = [0u16; CHUNK];
            // SAFETY: `chunk` holds CHUNK values.
            unsafe { _mm256_storeu_si256(chunk.as_mut_ptr().cast(), halves) };
            let len = dst.len();
            dst.copy_from_slice(&chunk[..len]);
        }
    }

    /// `src` rounded to bf16 into `dst` (as long), 32 values a
    /// conversion (`VCVTNE2PS2BF16`, the same rounding), the rest
    /// [`CHUNK`] at a time.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    pub(super) fn values_to_bf16(src: &[f32], dst: &mut [u16]) {
        assert_eq!(src.len(), dst.len());
        let whole = src.len() / (2 * CHUNK);
        for (src, dst) in src.chunks_exact(2 * CHUNK).zip(dst.chunks_exact_mut(2 * CHUNK)) {
            // SAFETY: both chunks hold 32 values (64 bytes of `dst`).
            unsafe {
                let (low, high) = (_mm512_loadu_ps(src.as_ptr()), _mm512_loadu_ps(src.as_ptr().add(CHUNK)));
                let values: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(high, low));
                _mm512_storeu_si512(dst.as_mut_ptr().cast(), values);
            }
        }
        let rest = 2 * CHUNK * whole;
        for (src, dst) in src[rest..].chunks(CHUNK).zip(dst[rest..].chunks_mut(CHUNK)) {
            to_bf16(src, dst);
        }
    }

    /// One channel's row `src` rounded to bf16 into its `half` of each
    /// chunk of `dst` ([`channel_pairs`](super::channel_pairs)' row: per
    /// chunk, [`CHUNK`] values of each channel of the pair), zeros past the
    /// row's end.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    pub(super) fn row_in_chunks(src: &[f32], half: usize, dst: &mut [u16]) {
        for (c, columns) in src.chunks(CHUNK).enumerate() {
            to_bf16(columns, &mut dst[(2 * c + half) * CHUNK..][..CHUNK]);
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]
    pub(super) fn tiles_unchecked(
        shape: &ConvShape,
        padded: &[u16],
        pairs: &[u16],
        blocks: std::ops::Range<usize>,
        inputs: std::ops::Range<usize>,
    ) -> Vec<[[f32; 27]; BLOCK]> {
        let [pd, ph, pw] = shape.padded();
        tiles_by_plane(shape, blocks, inputs, |n, z, b, ci, kept| {
            let input = &padded[(n * shape.c_in + ci) * pd * ph * pw..][..pd * ph * pw];
            // The closure has this function's features.
            plane(shape, input, pairs, b * BLOCK, n, z, kept)
        })
    }

    /// Plane `z` of sample `n`: its partial sums for output channels
    /// `co..co + BLOCK` against one input channel's padded volume `input`,
    /// added to `kept`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]
    fn plane(shape: &ConvShape, input: &[u16], pairs: &[u16], co: usize, n: usize, z: usize, kept: &mut Totals) {
        let [d, h, w] = shape.volume;
        let [_, ph, pw] = shape.padded();
        let (full, chunks) = (w / CHUNK, w.div_ceil(CHUNK));
        let row_len = chunks * 2 * CHUNK;
        let plane = ((n * d + z) * shape.c_out / 2 + co / 2) * h * row_len;
        let tail = w - CHUNK * full;
        let tail_mask: __mmask16 = (1u16 << tail) - 1;
        for (kernel_row, kept_row) in kept.iter_mut().enumerate() {
            let (kd, kh) = (kernel_row / 3, kernel_row % 3);
            let mut acc = [[_mm512_setzero_ps(); 3]; PAIRS];
            for yy in 0..h {
                let row = &input[((z + kd) * ph + yy + kh) * pw..][..pw];
                let first = plane + yy * row_len;
                let mut g: [&[u16]; PAIRS] = [&[]; PAIRS];
                for (q, gq) in g.iter_mut().enumerate() {
                    *gq = &pairs[first + q * h * row_len..][..row_len];
                }
                for c in 0..chunks {
                    let mut r = [from_bits(_mm512_setzero_si512()); 3];
                    let mut gv = [from_bits(_mm512_setzero_si512()); PAIRS];
                    // SAFETY: a whole chunk reads columns CHUNK·c + s ..
                    // CHUNK·(c + 1) + s <= w + 2 = pw of the row for s <= 2;
                    // the tail's mask reads its `tail` columns from there,
                    // within the row too. Chunk c's 2·CHUNK values lie in
                    // each pair's row of `row_len`.
                    unsafe {
                        let p = row.as_ptr().add(CHUNK * c);
                        for (s, v) in r.iter_mut().enumerate() {
                            let columns = if c < full {
                                _mm256_loadu_si256(p.add(s).cast())
                            } else {
                                _mm256_maskz_loadu_epi16(tail_mask, p.add(s).cast())
                            };
                            *v = from_bits(_mm512_broadcast_i32x8(columns));
                        }
                        for (v, gq) in gv.iter_mut().zip(&g) {
                            *v = from_bits(_mm512_loadu_si512(gq.as_ptr().add(2 * CHUNK * c).cast()));
                        }
                    }
                    add_products(&mut acc, &r, &gv);
                }
            }
            // The plane's partial sums join the running totals.
            add_to_totals(&acc, kept_row);
        }
    }

    /// `acc[q][s] += gv[q] · r[s]` in column pairs, for every pair and shift.
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[inline]
    fn add_products(acc: &mut [[__m512; 3]; PAIRS], r: &[__m512bh; 3], gv: &[__m512bh; PAIRS]) {
        for (a, g) in acc.iter_mut().zip(gv) {
            for (lanes, shifted) in a.iter_mut().zip(r) {
                *lanes = _mm512_dpbf16_ps(*lanes, *g, *shifted);
            }
        }
    }

    /// 512 bits as 32 bf16 values.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn from_bits(v: __m512i) -> __m512bh {
        // SAFETY: both are 512-bit vectors with no invalid bit patterns.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }
}
