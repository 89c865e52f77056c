//! The direct 2-D forward convolution of [`direct_conv2d`] with bf16
//! products (`VDPBF16PS`), under `--precision bf16` on a CPU that has
//! AVX512_BF16: each instruction sums two taps' products into 16 outputs,
//! where an FMA sums one, so a tile of [`CO_BLOCK`] channels × 32 outputs
//! runs its taps in half the instructions.
//!
//! Taps (ci, i, j) are taken in order two at a time, the even one in each
//! pair's low half: the two taps' input vectors, rounded to bf16
//! (`VCVTNE2PS2BF16`, nearest even, as [`round_bf16`] rounds), are
//! interleaved into pairs per output, and each channel's two weights are
//! one broadcast pair. An odd last tap pairs with zero. The sums are f32,
//! with the instruction's own order and flushing (denormals read and
//! written as zero), so they differ from the f32 kernel's on the same
//! rounded values by rounding only; the weight gradient and every other
//! pass are unchanged.
//!
//! The 3-D "same" and valid convolutions of [`direct_conv`] take the same
//! tiles ([`volume_block`]): an output plane at depth z is a 2-D
//! convolution whose taps are (ci, kd, kh, kw), each reading its padded
//! input plane ci at depth z + kd.
//!
//! [`direct_conv2d`]: super::direct_conv2d
//! [`direct_conv`]: super::direct_conv
//! [`round_bf16`]: super::precision::round_bf16

#![cfg(target_arch = "x86_64")]

use std::mem::MaybeUninit;

use std::arch::x86_64::{
    __m512, __m512bh, __m512i, _mm512_cvtne2ps_pbh, _mm512_dpbf16_ps, _mm512_loadu_ps, _mm512_loadu_si512,
    _mm512_permutexvar_epi16, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512,
    _mm512_storeu_ps,
};

use super::conv_shape::ConvShape;
use super::direct_conv2d::{CO_BLOCK, Job};
use super::precision::round_bf16;

/// Outputs of a row in one vector.
const LANES: usize = 16;

/// Word 2l of a pair vector is word l (output l's even tap), word 2l + 1
/// is word 16 + l (its odd tap) of `VCVTNE2PS2BF16`'s result.
const INTERLEAVE: [u16; 32] = {
    let mut index = [0u16; 32];
    let mut l = 0;
    while l < 16 {
        index[2 * l] = l as u16;
        index[2 * l + 1] = 16 + l as u16;
        l += 1;
    }
    index
};

/// Whether [`block`] can take a convolution with outputs `out_w` wide:
/// a row holds at least one whole vector (narrower rows keep the f32
/// kernel, whose one-output tiles these do not have).
pub(super) fn takes(out_w: usize) -> bool {
    out_w >= LANES
}

/// Each channel's weights as bf16 pairs, [CO_BLOCK][⌈taps/2⌉]: the even
/// tap in the low 16 bits, zero past the last tap.
pub(super) fn weight_pairs(weights: &[f32]) -> Vec<u32> {
    let taps = weights.len() / CO_BLOCK;
    let bits = |x: f32| round_bf16(x).to_bits() >> 16;
    weights
        .chunks_exact(taps.max(1))
        .flat_map(|channel| channel.chunks(2).map(|pair| bits(pair[0]) | pair.get(1).map_or(0, |&odd| bits(odd) << 16)))
        .collect()
}

/// The [`CO_BLOCK`] output planes `planes` of sample `sample` (rows at
/// least [`LANES`] wide, [`takes`]) from the block's weight pairs: tiles
/// of 2 × 16 outputs, a row's end on a 16-wide tile overlapping the one
/// before (the same sums, written again with the same bits).
///
/// # Safety
/// The CPU must have AVX-512 (F, BW) and AVX512_BF16.
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) unsafe fn block(job: &Job<'_>, sample: usize, pairs: &[u32], planes: &mut [MaybeUninit<f32>]) {
    let [out_h, out_w] = job.out;
    assert!(takes(out_w), "bf16 direct tiles need rows of at least {LANES} outputs, not {out_w}");
    let (starts, row_step) = job.padded.tap_starts(sample, job.c_in, job.window);
    let reads = Reads { values: job.padded.values(), starts: &starts, row_step };
    rows(&reads, pairs, &[0.0; CO_BLOCK], [out_h, out_w], job.out, planes)
}

/// The [`CO_BLOCK`] output volumes `volumes` (output channels `co..`,
/// each [D, H, W] as `shape.volume`, W at least [`LANES`]: [`takes`]) of
/// sample `sample` of a 3-D convolution of edge `shape.kernel` with
/// stride 1, from `padded` ([batch, c_in] volumes of `shape.padded()`,
/// as [`direct_conv`](super::direct_conv) pads them or a valid
/// convolution reads its input), the block's weight pairs (taps in the
/// weight's order, ci, kd, kh, kw) and its `bias`, summed first.
///
/// # Safety
/// The CPU must have AVX-512 (F, BW) and AVX512_BF16.
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) unsafe fn volume_block(
    shape: &ConvShape,
    padded: &[f32],
    sample: usize,
    pairs: &[u32],
    bias: &[f32; CO_BLOCK],
    volumes: &mut [MaybeUninit<f32>],
) {
    let [d, h, w] = shape.volume;
    let [pd, ph, pw] = shape.padded();
    let k = shape.kernel;
    assert!(takes(w), "bf16 direct tiles need rows of at least {LANES} outputs, not {w}");
    assert_eq!(volumes.len(), CO_BLOCK * d * h * w, "bf16 direct tiles of {shape:?}");
    let input = &padded[sample * shape.c_in * pd * ph * pw..][..shape.c_in * pd * ph * pw];
    let mut starts = Vec::with_capacity(shape.c_in * k * k * k);
    for ci in 0..shape.c_in {
        for kd in 0..k {
            for kh in 0..k {
                let row = ((ci * pd + kd) * ph + kh) * pw;
                starts.extend(row..row + k);
            }
        }
    }
    for z in 0..d {
        // Depth z's taps read from plane z + kd: the same starts, z
        // planes on. Its outputs are rows z·H.. of [D·H, W] planes.
        let reads = Reads { values: &input[z * ph * pw..], starts: &starts, row_step: pw };
        rows(&reads, pairs, bias, [h, w], [d * h, w], &mut volumes[z * h * w..]);
    }
}

/// Rows `0..rows` of outputs `width` wide of the block's planes (each
/// `out`: [rows of a plane, width]), in tiles of 2 × 16 outputs, a row's
/// end on a 16-wide tile overlapping the one before (the same sums,
/// written again with the same bits).
#[inline]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn rows(
    reads: &Reads<'_>,
    pairs: &[u32],
    bias: &[f32; CO_BLOCK],
    [rows, width]: [usize; 2],
    out: [usize; 2],
    planes: &mut [MaybeUninit<f32>],
) {
    for oh in 0..rows {
        let mut ow = 0;
        while ow < width {
            if width - ow >= 2 * LANES {
                tile::<2>(reads, pairs, bias, [oh, ow], out, planes);
                ow += 2 * LANES;
            } else {
                let at = ow.min(width - LANES);
                tile::<1>(reads, pairs, bias, [oh, at], out, planes);
                ow = at + LANES;
            }
        }
    }
}

/// Where one sample's taps read ([`Padded::tap_starts`]).
///
/// [`Padded::tap_starts`]: super::direct_conv2d::Padded::tap_starts
struct Reads<'a> {
    values: &'a [f32],
    starts: &'a [usize],
    row_step: usize,
}

/// The V input vectors of tap `t` for outputs `ow..` of row `oh`.
#[inline]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn inputs<const V: usize>(reads: &Reads<'_>, t: usize, [oh, ow]: [usize; 2]) -> [__m512; V] {
    let row = &reads.values[reads.starts[t] + oh * reads.row_step + ow..][..V * LANES];
    let mut vectors = [_mm512_setzero_ps(); V];
    for (v, vector) in vectors.iter_mut().enumerate() {
        // SAFETY: `row` holds V·16 floats; this load reads 16 of them.
        *vector = unsafe { _mm512_loadu_ps(row[v * LANES..].as_ptr()) };
    }
    vectors
}

/// Outputs `ow..ow + V·16` of row `oh` of the block's planes, each
/// channel's sum started at its `bias`.
#[inline]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
fn tile<const V: usize>(
    reads: &Reads<'_>,
    pairs: &[u32],
    bias: &[f32; CO_BLOCK],
    at: [usize; 2],
    [out_h, out_w]: [usize; 2],
    planes: &mut [MaybeUninit<f32>],
) {
    let taps = reads.starts.len();
    let per_channel = taps.div_ceil(2);
    // SAFETY: INTERLEAVE holds 32 u16, 64 bytes, which the load reads.
    let interleave: __m512i = unsafe { _mm512_loadu_si512(INTERLEAVE.as_ptr().cast()) };
    // A loop, not `bias.map`: a closure without this function's target
    // features returns its vectors through memory.
    let mut acc = [[_mm512_setzero_ps(); V]; CO_BLOCK];
    for (a, &b) in acc.iter_mut().zip(bias) {
        *a = [_mm512_set1_ps(b); V];
    }
    for pair in 0..per_channel {
        let even = inputs::<V>(reads, 2 * pair, at);
        let odd = if 2 * pair + 1 < taps { inputs::<V>(reads, 2 * pair + 1, at) } else { [_mm512_setzero_ps(); V] };
        let mut x = [from_bits(_mm512_setzero_si512()); V];
        for v in 0..V {
            let halves: __m512i = to_bits(_mm512_cvtne2ps_pbh(odd[v], even[v]));
            x[v] = from_bits(_mm512_permutexvar_epi16(interleave, halves));
        }
        for (c, a) in acc.iter_mut().enumerate() {
            let w = from_bits(_mm512_set1_epi32(pairs[c * per_channel + pair] as i32));
            for v in 0..V {
                a[v] = _mm512_dpbf16_ps(a[v], x[v], w);
            }
        }
    }
    let [oh, ow] = at;
    for (c, a) in acc.iter().enumerate() {
        let dst = &mut planes[(c * out_h + oh) * out_w + ow..][..V * LANES];
        for (v, lanes) in a.iter().enumerate() {
            let out = &mut dst[v * LANES..][..LANES];
            // SAFETY: `out` holds 16 floats, which the store writes.
            unsafe { _mm512_storeu_ps(out.as_mut_ptr().cast::<f32>(), *lanes) };
        }
    }
}

/// The 32 bf16 values of a vector as its 512 bits.
#[inline]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn to_bits(v: __m512bh) -> __m512i {
    // SAFETY: both are 512-bit vectors with no invalid bit patterns.
    unsafe { std::mem::transmute::<__m512bh, __m512i>(v) }
}

/// 512 bits as 32 bf16 values.
#[inline]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn from_bits(v: __m512i) -> __m512bh {
    // SAFETY: as in `to_bits`.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::columns::{Window, wave};
    use crate::kernels::direct_conv2d::{Padded, forward};
    use crate::kernels::precision::Precision;

    /// The bf16 tiles against the f32 kernel (itself checked against the
    /// definition) on the same bf16 operands: f32 sums of exact products,
    /// in another order. Odd tap counts (the last pair half zero), strides
    /// and dilations, rows ending on a whole 32-wide tile and on a 16-wide
    /// one overlapping the tile before.
    #[test]
    fn bf16_direct_tiles_sum_the_rounded_operands_as_the_f32_kernel_does() {
        if !Precision::Bf16.native() {
            e2e::skip("bf16_direct_tiles_sum_the_rounded_operands", "no AVX512_BF16 on this CPU");
            return;
        }
        let three = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        let cases = [
            ([2, 3, 5, 64], 8, three),
            ([1, 2, 4, 40], 16, three),
            ([1, 3, 9, 90], 8, Window { kernel: [7, 7], stride: [2, 2], padding: [3, 3], dilation: [1, 1] }),
            ([2, 2, 6, 36], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [2, 2], dilation: [2, 2] }),
            ([1, 5, 7, 40], 8, Window { kernel: [5, 3], stride: [2, 1], padding: [0, 2], dilation: [1, 2] }),
        ];
        for (dims, c_out, window) in cases {
            let [n, c_in, h, w] = dims;
            let out = [window.output_size(0, h), window.output_size(1, w)];
            assert!(takes(out[1]), "{dims:?}: rows of {} outputs", out[1]);
            let (mut x, mut weight) =
                (wave(n * c_in * h * w, 7), wave(c_out * c_in * window.kernel[0] * window.kernel[1], 5));
            Precision::Bf16.round_in_place(&mut x);
            Precision::Bf16.round_in_place(&mut weight);
            let want = forward(&x, dims, &weight, c_out, &window, out);
            let padded = Padded::new(&x, dims, &window, out);
            let job = Job { padded: &padded, c_in, window: &window, out };
            let taps = weight.len() / c_out;
            let block_len = CO_BLOCK * out[0] * out[1];
            let mut got = vec![MaybeUninit::new(f32::NAN); want.len()];
            for (b, planes) in got.chunks_mut(block_len).enumerate() {
                let (sample, channels) = (b / (c_out / CO_BLOCK), b % (c_out / CO_BLOCK));
                let pairs = weight_pairs(&weight[channels * CO_BLOCK * taps..][..CO_BLOCK * taps]);
                // SAFETY: `Precision::Bf16.native()` said the CPU has them.
                #[allow(unsafe_code)]
                unsafe {
                    block(&job, sample, &pairs, planes)
                };
            }
            // SAFETY: every value was initialised (to NaN, then the tiles').
            #[allow(unsafe_code)]
            let got: Vec<f32> = got.iter().map(|v| unsafe { v.assume_init() }).collect();
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{dims:?} {window:?}: y[{k}] = {a}, f32 kernel {b}");
            }
        }
    }
}
