//! The weight gradient of a 2-D convolution with few output channels,
//! summed in registers straight from the padded input and the output
//! gradient, without columns. Stride-1 undilated kernels 1 or 3 wide go
//! to [`shifted_weight_grad2d`](super::shifted_weight_grad2d) first, which
//! is faster on them; what comes here are the strided and dilated ones.
//!
//! The column route ([`conv2d_grad`](super::conv2d_grad)) writes one value
//! per input channel, kernel tap and output position (16 MiB tiles, far
//! beyond the L2 cache) and reads it back in a GEMM whose other side has
//! only `C_out` rows. With the small Tiramisu's 8 output channels per
//! layer, building those columns took more of the step than the product
//! (`docs/benchmarks.md`, segmentation). Here one task sums, for
//! [`CO_BLOCK`] output channels and one input channel, every kernel tap:
//! along each output row, a vector of output gradient of each channel and
//! the input row at each of the taps' shifts (`kw` loads, reused across
//! the channels) feed `CO_BLOCK × kw` accumulators.
//!
//! Summation order: a product of output position (oh, ow) goes to lane
//! `ow mod 16` of its (channel, tap) sum, taken in order of (oh, ow) within
//! a sample; each sample's sums are added to the total, and the 16 lanes
//! are added in a fixed tree at the end. Every [`KernelPath`] runs that
//! order with fused multiply-adds (they differ only in how many channels
//! and taps share registers), so every path gives the same bits
//! (`tests/kernel_paths.rs`).
//!
//! dW[co, ci, i, j] = Σ_n Σ_(oh, ow) g[n, co, oh, ow] ·
//! x[n, ci, oh·s₀ − p₀ + i·d₀, ow·s₁ − p₁ + j·d₁] (zero outside x).

use std::borrow::Cow;

use rayon::prelude::*;

use super::columns::Window;
use super::cpu::{self, KernelPath};
use super::direct_conv2d::{CO_BLOCK, Padded, pad_rows};
use super::lanes::load;

/// Lanes of every partial sum, whatever the vector width (so that every
/// path sums in the same order): one AVX-512 register.
const LANES: usize = 16;

/// Whether the direct sums take the weight gradient of a convolution with
/// `c_out` output channels, rows of `out_w` outputs and kernels `kw` wide:
/// channels in whole blocks and few enough (at most 32) that the columns'
/// GEMM would have too few rows to pay for building them, rows of at least
/// 3 vectors, and at least 3 taps along a row to share each loaded
/// gradient vector (a 1 × 1 kernel's columns are the input itself). On the
/// inverse FC-DenseNet's 32-wide maps the columns' GEMM was faster (their
/// columns stay in cache); on the segmentation networks' 52- to 208-wide
/// ones the direct sums (`docs/benchmarks.md`).
pub(crate) fn applies(c_out: usize, out_w: usize, kw: usize) -> bool {
    c_out > 0 && c_out <= 32 && c_out.is_multiple_of(CO_BLOCK) && out_w >= 3 * LANES && kw >= 3
}

/// dW [C_out, C_in, kh, kw] for x [N, C_in, H, W] and the output gradient
/// g [N, C_out, out_h, out_w], `C_out` a multiple of [`CO_BLOCK`] (see
/// [`applies`]).
pub(crate) fn weight_grad(
    x: &[f32],
    dims: [usize; 4],
    out_grad: &[f32],
    c_out: usize,
    window: &Window,
    out: [usize; 2],
) -> Vec<f32> {
    weight_grad_from(None, x, dims, out_grad, c_out, window, out)
}

/// How far [`weight_grad`] pads the input of `out` outputs: rows of whole
/// vectors of outputs. A trained layer's direct forward pass pads its
/// input as far and hands the [`Padded`] over ([`weight_grad_from`]).
pub(crate) fn padded_extent([out_h, out_w]: [usize; 2]) -> [usize; 2] {
    [out_h, out_w.next_multiple_of(LANES)]
}

/// [`weight_grad`] reading the input padded by the forward pass (`padded`)
/// where it was padded as this needs ([`padded_extent`]), padding it
/// again otherwise.
pub(crate) fn weight_grad_from(
    padded: Option<&Padded>,
    x: &[f32],
    dims: [usize; 4],
    out_grad: &[f32],
    c_out: usize,
    window: &Window,
    out: [usize; 2],
) -> Vec<f32> {
    let [batch, c_in, ..] = dims;
    let [kh, kw] = window.kernel;
    let taps = kh * kw;
    let mut grad = vec![0.0f32; c_out * c_in * taps];
    if out[0] == 0 || out[1] == 0 || batch == 0 {
        return grad;
    }
    // Rows of whole vectors: the output gradient's rows extended with
    // zeros to a multiple of 16 (the input padded as far as those outputs
    // reach), so that no row ends in a short vector. The added products
    // are zero times a finite input value.
    let [out_h, out_w] = out;
    let extent = padded_extent(out);
    let row = extent[1];
    let built;
    let padded = match padded.filter(|p| p.serves(dims, window, extent)) {
        Some(padded) => padded,
        None => {
            built = Padded::new(x, dims, window, extent);
            &built
        }
    };
    let grads = if row == out_w {
        Cow::Borrowed(out_grad)
    } else {
        Cow::Owned(pad_rows(out_grad, [out_h, out_w], [0, 0], [out_h, row], batch * c_out * out_h * row))
    };
    let job = Job { padded, out_grad: &grads, batch, c_in, c_out, window, out: [out_h, row] };
    let tasks: Vec<Vec<f32>> =
        (0..c_out / CO_BLOCK * c_in).into_par_iter().map(|t| task_wide(&job, t / c_in * CO_BLOCK, t % c_in)).collect();
    for (t, sums) in tasks.iter().enumerate() {
        let (co, ci) = (t / c_in * CO_BLOCK, t % c_in);
        for (c, channel) in sums.chunks(taps).enumerate() {
            grad[((co + c) * c_in + ci) * taps..][..taps].copy_from_slice(channel);
        }
    }
    grad
}

/// What every task of one gradient shares.
struct Job<'a> {
    padded: &'a Padded,
    out_grad: &'a [f32],
    batch: usize,
    c_in: usize,
    c_out: usize,
    window: &'a Window,
    out: [usize; 2],
}

/// [`task`] built for the chosen [`KernelPath`]: 8 channels × 3 taps of
/// 16 lanes fill 24 of AVX-512's 32 registers; AVX2's 16 registers of 8
/// lanes hold 2 × 2 such sums.
fn task_wide(job: &Job<'_>, co: usize, ci: usize) -> Vec<f32> {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(job: &Job<'_>, co: usize, ci: usize) -> Vec<f32> {
            task::<2, 2>(job, co, ci)
        }
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn avx512(job: &Job<'_>, co: usize, ci: usize) -> Vec<f32> {
            task::<8, 3>(job, co, ci)
        }
        match cpu::path() {
            // SAFETY: `cpu::path` only chooses a path the CPU supports.
            #[allow(unsafe_code)]
            KernelPath::Avx512 => return unsafe { avx512(job, co, ci) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            KernelPath::Avx2 => return unsafe { avx2(job, co, ci) },
            KernelPath::Portable => {}
        }
    }
    task::<1, 1>(job, co, ci)
}

/// The sums of output channels `co..co + CO_BLOCK` with input channel
/// `ci`, [CO_BLOCK × kh × kw], `CB` channels and up to `JB` taps of a
/// kernel row at a time, each group's sums held in registers over a whole
/// plane of a sample (on narrow planes, loading and storing them for each
/// row cost as much as the row's products).
#[inline(always)]
fn task<const CB: usize, const JB: usize>(job: &Job<'_>, co: usize, ci: usize) -> Vec<f32> {
    let [kh, kw] = job.window.kernel;
    let taps = kh * kw;
    let mut total = vec![[0.0f32; LANES]; CO_BLOCK * taps];
    for sample in 0..job.batch {
        for i in 0..kh {
            for c0 in (0..CO_BLOCK).step_by(CB) {
                let mut j0 = 0;
                while j0 < kw {
                    let at = Group { sample, ci, co: co + c0, i, j0 };
                    let sums = Sums { all: &mut total, first: c0 * taps + i * kw + j0, channel_stride: taps };
                    j0 += match (kw - j0).min(JB) {
                        3 => plane::<CB, 3>(job, &at, sums),
                        2 => plane::<CB, 2>(job, &at, sums),
                        _ => plane::<CB, 1>(job, &at, sums),
                    };
                }
            }
        }
    }
    total.iter().map(add_lanes).collect()
}

/// Which sums a [`plane`] call adds to: sample `sample`, input channel
/// `ci`, output channels from `co`, kernel row `i`, taps from `j0`.
struct Group {
    sample: usize,
    ci: usize,
    co: usize,
    i: usize,
    j0: usize,
}

/// Where a [`plane`]'s `CB × J` sums live among a task's: sum (c, j) at
/// `first + c · channel_stride + j`.
struct Sums<'a> {
    all: &'a mut [[f32; LANES]],
    first: usize,
    channel_stride: usize,
}

/// Adds one sample's products to `CB` channels × `J` taps of sums:
/// `g[c][oh][ow] · x[r(oh)][ow + j]` for every output (oh, ow), summed
/// from zero in registers over the plane (rows of whole vectors), then
/// added to the running totals: a sample's sum, then the sum over
/// samples. Returns `J`, the taps done.
#[inline(always)]
fn plane<const CB: usize, const J: usize>(job: &Job<'_>, at: &Group, sums: Sums<'_>) -> usize {
    let [out_h, row] = job.out;
    let [s0, _] = job.window.stride;
    let [d0, d1] = job.window.dilation;
    let plane = at.sample * job.c_in + at.ci;
    let mut acc = [[[0.0f32; LANES]; J]; CB];
    for oh in 0..out_h {
        let r = oh * s0 + at.i * d0;
        let grads: [&[f32]; CB] =
            std::array::from_fn(|c| &job.out_grad[((at.sample * job.c_out + at.co + c) * out_h + oh) * row..][..row]);
        let inputs: [&[f32]; J] = std::array::from_fn(|j| &job.padded.from(plane, r, (at.j0 + j) * d1)[..row]);
        for ow in (0..row).step_by(LANES) {
            let xs: [[f32; LANES]; J] = std::array::from_fn(|j| load(&inputs[j][ow..]));
            for (c, a) in acc.iter_mut().enumerate() {
                let g: [f32; LANES] = load(&grads[c][ow..]);
                fma_lanes(a, &g, &xs);
            }
        }
    }
    for (c, a) in acc.iter().enumerate() {
        for (j, lanes) in a.iter().enumerate() {
            let total = &mut sums.all[sums.first + c * sums.channel_stride + j];
            for (t, v) in total.iter_mut().zip(lanes) {
                *t += v;
            }
        }
    }
    J
}

/// a[j] += g · xs[j], lane by lane, fused.
#[inline(always)]
fn fma_lanes<const J: usize>(a: &mut [[f32; LANES]; J], g: &[f32; LANES], xs: &[[f32; LANES]; J]) {
    for (lanes, x) in a.iter_mut().zip(xs) {
        for l in 0..LANES {
            lanes[l] = g[l].mul_add(x[l], lanes[l]);
        }
    }
}

/// The lanes' sum, halves added pairwise: the same order on every path.
fn add_lanes(lanes: &[f32; LANES]) -> f32 {
    let mut v = *lanes;
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            v[l] += v[l + half];
        }
        half /= 2;
    }
    v[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::columns::{wave, weight_grad_by_definition};

    fn cases() -> Vec<([usize; 4], usize, Window)> {
        // Output rows of whole vectors, with a short tail, and kernels of 3,
        // 5 and 7 taps a row (blocks of 3 then 2, or 3, 3, 1).
        vec![
            ([2, 3, 5, 64], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }),
            ([1, 2, 4, 61], 16, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }),
            ([1, 2, 9, 101], 8, Window { kernel: [7, 7], stride: [2, 2], padding: [3, 3], dilation: [1, 1] }),
            ([2, 2, 6, 53], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [2, 2], dilation: [2, 2] }),
            ([1, 3, 7, 150], 24, Window { kernel: [5, 5], stride: [2, 3], padding: [0, 2], dilation: [1, 2] }),
        ]
    }

    #[test]
    fn direct_weight_gradient_equals_the_definition_for_strides_dilations_padding_and_row_tails() {
        for (dims, c_out, window) in cases() {
            let [n, c_in, h, w] = dims;
            let out = [window.output_size(0, h), window.output_size(1, w)];
            assert!(applies(c_out, out[1], window.kernel[1]), "{dims:?} {window:?}");
            let (x, g) = (wave(n * c_in * h * w, 7), wave(n * c_out * out[0] * out[1], 5));
            let got = weight_grad(&x, dims, &g, c_out, &window, out);
            let want = weight_grad_by_definition(&x, &g, dims, [c_out, out[0], out[1]], &window);
            assert_eq!(got.len(), want.len());
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*a) - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{dims:?} {window:?}: dW[{k}] = {a}, want {b}"
                );
            }
        }
    }

    #[test]
    fn the_direct_gradient_takes_whole_blocks_of_at_most_32_channels_rows_of_48_and_3_taps() {
        assert!(applies(8, 48, 3) && applies(32, 208, 7));
        assert!(!applies(12, 208, 3) && !applies(64, 208, 3) && !applies(8, 47, 3) && !applies(8, 208, 1));
    }
}
