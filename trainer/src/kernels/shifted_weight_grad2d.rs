//! The weight gradient of a stride-1 2-D convolution with the output
//! channels along the vector lanes: each output position's gradient, 16
//! channels in one register, multiplies an input value broadcast to every
//! lane, for several input channels and every tap at once. No columns.
//!
//! With stride 1 and no dilation, output (oh, ow) meets padded input
//! (oh + i, ow + j) at tap (i, j): the input values a position needs for
//! a kernel row are consecutive in a padded row. The gradient, transposed
//! once to [position][16 channels], is read one vector per position; a
//! block of `CI` input channels × `KH` kernel rows × `KW` taps keeps its
//! sums in registers (27 of AVX-512's 32 for a 3 × 3 kernel), each a fused
//! multiply-add with the input value as a broadcast memory operand. A
//! loaded gradient vector thus feeds 27 multiply-adds, where the row-wise
//! sums of [`direct_weight_grad2d`](super::direct_weight_grad2d) (lanes
//! along the positions) feed 3 per loaded input vector and add their lanes
//! at the end, and the columns' GEMM ([`conv2d_grad`](super::conv2d_grad))
//! writes kh·kw values per input value and reads them back.
//!
//! Summation order: each sum (co, ci, i, j) runs over one sample's
//! positions in order (oh, ow) in one lane, one fused multiply-add each;
//! the samples' sums are added in sample order. That order does not
//! depend on the blocking, the vector width or the number of threads, so
//! every [`KernelPath`] gives the same bits (`tests/kernel_paths.rs`).
//!
//! dW[co, ci, i, j] = Σ_n Σ_(oh, ow) g[n, co, oh, ow] ·
//! x[n, ci, oh − p₀ + i, ow − p₁ + j] (zero outside x).

use rayon::prelude::*;

use super::columns::Window;
use super::cpu::{self, KernelPath};
use super::direct_conv2d::{Padded, pad_rows};

/// Output channels a task sums together: one AVX-512 register of lanes
/// (two AVX2 registers; a last block of fewer channels is padded with
/// zeros).
const LANES: usize = 16;

/// Whether these sums take the weight gradient of a convolution with this
/// window and output: stride 1 and no dilation (so that a kernel row's
/// inputs for a position are consecutive), kernels 1 or 3 wide (the
/// register blocks below), a plane of at least [`MIN_PLANE`] outputs
/// (CosmoGAN's 4 × 4 end keeps the columns' one product over every
/// sample), and at most [`MAX_CHANNELS`] output channels, filling at
/// least half the lanes.
pub(crate) fn applies(c_out: usize, window: &Window, [out_h, out_w]: [usize; 2]) -> bool {
    let kw = window.kernel[1];
    let lanes_used = c_out % LANES;
    c_out <= MAX_CHANNELS
        && window.stride == [1, 1]
        && window.dilation == [1, 1]
        && (kw == 1 || kw == 3)
        && out_h * out_w >= MIN_PLANE
        && (lanes_used == 0 || lanes_used >= LANES / 2)
}

/// Output positions per sample below which the columns' one product over
/// every sample is the better shape.
const MIN_PLANE: usize = 64;

/// Output channels above which the columns' GEMM is the better shape: at
/// HEP-CNN `paper`'s 128 channels on 224 × 224 maps its product is large
/// and well shaped, and the lane sums made the step slower
/// (`docs/benchmarks.md`, HEP-CNN).
const MAX_CHANNELS: usize = 64;

/// What every task of one gradient reads.
struct Job<'a> {
    /// The input padded by the window's padding, [N, C_in] planes of
    /// [hp, wp].
    input: &'a [f32],
    /// The output gradient as [N, co block][position][LANES channels].
    grad: &'a [f32],
    /// Zeros standing in for input channels past C_in in a last block.
    zeros: &'a [f32],
    dims: [usize; 2],
    kernel: [usize; 2],
    padded: [usize; 2],
    out: [usize; 2],
    co_blocks: usize,
}

/// How far [`weight_grad`] pads the input of `out` outputs: as far as the
/// outputs reach, which is what the direct forward pass pads it to
/// ([`Padded`]); a trained layer's forward pass keeps it for this.
pub(crate) fn padded_extent(out: [usize; 2]) -> [usize; 2] {
    out
}

/// dW [C_out, C_in, kh, kw] of a stride-1 convolution for x [N, C_in, H,
/// W] and the output gradient [N, C_out, out_h, out_w] (see [`applies`]),
/// reading the input padded by the forward pass (`kept`) where it was
/// padded as this needs.
pub(crate) fn weight_grad(
    kept: Option<&Padded>,
    x: &[f32],
    [n, c_in, h, w]: [usize; 4],
    out_grad: &[f32],
    c_out: usize,
    window: &Window,
    out: [usize; 2],
) -> Vec<f32> {
    let [kh, kw] = window.kernel;
    let taps = kh * kw;
    let mut grad = vec![0.0f32; c_out * c_in * taps];
    let [out_h, out_w] = out;
    if n == 0 || c_in == 0 || c_out == 0 || out_h == 0 || out_w == 0 || h * w == 0 {
        return grad;
    }
    // Every row and column a tap reaches from an output (stride 1: out +
    // k − 1), the input placed at (p₀, p₁).
    let dims = [n, c_in, h, w];
    let built;
    let (input, padded) = match kept.filter(|p| p.serves(dims, window, padded_extent(out))).and_then(Padded::planes) {
        Some(planes) => planes,
        None => {
            let padded = [out_h + kh - 1, out_w + kw - 1];
            built = pad_rows(x, [h, w], window.padding, padded, n * c_in * padded[0] * padded[1]);
            (&built[..], padded)
        }
    };
    let co_blocks = c_out.div_ceil(LANES);
    let by_position = channels_last(out_grad, [n, c_out], out_h * out_w, co_blocks);
    let zeros = vec![0.0f32; padded[1]];
    let job =
        Job { input, grad: &by_position, zeros: &zeros, dims: [n, c_in], kernel: [kh, kw], padded, out, co_blocks };
    let block = ci_block(kh, kw);
    let ci_blocks = c_in.div_ceil(block);
    // One task per (sample, channel block, input-channel block): its sums
    // [block][taps][LANES], added over the samples in order below.
    let sums: Vec<Vec<[f32; LANES]>> = (0..n * co_blocks * ci_blocks)
        .into_par_iter()
        .map(|t| task_wide(&job, t / (co_blocks * ci_blocks), t / ci_blocks % co_blocks, t % ci_blocks * block))
        .collect();
    let per_sample = co_blocks * ci_blocks;
    for (t, block_sums) in sums.iter().enumerate() {
        let (cb, first_ci) = (t % per_sample / ci_blocks, t % ci_blocks * block);
        for (k, lanes) in block_sums.iter().enumerate() {
            let (ci, tap) = (first_ci + k / taps, k % taps);
            if ci >= c_in {
                continue;
            }
            for (l, value) in lanes.iter().enumerate().take(c_out.saturating_sub(cb * LANES)) {
                grad[((cb * LANES + l) * c_in + ci) * taps + tap] += value;
            }
        }
    }
    grad
}

/// Input channels a task of the chosen [`KernelPath`] sums at once for a
/// kernel of `kh` × `kw` (see [`task_wide`]).
fn ci_block(kh: usize, kw: usize) -> usize {
    match (cpu::path(), kh, kw) {
        (KernelPath::Avx512, 3, 3) => 3,
        (KernelPath::Avx512, _, 3) => 9,
        (KernelPath::Avx512, _, _) => 8,
        (KernelPath::Avx2, _, 3) => 2,
        (KernelPath::Avx2, _, _) => 6,
        (KernelPath::Portable, _, _) => 1,
    }
}

/// The output gradient [N, C_out, positions] as [N, co block][position]
/// [LANES channels], channels past C_out zero.
fn channels_last(g: &[f32], [n, c_out]: [usize; 2], positions: usize, co_blocks: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n * co_blocks * positions * LANES];
    out.par_chunks_mut(positions * LANES).enumerate().for_each(|(k, dst)| {
        let (s, cb) = (k / co_blocks, k % co_blocks);
        for l in 0..LANES.min(c_out - cb * LANES) {
            let plane = &g[(s * c_out + cb * LANES + l) * positions..][..positions];
            for (p, value) in plane.iter().enumerate() {
                dst[p * LANES + l] = *value;
            }
        }
    });
    out
}

/// [`task`] built for the chosen [`KernelPath`]: on AVX-512, 3 input
/// channels × 3 × 3 taps (or 9 × 1 × 3, 8 × 1 × 1) of 16 lanes, 27
/// registers of sums and one of gradient; AVX2's 16 registers of 8 lanes
/// hold 2 × 3 (or 6 × 1) sums of two registers each.
fn task_wide(job: &Job<'_>, sample: usize, co_block: usize, first_ci: usize) -> Vec<[f32; LANES]> {
    let [kh, kw] = job.kernel;
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(job: &Job<'_>, at: [usize; 3], kw: usize) -> Vec<[f32; LANES]> {
            match kw {
                3 => task::<2, 1, 3>(job, at),
                _ => task::<6, 1, 1>(job, at),
            }
        }
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn avx512(job: &Job<'_>, at: [usize; 3], kh: usize, kw: usize) -> Vec<[f32; LANES]> {
            match (kh, kw) {
                (3, 3) => task::<3, 3, 3>(job, at),
                (_, 3) => task::<9, 1, 3>(job, at),
                _ => task::<8, 1, 1>(job, at),
            }
        }
        let at = [sample, co_block, first_ci];
        match cpu::path() {
            // SAFETY: `cpu::path` only chooses a path the CPU supports.
            #[allow(unsafe_code)]
            KernelPath::Avx512 => return unsafe { avx512(job, at, kh, kw) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            KernelPath::Avx2 => return unsafe { avx2(job, at, kw) },
            KernelPath::Portable => {}
        }
    }
    match kw {
        3 => task::<1, 1, 3>(job, [sample, co_block, first_ci]),
        _ => task::<1, 1, 1>(job, [sample, co_block, first_ci]),
    }
}

/// One sample's sums of LANES output channels (block `co_block`) with
/// input channels `first_ci..first_ci + CI`, every tap: [CI][kh · KW]
/// [LANES], `KH` kernel rows at a time held in registers over the plane.
#[inline(always)]
fn task<const CI: usize, const KH: usize, const KW: usize>(
    job: &Job<'_>,
    [sample, co_block, first_ci]: [usize; 3],
) -> Vec<[f32; LANES]> {
    let [n_in, c_in] = [job.dims[0], job.dims[1]];
    let [kh, _] = job.kernel;
    let [hp, wp] = job.padded;
    let [out_h, out_w] = job.out;
    let positions = out_h * out_w;
    debug_assert!(sample < n_in);
    let taps = kh * KW;
    let mut sums = vec![[0.0f32; LANES]; CI * taps];
    let grad = &job.grad[(sample * job.co_blocks + co_block) * positions * LANES..][..positions * LANES];
    let (grad, _) = grad.as_chunks::<LANES>();
    // Input channels past C_in (in a last, partial block) read zeros.
    let planes: [Option<&[f32]>; CI] = std::array::from_fn(|c| {
        let ci = first_ci + c;
        (ci < c_in).then(|| &job.input[(sample * c_in + ci) * hp * wp..][..hp * wp])
    });
    for i0 in (0..kh).step_by(KH) {
        let mut acc = [[[[0.0f32; LANES]; KW]; KH]; CI];
        for oh in 0..out_h {
            let row_grad = &grad[oh * out_w..][..out_w];
            // The padded input row each (channel, kernel row) reads along
            // this output row: KW − 1 values past the row's last output.
            let rows: [[&[f32]; KH]; CI] = std::array::from_fn(|c| {
                std::array::from_fn(|r| match planes[c] {
                    Some(plane) => &plane[(oh + i0 + r) * wp..][..out_w + KW - 1],
                    None => &job.zeros[..out_w + KW - 1],
                })
            });
            accumulate_row::<CI, KH, KW>(&mut acc, row_grad, &rows);
        }
        for (c, acc_c) in acc.iter().enumerate() {
            for (r, acc_r) in acc_c.iter().enumerate() {
                for (j, lanes) in acc_r.iter().enumerate() {
                    sums[c * taps + (i0 + r) * KW + j] = *lanes;
                }
            }
        }
    }
    sums
}

/// Sums of (channel c, kernel row r, tap j) over one output row: `acc[c]
/// [r][j] += grad[ow] · rows[c][r][ow + j]` for every output `ow`, one
/// fused multiply-add per lane, in order of `ow`. Each row of `rows`
/// holds `grad.len() + KW − 1` values.
#[inline(always)]
fn accumulate_row<const CI: usize, const KH: usize, const KW: usize>(
    acc: &mut [[[[f32; LANES]; KW]; KH]; CI],
    grad: &[[f32; LANES]],
    rows: &[[&[f32]; KH]; CI],
) {
    for row in rows.iter().flatten() {
        assert!(row.len() >= grad.len() + KW - 1, "a padded row shorter than its outputs' reach");
    }
    #[cfg(target_arch = "x86_64")]
    match cpu::path() {
        // SAFETY: `cpu::path` only chooses a path the CPU supports; every
        // row holds the values read (asserted above).
        #[allow(unsafe_code)]
        KernelPath::Avx512 => return unsafe { vector::row_avx512(acc, grad, rows) },
        // SAFETY: as above.
        #[allow(unsafe_code)]
        KernelPath::Avx2 => return unsafe { vector::row_avx2(acc, grad, rows) },
        KernelPath::Portable => {}
    }
    for (ow, g) in grad.iter().enumerate() {
        for (acc_c, rows_c) in acc.iter_mut().zip(rows) {
            for (acc_r, row) in acc_c.iter_mut().zip(rows_c) {
                for (j, lanes) in acc_r.iter_mut().enumerate() {
                    let x = row[ow + j];
                    for l in 0..LANES {
                        lanes[l] = g[l].mul_add(x, lanes[l]);
                    }
                }
            }
        }
    }
}

// The sums held in vector registers by intrinsics: written with arrays of
// lanes, as the portable path is, LLVM kept the 27 × 16 sums in memory
// and multiplied one lane at a time.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vector {
    use std::arch::x86_64::*;

    use super::LANES;

    /// [`accumulate_row`](super::accumulate_row) on AVX-512: one register
    /// per sum, the input value a broadcast.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F; every row holds `grad.len() + KW − 1`
    /// values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn row_avx512<const CI: usize, const KH: usize, const KW: usize>(
        acc: &mut [[[[f32; LANES]; KW]; KH]; CI],
        grad: &[[f32; LANES]],
        rows: &[[&[f32]; KH]; CI],
    ) {
        let starts: [[*const f32; KH]; CI] = std::array::from_fn(|c| std::array::from_fn(|r| rows[c][r].as_ptr()));
        // SAFETY: the loads and stores of the sums are within `acc`'s
        // arrays of 16; the input reads at `ow + j` < `grad.len() + KW − 1`
        // lie within each row (the caller's promise).
        unsafe {
            let mut v: [[[__m512; KW]; KH]; CI] = std::array::from_fn(|c| {
                std::array::from_fn(|r| std::array::from_fn(|j| _mm512_loadu_ps(acc[c][r][j].as_ptr())))
            });
            for (ow, g) in grad.iter().enumerate() {
                let g = _mm512_loadu_ps(g.as_ptr());
                for (v_c, starts_c) in v.iter_mut().zip(&starts) {
                    for (v_r, start) in v_c.iter_mut().zip(starts_c) {
                        for (j, sum) in v_r.iter_mut().enumerate() {
                            *sum = _mm512_fmadd_ps(g, _mm512_set1_ps(*start.add(ow + j)), *sum);
                        }
                    }
                }
            }
            for (acc_c, v_c) in acc.iter_mut().zip(&v) {
                for (acc_r, v_r) in acc_c.iter_mut().zip(v_c) {
                    for (lanes, sum) in acc_r.iter_mut().zip(v_r) {
                        _mm512_storeu_ps(lanes.as_mut_ptr(), *sum);
                    }
                }
            }
        }
    }

    /// [`accumulate_row`](super::accumulate_row) on AVX2: two registers
    /// per sum.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; every row holds `grad.len() + KW −
    /// 1` values.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn row_avx2<const CI: usize, const KH: usize, const KW: usize>(
        acc: &mut [[[[f32; LANES]; KW]; KH]; CI],
        grad: &[[f32; LANES]],
        rows: &[[&[f32]; KH]; CI],
    ) {
        let starts: [[*const f32; KH]; CI] = std::array::from_fn(|c| std::array::from_fn(|r| rows[c][r].as_ptr()));
        // SAFETY: as in `row_avx512`, halves of 8 lanes.
        unsafe {
            let halves =
                |lanes: &[f32; LANES]| [_mm256_loadu_ps(lanes.as_ptr()), _mm256_loadu_ps(lanes.as_ptr().add(8))];
            let mut v: [[[[__m256; 2]; KW]; KH]; CI] =
                std::array::from_fn(|c| std::array::from_fn(|r| std::array::from_fn(|j| halves(&acc[c][r][j]))));
            for (ow, g) in grad.iter().enumerate() {
                let g = halves(g);
                for (v_c, starts_c) in v.iter_mut().zip(&starts) {
                    for (v_r, start) in v_c.iter_mut().zip(starts_c) {
                        for (j, sum) in v_r.iter_mut().enumerate() {
                            let x = _mm256_set1_ps(*start.add(ow + j));
                            for (half, g) in sum.iter_mut().zip(g) {
                                *half = _mm256_fmadd_ps(g, x, *half);
                            }
                        }
                    }
                }
            }
            for (acc_c, v_c) in acc.iter_mut().zip(&v) {
                for (acc_r, v_r) in acc_c.iter_mut().zip(v_c) {
                    for (lanes, sum) in acc_r.iter_mut().zip(v_r) {
                        _mm256_storeu_ps(lanes.as_mut_ptr(), sum[0]);
                        _mm256_storeu_ps(lanes.as_mut_ptr().add(8), sum[1]);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::columns::{wave, weight_grad_by_definition};

    #[test]
    fn lane_sums_equal_the_definition_for_paddings_kernels_and_partial_blocks() {
        let three = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        let one = Window { kernel: [1, 1], stride: [1, 1], padding: [0, 0], dilation: [1, 1] };
        let cases = [
            // (x dims, C_out, window): a last block of 8 channels and of
            // fewer input channels than a block; no padding; 1 × 1 and
            // 1 × 3 kernels; the inverse FC-DenseNet's 32 × 32 layers.
            ([2, 4, 7, 10], 8, three),
            ([2, 11, 9, 9], 24, three),
            ([1, 3, 10, 12], 16, Window { padding: [0, 0], ..three }),
            ([3, 10, 8, 8], 40, one),
            ([2, 5, 9, 11], 16, Window { kernel: [1, 3], padding: [0, 1], ..three }),
            ([4, 16, 32, 32], 16, three),
        ];
        for (dims, c_out, window) in cases {
            let [n, c_in, h, w] = dims;
            let out = [window.output_size(0, h), window.output_size(1, w)];
            assert!(applies(c_out, &window, out), "{dims:?} {window:?}");
            let (x, g) = (wave(n * c_in * h * w, 7), wave(n * c_out * out[0] * out[1], 5));
            let want = weight_grad_by_definition(&x, &g, dims, [c_out, out[0], out[1]], &window);
            let got = weight_grad(None, &x, dims, &g, c_out, &window, out);
            assert_eq!(got.len(), want.len());
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*a) - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{window:?} {dims:?}: dW[{k}] = {a}, want {b}"
                );
            }
        }
    }

    #[test]
    fn the_lane_sums_take_stride_one_undilated_kernels_1_or_3_wide_and_up_to_64_half_filled_channel_blocks() {
        let three = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        assert!(applies(16, &three, [32, 32]) && applies(8, &three, [8, 8]) && applies(24, &three, [8, 8]));
        let strided = Window { stride: [2, 2], ..three };
        let dilated = Window { padding: [2, 2], dilation: [2, 2], ..three };
        let five = Window { kernel: [5, 5], padding: [2, 2], ..three };
        assert!(!applies(16, &strided, [16, 16]) && !applies(16, &dilated, [32, 32]) && !applies(16, &five, [32, 32]));
        assert!(!applies(16, &three, [4, 4]) && !applies(4, &three, [32, 32]) && !applies(20, &three, [32, 32]));
        assert!(applies(64, &three, [224, 224]) && !applies(128, &three, [224, 224]));
    }
}
