//! The weight gradient of a 2-D convolution of stride 1 or 2 with the
//! output channels along the vector lanes: each output position's
//! gradient, 16 channels in one register, multiplies an input value
//! broadcast to every lane, for several input channels and every tap at
//! once. No columns.
//!
//! Without dilation, output (oh, ow) meets padded input (s·oh + i, s·ow +
//! j) at tap (i, j): the input values a position needs for a kernel row
//! lie in one padded row, a stride apart, and the next position's are
//! `s` further on (an address the broadcast's memory operand scales by
//! itself, so the column stride is a constant of the compiled loop, not a
//! regrouped copy of the input). The gradient, transposed
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
//! the samples' sums are added in sample order within groups of
//! [`SAMPLES_PER_TASK`], and the groups' totals in group order. That order
//! does not depend on the blocking, the vector width or the number of
//! threads, so every [`KernelPath`] gives the same bits
//! (`tests/kernel_paths.rs`). A task sums a group of samples rather than
//! one: with a task per sample, adding up the tasks' sums (one thread,
//! scattered into the gradient's layout) took longer than the sums
//! themselves on CosmoGAN's 32 × 32 and 16 × 16 maps of 48 samples.
//!
//! dW[co, ci, i, j] = Σ_n Σ_(oh, ow) g[n, co, oh, ow] ·
//! x[n, ci, s·oh − p₀ + i, s·ow − p₁ + j] (zero outside x).

use rayon::prelude::*;

use super::columns::Window;
use super::cpu::{self, KernelPath};
use super::direct_conv2d::{Padded, pad_rows};

/// Output channels a task sums together: one AVX-512 register of lanes
/// (two AVX2 registers; a last block of fewer channels is padded with
/// zeros).
const LANES: usize = 16;

/// Whether these sums take the weight gradient of a convolution with this
/// window and output: stride 1 or 2 on both axes and no dilation (so that
/// a kernel row's inputs for a position lie a fixed step apart), kernels
/// 1, 3 or 5 wide (the register blocks below), a plane of at least
/// [`MIN_PLANE`] outputs (CosmoGAN's 4 × 4 end keeps the columns' one
/// product over every sample), and at most [`MAX_CHANNELS`] output
/// channels, filling at least half the lanes.
pub(crate) fn applies(c_out: usize, window: &Window, [out_h, out_w]: [usize; 2]) -> bool {
    let kw = window.kernel[1];
    let lanes_used = c_out % LANES;
    c_out <= MAX_CHANNELS
        && (window.stride == [1, 1] || window.stride == [2, 2])
        && window.dilation == [1, 1]
        && matches!(kw, 1 | 3 | 5)
        && out_h * out_w >= MIN_PLANE
        && (lanes_used == 0 || lanes_used >= LANES / 2)
}

/// Output positions per sample below which the columns' one product over
/// every sample is the better shape.
const MIN_PLANE: usize = 64;

/// Samples one task sums, in order: few enough that small batches still
/// make a task per thread, enough to keep the tasks' sums few.
const SAMPLES_PER_TASK: usize = 4;

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
    /// A padded plane of zeros standing in for input channels past C_in
    /// in a last block.
    zeros: &'a [f32],
    dims: [usize; 2],
    kernel: [usize; 2],
    /// Padded rows between consecutive output rows (the column stride is
    /// the tasks' `S`).
    row_stride: usize,
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

/// Whether [`weight_grad`] reads the padded input the direct forward pass
/// of `window` builds: at stride 1 only, where that pass pads plain rows
/// (at larger strides it regroups each row's columns, and these sums read
/// plain rows).
pub(crate) fn reads_forward_padding(window: &Window) -> bool {
    window.stride == [1, 1]
}

/// dW [C_out, C_in, kh, kw] of a convolution for x [N, C_in, H,
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
    // Every row and column a tap reaches from an output (s·(out − 1) +
    // k), and at least the input, placed at (p₀, p₁).
    let dims = [n, c_in, h, w];
    let ([s0, s1], [p0, p1]) = (window.stride, window.padding);
    let built;
    let (input, padded) = match kept.filter(|p| p.serves(dims, window, padded_extent(out))).and_then(Padded::planes) {
        Some(planes) => planes,
        None => {
            let padded = [(s0 * (out_h - 1) + kh).max(h + p0), (s1 * (out_w - 1) + kw).max(w + p1)];
            built = pad_rows(x, [h, w], window.padding, padded, n * c_in * padded[0] * padded[1]);
            (&built[..], padded)
        }
    };
    let co_blocks = c_out.div_ceil(LANES);
    let by_position = channels_last(out_grad, [n, c_out], out_h * out_w, co_blocks);
    let zeros = vec![0.0f32; padded[0] * padded[1]];
    let job = Job {
        input,
        grad: &by_position,
        zeros: &zeros,
        dims: [n, c_in],
        kernel: [kh, kw],
        row_stride: s0,
        padded,
        out,
        co_blocks,
    };
    let block = ci_block(kh, kw);
    let ci_blocks = c_in.div_ceil(block);
    // One task per (group of samples, channel block, input-channel
    // block): its sums [block][taps][LANES], added over the groups in
    // order below.
    let groups = n.div_ceil(SAMPLES_PER_TASK);
    let per_group = co_blocks * ci_blocks;
    let sums: Vec<Vec<[f32; LANES]>> = (0..groups * per_group)
        .into_par_iter()
        .map(|t| task_wide(&job, s1, [t / per_group, t / ci_blocks % co_blocks, t % ci_blocks * block]))
        .collect();
    for (t, block_sums) in sums.iter().enumerate() {
        let (cb, first_ci) = (t % per_group / ci_blocks, t % ci_blocks * block);
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
        (KernelPath::Avx512, 5, 5) => 1,
        (KernelPath::Avx512, _, 3) => 9,
        (KernelPath::Avx512, _, 5) => 5,
        (KernelPath::Avx512, _, _) => 8,
        (KernelPath::Avx2, _, 3) => 2,
        (KernelPath::Avx2, _, 5) => 1,
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

/// [`task`] built for the chosen [`KernelPath`] and column stride `s`
/// (1 or 2): on AVX-512, 3 input channels × 3 × 3 taps (or 1 × 5 × 5,
/// 9 × 1 × 3, 5 × 1 × 5, 8 × 1 × 1) of 16 lanes, at most 27 registers of
/// sums and one of gradient; AVX2's 16 registers of 8 lanes hold 2 × 3
/// (or 1 × 5, 6 × 1) sums of two registers each.
fn task_wide(job: &Job<'_>, s: usize, at: [usize; 3]) -> Vec<[f32; LANES]> {
    let [kh, kw] = job.kernel;
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2<const S: usize>(job: &Job<'_>, at: [usize; 3], kw: usize) -> Vec<[f32; LANES]> {
            match kw {
                3 => task::<2, 1, 3, S>(job, at),
                5 => task::<1, 1, 5, S>(job, at),
                _ => task::<6, 1, 1, S>(job, at),
            }
        }
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn avx512<const S: usize>(job: &Job<'_>, at: [usize; 3], kh: usize, kw: usize) -> Vec<[f32; LANES]> {
            match (kh, kw) {
                (3, 3) => task::<3, 3, 3, S>(job, at),
                (5, 5) => task::<1, 5, 5, S>(job, at),
                (_, 3) => task::<9, 1, 3, S>(job, at),
                (_, 5) => task::<5, 1, 5, S>(job, at),
                _ => task::<8, 1, 1, S>(job, at),
            }
        }
        match (cpu::path(), s) {
            // SAFETY: `cpu::path` only chooses a path the CPU supports.
            #[allow(unsafe_code)]
            (KernelPath::Avx512, 1) => return unsafe { avx512::<1>(job, at, kh, kw) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            (KernelPath::Avx512, _) => return unsafe { avx512::<2>(job, at, kh, kw) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            (KernelPath::Avx2, 1) => return unsafe { avx2::<1>(job, at, kw) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            (KernelPath::Avx2, _) => return unsafe { avx2::<2>(job, at, kw) },
            (KernelPath::Portable, _) => {}
        }
    }
    match (kw, s) {
        (3, 1) => task::<1, 1, 3, 1>(job, at),
        (3, _) => task::<1, 1, 3, 2>(job, at),
        (5, 1) => task::<1, 1, 5, 1>(job, at),
        (5, _) => task::<1, 1, 5, 2>(job, at),
        (_, 1) => task::<1, 1, 1, 1>(job, at),
        _ => task::<1, 1, 1, 2>(job, at),
    }
}

/// The sums of LANES output channels (block `co_block`) with input
/// channels `first_ci..first_ci + CI`, every tap, over the samples of
/// group `group` in order: [CI][kh · KW][LANES], `KH` kernel rows at a
/// time held in registers over each sample's plane; `S` padded columns
/// between consecutive outputs.
#[inline(always)]
fn task<const CI: usize, const KH: usize, const KW: usize, const S: usize>(
    job: &Job<'_>,
    [group, co_block, first_ci]: [usize; 3],
) -> Vec<[f32; LANES]> {
    let [n, c_in] = job.dims;
    let [kh, _] = job.kernel;
    let [hp, wp] = job.padded;
    let [out_h, out_w] = job.out;
    let positions = out_h * out_w;
    let taps = kh * KW;
    let mut sums = vec![[0.0f32; LANES]; CI * taps];
    for sample in group * SAMPLES_PER_TASK..n.min((group + 1) * SAMPLES_PER_TASK) {
        let grad = &job.grad[(sample * job.co_blocks + co_block) * positions * LANES..][..positions * LANES];
        let (grad, _) = grad.as_chunks::<LANES>();
        // Input channels past C_in (in a last, partial block) read zeros.
        let planes: [&[f32]; CI] = std::array::from_fn(|c| {
            let ci = first_ci + c;
            if ci < c_in { &job.input[(sample * c_in + ci) * hp * wp..][..hp * wp] } else { job.zeros }
        });
        for i0 in (0..kh).step_by(KH) {
            let mut acc = [[[[0.0f32; LANES]; KW]; KH]; CI];
            // Each (channel, kernel row)'s plane from the padded row the
            // first output row reads.
            let from: [[&[f32]; KH]; CI] =
                std::array::from_fn(|c| std::array::from_fn(|r| &planes[c][(i0 + r) * wp..]));
            accumulate_plane::<CI, KH, KW, S>(&mut acc, grad, &from, [out_h, out_w], job.row_stride * wp);
            for (c, acc_c) in acc.iter().enumerate() {
                for (r, acc_r) in acc_c.iter().enumerate() {
                    for (j, lanes) in acc_r.iter().enumerate() {
                        for (sum, value) in sums[c * taps + (i0 + r) * KW + j].iter_mut().zip(lanes) {
                            *sum += value;
                        }
                    }
                }
            }
        }
    }
    sums
}

/// Sums of (channel c, kernel row r, tap j) over one sample's plane:
/// `acc[c][r][j] += grad[oh·out_w + ow] · from[c][r][oh·row_step + S·ow +
/// j]` for every output (oh, ow), one fused multiply-add per lane, in
/// order of (oh, ow). Each slice of `from` reaches at least as far as the
/// last output's taps.
#[inline(always)]
fn accumulate_plane<const CI: usize, const KH: usize, const KW: usize, const S: usize>(
    acc: &mut [[[[f32; LANES]; KW]; KH]; CI],
    grad: &[[f32; LANES]],
    from: &[[&[f32]; KH]; CI],
    [out_h, out_w]: [usize; 2],
    row_step: usize,
) {
    if out_h == 0 || out_w == 0 {
        return;
    }
    assert!(grad.len() >= out_h * out_w, "fewer gradients than outputs");
    let reach = (out_h - 1) * row_step + S * (out_w - 1) + KW;
    for plane in from.iter().flatten() {
        assert!(plane.len() >= reach, "a padded plane shorter than its outputs' reach");
    }
    #[cfg(target_arch = "x86_64")]
    match cpu::path() {
        // SAFETY: `cpu::path` only chooses a path the CPU supports; every
        // plane holds the values read and `grad` the outputs' gradients
        // (asserted above).
        #[allow(unsafe_code)]
        KernelPath::Avx512 => {
            return unsafe { vector::plane_avx512::<CI, KH, KW, S>(acc, grad, from, [out_h, out_w], row_step) };
        }
        // SAFETY: as above.
        #[allow(unsafe_code)]
        KernelPath::Avx2 => {
            return unsafe { vector::plane_avx2::<CI, KH, KW, S>(acc, grad, from, [out_h, out_w], row_step) };
        }
        KernelPath::Portable => {}
    }
    for oh in 0..out_h {
        for (ow, g) in grad[oh * out_w..][..out_w].iter().enumerate() {
            for (acc_c, from_c) in acc.iter_mut().zip(from) {
                for (acc_r, plane) in acc_c.iter_mut().zip(from_c) {
                    for (j, lanes) in acc_r.iter_mut().enumerate() {
                        let x = plane[oh * row_step + S * ow + j];
                        for l in 0..LANES {
                            lanes[l] = g[l].mul_add(x, lanes[l]);
                        }
                    }
                }
            }
        }
    }
}

// The sums held in vector registers by intrinsics: written with arrays of
// lanes, as the portable path is, LLVM kept the 27 × 16 sums in memory
// and multiplied one lane at a time. The loop runs over a whole plane so
// that the sums stay in registers from one output row to the next.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vector {
    use std::arch::x86_64::*;

    use super::LANES;

    /// [`accumulate_plane`](super::accumulate_plane) on AVX-512: one
    /// register per sum, the input value a broadcast.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F; `grad` holds `out_h · out_w` vectors
    /// and every slice of `from` at least `(out_h − 1)·row_step + S·(out_w
    /// − 1) + KW` values.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn plane_avx512<const CI: usize, const KH: usize, const KW: usize, const S: usize>(
        acc: &mut [[[[f32; LANES]; KW]; KH]; CI],
        grad: &[[f32; LANES]],
        from: &[[&[f32]; KH]; CI],
        [out_h, out_w]: [usize; 2],
        row_step: usize,
    ) {
        // SAFETY: the loads and stores of the sums are within `acc`'s
        // arrays of 16; the gradient reads stay below out_h · out_w and
        // the input reads at oh·row_step + S·ow + j below each slice's
        // reach (the caller's promise).
        unsafe {
            let mut v: [[[__m512; KW]; KH]; CI] = std::array::from_fn(|c| {
                std::array::from_fn(|r| std::array::from_fn(|j| _mm512_loadu_ps(acc[c][r][j].as_ptr())))
            });
            let mut g_at = grad.as_ptr().cast::<f32>();
            for oh in 0..out_h {
                let starts: [[*const f32; KH]; CI] =
                    std::array::from_fn(|c| std::array::from_fn(|r| from[c][r].as_ptr().add(oh * row_step)));
                for ow in 0..out_w {
                    let g = _mm512_loadu_ps(g_at);
                    g_at = g_at.add(LANES);
                    for (v_c, starts_c) in v.iter_mut().zip(&starts) {
                        for (v_r, start) in v_c.iter_mut().zip(starts_c) {
                            for (j, sum) in v_r.iter_mut().enumerate() {
                                *sum = _mm512_fmadd_ps(g, _mm512_set1_ps(*start.add(S * ow + j)), *sum);
                            }
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

    /// [`accumulate_plane`](super::accumulate_plane) on AVX2: two
    /// registers per sum.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `grad` and `from` as for
    /// [`plane_avx512`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn plane_avx2<const CI: usize, const KH: usize, const KW: usize, const S: usize>(
        acc: &mut [[[[f32; LANES]; KW]; KH]; CI],
        grad: &[[f32; LANES]],
        from: &[[&[f32]; KH]; CI],
        [out_h, out_w]: [usize; 2],
        row_step: usize,
    ) {
        // SAFETY: as in `plane_avx512`, halves of 8 lanes.
        unsafe {
            let halves = |lanes: *const f32| [_mm256_loadu_ps(lanes), _mm256_loadu_ps(lanes.add(8))];
            let mut v: [[[[__m256; 2]; KW]; KH]; CI] = std::array::from_fn(|c| {
                std::array::from_fn(|r| std::array::from_fn(|j| halves(acc[c][r][j].as_ptr())))
            });
            let mut g_at = grad.as_ptr().cast::<f32>();
            for oh in 0..out_h {
                let starts: [[*const f32; KH]; CI] =
                    std::array::from_fn(|c| std::array::from_fn(|r| from[c][r].as_ptr().add(oh * row_step)));
                for ow in 0..out_w {
                    let g = halves(g_at);
                    g_at = g_at.add(LANES);
                    for (v_c, starts_c) in v.iter_mut().zip(&starts) {
                        for (v_r, start) in v_c.iter_mut().zip(starts_c) {
                            for (j, sum) in v_r.iter_mut().enumerate() {
                                let x = _mm256_set1_ps(*start.add(S * ow + j));
                                for (half, g) in sum.iter_mut().zip(g) {
                                    *half = _mm256_fmadd_ps(g, x, *half);
                                }
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
        let five_strided = Window { kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] };
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
            // Stride 2: CosmoGAN's 5 × 5 discriminator layers (one input
            // channel; a partial block of five) and 3 × 3 with an odd
            // input side; 1 × 5 and 1 × 1 kernels.
            ([2, 1, 64, 64], 16, five_strided),
            ([2, 7, 16, 16], 32, five_strided),
            ([2, 4, 17, 19], 24, Window { stride: [2, 2], ..three }),
            ([2, 6, 16, 22], 16, Window { kernel: [1, 5], padding: [0, 2], ..five_strided }),
            ([2, 9, 16, 18], 16, Window { kernel: [1, 1], padding: [0, 0], ..five_strided }),
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
    fn the_lane_sums_take_strides_1_or_2_undilated_kernels_1_3_or_5_wide_and_up_to_64_half_filled_channel_blocks() {
        let three = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        assert!(applies(16, &three, [32, 32]) && applies(8, &three, [8, 8]) && applies(24, &three, [8, 8]));
        let strided = Window { stride: [2, 2], ..three };
        let five = Window { kernel: [5, 5], padding: [2, 2], ..three };
        assert!(applies(16, &strided, [16, 16]) && applies(16, &five, [32, 32]));
        let dilated = Window { padding: [2, 2], dilation: [2, 2], ..three };
        let seven = Window { kernel: [7, 7], padding: [3, 3], ..three };
        let uneven = Window { stride: [1, 2], ..three };
        let three_apart = Window { stride: [3, 3], ..three };
        for window in [dilated, seven, uneven, three_apart] {
            assert!(!applies(16, &window, [32, 32]), "{window:?}");
        }
        assert!(!applies(16, &three, [4, 4]) && !applies(4, &three, [32, 32]) && !applies(20, &three, [32, 32]));
        assert!(applies(64, &three, [224, 224]) && !applies(128, &three, [224, 224]));
    }
}
