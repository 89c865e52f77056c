//! Direct 2-D forward convolution for output channels in blocks of
//! [`CO_BLOCK`]: every output value is summed in registers straight from
//! the (padded) input, without columns.
//!
//! The column route ([`conv2d_forward`](super::conv2d_forward)) writes and
//! reads back one value per input channel, kernel tap and output position.
//! At the small segmentation networks' widths (8 to 32 output channels,
//! 3 × 3 to 7 × 7 windows at 112 × 208) the product does only that few
//! multiply-adds per column value, so building the columns costs as much
//! as multiplying them. Here a tile of [`CO_BLOCK`] output channels × up to
//! 2 vectors of one output row stays in registers while the sum runs over
//! (ci, i, j); each input vector loaded feeds [`CO_BLOCK`] fused
//! multiply-adds, each weight is one broadcast.
//!
//! Strides and dilations: the padded input's rows are regrouped by column
//! remainder modulo the width stride (as [`columns`](super::columns)
//! does), so that the inputs a tap meets along an output row are
//! consecutive whatever the stride.
//!
//! Summation order is fixed ((ci, i, j) in order, one fused multiply-add
//! each), whatever the vector width, so every [`KernelPath`] gives the same
//! bits. Under `--precision bf16` on a CPU that computes it, rows of at
//! least 16 outputs take the taps two at a time in bf16 products instead
//! ([`direct_conv2d_bf16`](super::direct_conv2d_bf16)).
//!
//! y[n, co, oh, ow] = Σ_(ci, i, j) w[co, ci, i, j] · x[n, ci, oh·s₀ − p₀ +
//! i·d₀, ow·s₁ − p₁ + j·d₁] (zero outside x).

use rayon::prelude::*;

use super::columns::{Window, fill, regroup_row};
use super::cpu::{self, KernelPath};
#[cfg(target_arch = "x86_64")]
use super::direct_conv2d_bf16;
use super::lanes::load;
use super::uninit;

/// Output channels summed together: the accumulators of [`CO_BLOCK`] ×
/// 2 vectors fill half of AVX-512's 32 registers.
pub(crate) const CO_BLOCK: usize = 8;

/// The input of one convolution, padded with zeros and regrouped: row
/// (n, ci, r) of the padded input holds `stride` segments of `segment`
/// values, segment `k` being padded columns k, k + stride, ...
pub(crate) struct Padded {
    values: Vec<f32>,
    rows: usize,
    stride: usize,
    segment: usize,
    /// The input's dims, the window and the output extent it was padded
    /// for (see [`Padded::serves`]).
    built_for: ([usize; 4], Window, [usize; 2]),
}

impl std::fmt::Debug for Padded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Padded").field("len", &self.values.len()).field("built_for", &self.built_for).finish()
    }
}

impl Padded {
    /// `x` [N, C_in, H, W] with `window.padding` zeros before the first row
    /// and column and as many after the last as the output reaches.
    pub(super) fn new(x: &[f32], dims: [usize; 4], window: &Window, out: [usize; 2]) -> Self {
        let ([n, c_in, h, w], [out_h, out_w]) = (dims, out);
        let built_for = (dims, *window, out);
        let reach = |axis: usize, out: usize| {
            (out - 1) * window.stride[axis] + (window.kernel[axis] - 1) * window.dilation[axis] + 1
        };
        let [p0, p1] = window.padding;
        let rows = reach(0, out_h).max(h + p0);
        let width = reach(1, out_w).max(w + p1);
        let stride = window.stride[1];
        let segment = width.div_ceil(stride);
        let len = n * c_in * rows * stride * segment;
        if stride == 1 && h * w > 0 && x.len() == n * c_in * h * w {
            let values = pad_rows(x, [h, w], [p0, p1], [rows, width], len);
            return Padded { values, rows, stride, segment, built_for };
        }
        let mut values = vec![0.0f32; len];
        values.par_chunks_mut(rows * stride * segment).zip(x.par_chunks(h * w)).for_each(|(dst, plane)| {
            for (y, src) in plane.chunks(w).enumerate() {
                regroup_row(&mut dst[(y + p0) * stride * segment..][..stride * segment], src, p1, stride, segment);
            }
        });
        Padded { values, rows, stride, segment, built_for }
    }

    /// Whether this is the input of `dims` padded for `window` as far as
    /// outputs `out` reach.
    pub(crate) fn serves(&self, dims: [usize; 4], window: &Window, out: [usize; 2]) -> bool {
        self.built_for == (dims, *window, out)
    }

    /// The padded planes, [rows, width] each, where the columns were not
    /// regrouped (width stride 1).
    pub(super) fn planes(&self) -> Option<(&[f32], [usize; 2])> {
        (self.stride == 1).then_some((&self.values, [self.rows, self.segment]))
    }

    /// The padded values, for [`Padded::tap_starts`]' offsets.
    pub(super) fn values(&self) -> &[f32] {
        &self.values
    }

    /// Where each tap (ci, i, j) of sample `sample` starts reading, in
    /// order: tap t's inputs for outputs ow.. of output row oh are
    /// [`values`](Padded::values) from `starts[t] + oh · row_step + ow`
    /// on (what [`Padded::from`] gives, its rows regrouped by column
    /// remainder: column ow·s₁ + j·d₁ lies in segment (j·d₁) mod s₁ at
    /// ow + ⌊j·d₁ / s₁⌋). Returns (starts, row_step).
    pub(super) fn tap_starts(&self, sample: usize, c_in: usize, window: &Window) -> (Vec<usize>, usize) {
        let ([kh, kw], [s0, s1], [d0, d1]) = (window.kernel, window.stride, window.dilation);
        let row_len = self.stride * self.segment;
        let mut starts = Vec::with_capacity(c_in * kh * kw);
        for ci in 0..c_in {
            for i in 0..kh {
                let row = ((sample * c_in + ci) * self.rows + i * d0) * row_len;
                for j in 0..kw {
                    starts.push(row + (j * d1 % s1) * self.segment + j * d1 / s1);
                }
            }
        }
        (starts, s0 * row_len)
    }

    /// Padded row `r` of plane (n · C_in + ci), from padded column `c` on,
    /// every `stride`-th value.
    #[inline(always)]
    pub(super) fn from(&self, plane: usize, r: usize, c: usize) -> &[f32] {
        let row = (plane * self.rows + r) * self.stride * self.segment;
        &self.values
            [row + (c % self.stride) * self.segment + c / self.stride..row + (c % self.stride + 1) * self.segment]
    }
}

/// The planes of `x` (`len / (rows · width)` of them, each [h, w]) as
/// planes of [rows, width] with `p0` rows and `p1` columns of zeros before
/// and zeros after. Each row is written whole (zeros, the input row,
/// zeros) rather than the buffer zeroed first and the rows copied in:
/// zeroing every plane cost as much as the copy.
pub(super) fn pad_rows(
    x: &[f32],
    [h, w]: [usize; 2],
    [p0, p1]: [usize; 2],
    [rows, width]: [usize; 2],
    len: usize,
) -> Vec<f32> {
    assert!(h * w > 0 && x.len() / (h * w) == len / (rows * width) && rows >= h + p0 && width >= w + p1);
    // SAFETY: the first `len` elements are initialised: the planes of
    // `rows · width` tile `0..len` and are as many as `x`'s planes (the
    // assertion above), so each is written, every row of it whole (the
    // three writes cover `0..width`, as `width >= p1 + w`).
    #[allow(unsafe_code)]
    unsafe {
        uninit::written_whole(len, |values| {
            values.par_chunks_mut(rows * width).zip(x.par_chunks(h * w)).for_each(|(dst, plane)| {
                for (r, row) in dst.chunks_mut(width).enumerate() {
                    match r.checked_sub(p0).filter(|&y| y < h) {
                        Some(y) => {
                            fill(&mut row[..p1], 0.0);
                            row[p1..p1 + w].write_copy_of_slice(&plane[y * w..][..w]);
                            fill(&mut row[p1 + w..], 0.0);
                        }
                        None => fill(row, 0.0),
                    }
                }
            });
        })
    }
}

/// Whether the direct kernel takes a convolution with `c_out` output
/// channels and rows of `out_w` outputs: channels in whole blocks, and few
/// enough (at most 64) and rows wide enough (16, an AVX-512 vector) that
/// the sums in registers beat the columns' GEMM: on small maps of many
/// channels (ASPP's) the GEMM wins, on large maps of few channels the
/// direct sums (`docs/benchmarks.md`, segmentation).
pub(crate) fn applies(c_out: usize, out_w: usize) -> bool {
    c_out > 0 && c_out <= 64 && c_out.is_multiple_of(CO_BLOCK) && out_w >= 16
}

/// conv2d(x, weight) without bias: x [N, C_in, H, W], weight [C_out, C_in,
/// kh, kw] with `C_out` a multiple of [`CO_BLOCK`] (see [`applies`]), output
/// [N, C_out, out_h, out_w].
pub(crate) fn forward(
    x: &[f32],
    dims: [usize; 4],
    weight: &[f32],
    c_out: usize,
    window: &Window,
    out: [usize; 2],
) -> Vec<f32> {
    if out.contains(&0) {
        return Vec::new();
    }
    forward_padded(&Padded::new(x, dims, window, out), dims, weight, c_out, window, out)
}

/// [`forward`] from the input already padded as far as outputs `out`
/// reach or further ([`Padded`]; the weight gradient pads to whole vectors
/// of outputs, and a trained layer's forward pass pads as far, to hand it
/// over).
pub(crate) fn forward_padded(
    padded: &Padded,
    [n, c_in, ..]: [usize; 4],
    weight: &[f32],
    c_out: usize,
    window: &Window,
    out: [usize; 2],
) -> Vec<f32> {
    let [kh, kw] = window.kernel;
    let taps = c_in * kh * kw;
    let [out_h, out_w] = out;
    if out_h == 0 || out_w == 0 {
        return Vec::new();
    }
    let len = n * c_out * out_h * out_w;
    let blocks = c_out / CO_BLOCK;
    let job = Job { padded, c_in, window, out };
    #[cfg(target_arch = "x86_64")]
    if super::bf16_gemm::native_here() && direct_conv2d_bf16::takes(out_w) {
        let pairs: Vec<Vec<u32>> =
            weight[..c_out * taps].chunks_exact(CO_BLOCK * taps).map(direct_conv2d_bf16::weight_pairs).collect();
        let tiles = |y: &mut [std::mem::MaybeUninit<f32>]| {
            y.par_chunks_mut(CO_BLOCK * out_h * out_w).enumerate().for_each(|(b, planes)| {
                let (sample, block) = (b / blocks, b % blocks);
                // SAFETY: `native_here` holds only where the CPU has
                // AVX512_BF16 with AVX-512 F and BW (`Precision::native`).
                #[allow(unsafe_code)]
                unsafe {
                    direct_conv2d_bf16::block(&job, sample, &pairs[block], planes)
                }
            });
        };
        // SAFETY: the first `len` values are written: every block of
        // CO_BLOCK planes of every sample goes to `block`, which writes
        // every output of every row of its planes (not zeroed first).
        #[allow(unsafe_code)]
        return unsafe { uninit::written_whole(len, tiles) };
    }
    let mut y = vec![0.0f32; len];
    y.par_chunks_mut(CO_BLOCK * out_h * out_w).enumerate().for_each(|(b, planes)| {
        let (sample, block) = (b / blocks, b % blocks);
        block_wide(&job, sample, &weight[block * CO_BLOCK * taps..][..CO_BLOCK * taps], planes);
    });
    y
}

/// What every block of one convolution shares.
pub(super) struct Job<'a> {
    pub(super) padded: &'a Padded,
    pub(super) c_in: usize,
    pub(super) window: &'a Window,
    pub(super) out: [usize; 2],
}

/// [`block`] built for the chosen [`KernelPath`]: tiles of 2 × 16 lanes
/// where AVX-512 registers hold them, 8 lanes otherwise.
fn block_wide(job: &Job<'_>, sample: usize, weights: &[f32], planes: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2(job: &Job<'_>, sample: usize, weights: &[f32], planes: &mut [f32]) {
            block::<1, 8>(job, sample, weights, planes)
        }
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")]
        fn avx512(job: &Job<'_>, sample: usize, weights: &[f32], planes: &mut [f32]) {
            block::<2, 16>(job, sample, weights, planes)
        }
        match cpu::path() {
            // SAFETY: `cpu::path` only chooses a path the CPU supports.
            #[allow(unsafe_code)]
            KernelPath::Avx512 => return unsafe { avx512(job, sample, weights, planes) },
            // SAFETY: as above.
            #[allow(unsafe_code)]
            KernelPath::Avx2 => return unsafe { avx2(job, sample, weights, planes) },
            KernelPath::Portable => {}
        }
    }
    block::<1, 4>(job, sample, weights, planes)
}

/// The [`CO_BLOCK`] output planes `planes` of sample `sample`, in tiles of
/// `V` × `L` outputs of a row. A row's last outputs that do not fill such a
/// tile take a narrower one ending at the row's end, overlapping outputs
/// already written: each output's sum is the same in any tile, so they are
/// written again with the same bits, and only rows narrower than 8 are
/// summed one output at a time.
#[inline(always)]
fn block<const V: usize, const L: usize>(job: &Job<'_>, sample: usize, weights: &[f32], planes: &mut [f32]) {
    let [out_h, out_w] = job.out;
    for oh in 0..out_h {
        let mut ow = 0;
        while ow < out_w {
            let left = out_w - ow;
            if left >= V * L {
                tile::<V, L>(job, sample, weights, oh, ow, planes);
                ow += V * L;
            } else if out_w >= L {
                let at = ow.min(out_w - L);
                tile::<1, L>(job, sample, weights, oh, at, planes);
                ow = at + L;
            } else if L > 8 && out_w >= 8 {
                let at = ow.min(out_w - 8);
                tile::<1, 8>(job, sample, weights, oh, at, planes);
                ow = at + 8;
            } else {
                tile::<1, 1>(job, sample, weights, oh, ow, planes);
                ow += 1;
            }
        }
    }
}

/// Outputs `ow..ow + V·L` of row `oh` of the block's planes.
#[inline(always)]
fn tile<const V: usize, const L: usize>(
    job: &Job<'_>,
    sample: usize,
    weights: &[f32],
    oh: usize,
    ow: usize,
    planes: &mut [f32],
) {
    let window = job.window;
    let [kh, kw] = window.kernel;
    let [s0, s1] = window.stride;
    let [d0, d1] = window.dilation;
    let taps = weights.len() / CO_BLOCK;
    let mut acc = [[[0.0f32; L]; V]; CO_BLOCK];
    let mut tap = 0;
    for ci in 0..job.c_in {
        let plane = sample * job.c_in + ci;
        for i in 0..kh {
            let r = oh * s0 + i * d0;
            for j in 0..kw {
                let inputs = job.padded.from(plane, r, ow * s1 + j * d1);
                let xs: [[f32; L]; V] = std::array::from_fn(|v| load(&inputs[v * L..]));
                // Each channel's weight read on its own (they are `taps`
                // apart): read as one vector, LLVM summed across channels
                // with gathers instead of along the row.
                for (c, a) in acc.iter_mut().enumerate() {
                    let w = weights[c * taps + tap];
                    for v in 0..V {
                        for l in 0..L {
                            a[v][l] = w.mul_add(xs[v][l], a[v][l]);
                        }
                    }
                }
                tap += 1;
            }
        }
    }
    let [out_h, out_w] = job.out;
    for (c, a) in acc.iter().enumerate() {
        let dst = &mut planes[(c * out_h + oh) * out_w + ow..][..V * L];
        for (v, lanes) in a.iter().enumerate() {
            dst[v * L..][..L].copy_from_slice(lanes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::columns::wave;

    /// y by its definition, in f64.
    fn naive(
        x: &[f32],
        [n, c_in, h, w]: [usize; 4],
        weight: &[f32],
        c_out: usize,
        window: &Window,
        [out_h, out_w]: [usize; 2],
    ) -> Vec<f64> {
        let [kh, kw] = window.kernel;
        let mut y = vec![0.0f64; n * c_out * out_h * out_w];
        for s in 0..n {
            for co in 0..c_out {
                for oh in 0..out_h {
                    for ow in 0..out_w {
                        let mut sum = 0.0;
                        for ci in 0..c_in {
                            for i in 0..kh {
                                for j in 0..kw {
                                    if let Some(at) = window.input_at([oh, ow], [i, j], [h, w]) {
                                        let xv = x[(s * c_in + ci) * h * w + at];
                                        sum += f64::from(xv) * f64::from(weight[((co * c_in + ci) * kh + i) * kw + j]);
                                    }
                                }
                            }
                        }
                        y[((s * c_out + co) * out_h + oh) * out_w + ow] = sum;
                    }
                }
            }
        }
        y
    }

    #[test]
    fn direct_sums_equal_the_definition_for_strides_dilations_padding_and_row_ends() {
        // Output widths that end rows on whole 32-wide tiles, on a 16-wide
        // tile overlapping the previous one, on 8-wide ones, and rows
        // narrower than 8 (one output at a time).
        let cases = [
            ([2, 3, 5, 61], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }),
            ([1, 2, 4, 64], 16, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }),
            ([1, 2, 9, 45], 8, Window { kernel: [7, 7], stride: [2, 2], padding: [3, 3], dilation: [1, 1] }),
            ([2, 2, 6, 13], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [2, 2], dilation: [2, 2] }),
            ([1, 1, 5, 5], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }),
            ([1, 3, 7, 40], 8, Window { kernel: [5, 3], stride: [2, 3], padding: [0, 2], dilation: [1, 2] }),
        ];
        for (dims, c_out, window) in cases {
            let [n, c_in, h, w] = dims;
            let out = [window.output_size(0, h), window.output_size(1, w)];
            let x = wave(n * c_in * h * w, 7);
            let weight = wave(c_out * c_in * window.kernel[0] * window.kernel[1], 5);
            let got = forward(&x, dims, &weight, c_out, &window, out);
            let want = naive(&x, dims, &weight, c_out, &window, out);
            assert_eq!(got.len(), want.len());
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*a) - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{dims:?} {window:?}: y[{k}] = {a}, want {b}"
                );
            }
        }
    }

    #[test]
    fn the_direct_kernel_takes_whole_blocks_of_at_most_64_channels_and_rows_of_16() {
        assert!(applies(8, 16) && applies(64, 208));
        assert!(!applies(12, 208) && !applies(0, 208) && !applies(128, 208) && !applies(16, 13));
    }
}
