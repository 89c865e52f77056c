//! The transposed 2-D convolution (CosmoGAN's generator, the FC-DenseNets'
//! upsampling) as
//! burn-flex computes it, a product and a col2im per sample, with the
//! col2im done a row at a time in contiguous runs.
//!
//! y[n, co, oh, ow] = Σ_(ci, i, j) x[n, ci, ih, iw] · w[ci, co, i, j] over
//! the (ih, iw) with ih·s₀ − p₀ + i = oh and iw·s₁ − p₁ + j = ow.
//!
//! The product cols[co, i, j][ih, iw] = Σ_ci w[ci, co, i, j] · x[n, ci, ih,
//! iw] reads the weight transposed in place ([`strided_gemm`]). burn-flex
//! then adds each column into the output one value at a time, every s-th
//! output along a row; that scatter took as long as its product on
//! CosmoGAN's `small` step. Here an output plane is built per column phase
//! b = ow mod s₁: every tap (i, j) adds each row of its columns as one
//! contiguous run into a row of its phase (the outputs of a tap along a
//! row all fall in one phase), and the phases are interleaved into the
//! plane once at the end. Inputs of small planes (the 4 × 4 maps at
//! CosmoGAN's narrow end) have all samples' columns made by one product:
//! a product per sample there has as many rows as the plane has pixels,
//! too few for the `gemm` crate's widest microkernel. Output channels in
//! whole blocks of 16 take [`lane_conv_transpose2d`] instead, which
//! gathers each output from the taps that reach it, 16 channels at a time,
//! rather than scattering one channel's runs. (One stride-1
//! convolution per output phase, which needs no col2im, was measured slower
//! on CosmoGAN: its columns hold every input channel where these hold the
//! output channels, twice as many there; `docs/benchmarks.md`.)

use rayon::prelude::*;

use super::columns::{SMALL_PLANE, swap_leading_axes};
use super::lane_conv_transpose2d;
use super::strided_gemm::{self, View};

/// Most floats a sample's columns may take (256 MiB): beyond that burn's
/// tiled route is used.
const MAX_COLUMN_FLOATS: usize = 64 << 20;

/// Where a transposed convolution's taps land: stride and padding per axis
/// (dilation 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Output positions between consecutive input positions.
    pub stride: [usize; 2],
    /// Outputs cut from the start of each axis.
    pub padding: [usize; 2],
}

/// Whether [`forward`] takes a transposed convolution of `c_out` output
/// channels on inputs of `input` [H, W]: strides of at least one, and
/// columns of a sample within [`MAX_COLUMN_FLOATS`].
pub fn applies(geometry: &Geometry, c_out: usize, [h, w]: [usize; 2]) -> bool {
    let [kh, kw] = geometry.kernel;
    let floats = [c_out, kh, kw, h, w].iter().try_fold(1usize, |acc, &v| acc.checked_mul(v));
    !geometry.stride.contains(&0) && floats.is_some_and(|f| f <= MAX_COLUMN_FLOATS)
}

/// conv_transpose2d(x, weight) without bias: x [N, C_in, H, W], weight
/// [C_in, C_out, kh, kw], output [N, C_out, out_h, out_w] (the output
/// padding is in `out`).
pub fn forward(
    x: &[f32],
    [n, c_in, h, w]: [usize; 4],
    weight: &[f32],
    c_out: usize,
    geometry: &Geometry,
    [out_h, out_w]: [usize; 2],
) -> Vec<f32> {
    if lane_conv_transpose2d::applies(c_out) {
        return lane_conv_transpose2d::forward(
            x,
            [n, c_in, h, w],
            weight,
            c_out,
            geometry,
            [out_h, out_w],
            MAX_COLUMN_FLOATS,
        );
    }
    let [kh, kw] = geometry.kernel;
    let taps = c_out * kh * kw;
    let (plane, out_plane) = (h * w, out_h * out_w);
    let mut y = vec![0.0f32; n * c_out * out_plane];
    let sample_x = |sample: usize| (x, View::rows(c_in, plane).at(sample * c_in * plane));
    let weight_t = (weight, View::columns(taps, c_in));
    if plane < SMALL_PLANE && n > 1 && taps * plane * n <= MAX_COLUMN_FLOATS {
        // x as [C_in, N·H·W], so that one product makes the columns of
        // every sample: cols[tap][sample·H·W + pixel].
        let x_by_channel = swap_leading_axes(x, [n, c_in, plane]);
        let mut cols = vec![0.0f32; taps * n * plane];
        strided_gemm::multiply(
            (&mut cols, View::rows(taps, n * plane)),
            weight_t,
            (&x_by_channel, View::rows(c_in, n * plane)),
            true,
        );
        y.par_chunks_mut(out_plane).enumerate().for_each_init(Vec::new, |phases, (index, channel)| {
            let (sample, co) = (index / c_out, index % c_out);
            let rows =
                Rows { cols: &cols, tap_stride: n * plane, first: sample * plane, geometry, input: [h, w], out_w };
            rows.channel(co, channel, phases);
        });
        return y;
    }
    if n >= rayon::current_num_threads() {
        // A sample per task, as burn-flex shares them: enough of them to
        // keep every thread busy without waking the others per product.
        // Each sample's columns a new, unzeroed product (see
        // `lane_conv_transpose2d::forward`).
        y.par_chunks_mut(c_out * out_plane).enumerate().for_each_init(Vec::new, |phases, (sample, out)| {
            let cols = strided_gemm::product_of(weight_t, sample_x(sample), false);
            let rows = Rows { cols: &cols, tap_stride: plane, first: 0, geometry, input: [h, w], out_w };
            for (co, channel) in out.chunks_mut(out_plane).enumerate() {
                rows.channel(co, channel, phases);
            }
        });
        return y;
    }
    let mut cols = vec![0.0f32; taps * plane];
    for (sample, out) in y.chunks_mut(c_out * out_plane).enumerate() {
        strided_gemm::multiply((&mut cols, View::rows(taps, plane)), weight_t, sample_x(sample), true);
        let rows = Rows { cols: &cols, tap_stride: plane, first: 0, geometry, input: [h, w], out_w };
        out.par_chunks_mut(out_plane)
            .enumerate()
            .for_each_init(Vec::new, |phases, (co, channel)| rows.channel(co, channel, phases));
    }
    y
}

/// One sample's columns and where their rows land.
struct Rows<'a> {
    /// Tap t's H·W columns of this sample at `first + t·tap_stride`.
    cols: &'a [f32],
    tap_stride: usize,
    first: usize,
    geometry: &'a Geometry,
    input: [usize; 2],
    out_w: usize,
}

impl Rows<'_> {
    /// Output channel `co`'s plane: every tap's columns added as runs into
    /// the plane's column phases (`phases`: s₁ planes of out_h rows), then
    /// the phases interleaved into the plane.
    fn channel(&self, co: usize, channel: &mut [f32], phases: &mut Vec<f32>) {
        let ([kh, kw], [s0, s1], [p0, p1]) = (self.geometry.kernel, self.geometry.stride, self.geometry.padding);
        let ([h, w], out_w) = (self.input, self.out_w);
        let out_h = channel.len() / out_w.max(1);
        // Phase b holds outputs b, b + s₁, ...: `longest` at most.
        let longest = out_w.div_ceil(s1);
        phases.clear();
        phases.resize(s1 * out_h * longest, 0.0);
        for j in 0..kw {
            // ow = iw·s₁ − p₁ + j = s₁·(iw + shift) + phase.
            let offset = j as isize - p1 as isize;
            let (phase, shift) = (offset.rem_euclid(s1 as isize) as usize, offset.div_euclid(s1 as isize));
            if phase >= out_w {
                continue;
            }
            let len = (out_w - phase).div_ceil(s1) as isize;
            // Input columns iw with 0 ≤ iw + shift < len.
            let (first, end) = ((-shift).max(0) as usize, ((len - shift).max(0) as usize).min(w));
            if first >= end {
                continue;
            }
            let start = (first as isize + shift) as usize;
            for i in 0..kh {
                let tap = &self.cols[self.first + ((co * kh + i) * kw + j) * self.tap_stride..][..h * w];
                for (ih, row) in tap.chunks(w).enumerate() {
                    // oh = ih·s₀ − p₀ + i.
                    let Some(oh) = (ih * s0 + i).checked_sub(p0) else { continue };
                    if oh >= out_h {
                        break;
                    }
                    let sums = &mut phases[(phase * out_h + oh) * longest + start..][..end - first];
                    for (sum, value) in sums.iter_mut().zip(&row[first..end]) {
                        *sum += value;
                    }
                }
            }
        }
        for (oh, row) in channel.chunks_mut(out_w).enumerate() {
            for phase in 0..s1.min(out_w) {
                let sums = &phases[(phase * out_h + oh) * longest..][..(out_w - phase).div_ceil(s1)];
                for (value, sum) in row[phase..].iter_mut().step_by(s1).zip(sums) {
                    *value = *sum;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::backend::Flex;
    use burn::backend::TensorMetadata;
    use burn::backend::ops::ModuleOps;
    use burn::tensor::Shape;
    use burn::tensor::ops::ConvTransposeOptions;

    use super::*;
    use crate::kernels::columns::wave;
    use crate::kernels::flex::{flex, values};

    #[test]
    fn the_transposed_convolution_equals_burns() {
        // (input, C_out, kernel, stride, padding, output padding): the
        // generator's 5 × 5 upsampling by 2, odd kernels and strides, a
        // stride wider than the kernel, uneven axes, one output channel,
        // padding that crops most of an axis. Planes below SMALL_PLANE
        // with several samples go through the product of all samples.
        let cases = [
            ([2, 3, 4, 5], 8, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([1, 4, 5, 7], 3, [3, 3], [2, 2], [1, 1], [1, 0]),
            ([2, 2, 3, 4], 16, [4, 3], [3, 2], [1, 0], [0, 1]),
            ([1, 3, 4, 4], 2, [2, 2], [3, 3], [0, 0], [2, 0]),
            ([1, 5, 6, 3], 1, [5, 3], [1, 1], [2, 1], [0, 0]),
            ([2, 2, 4, 3], 4, [3, 3], [1, 2], [2, 1], [0, 1]),
            // CosmoGAN's 4 × 4 end, many samples in one product; planes
            // too large for that, a product per sample.
            ([16, 8, 4, 4], 4, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([3, 2, 8, 9], 3, [5, 5], [2, 2], [2, 2], [1, 1]),
            // Whole blocks of output channels (lane_conv_transpose2d): all
            // samples in one product, a product per sample on every
            // thread, one sample whose product is shared; odd strides and
            // kernels, an output channel block past the first.
            ([16, 8, 4, 4], 32, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([3, 5, 8, 9], 16, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([1, 3, 9, 8], 48, [3, 4], [3, 2], [1, 2], [2, 1]),
            ([2, 4, 3, 5], 16, [2, 3], [1, 3], [0, 1], [0, 2]),
        ];
        for (dims, c_out, kernel, stride, padding, out_padding) in cases {
            let x = flex(wave(dims.iter().product(), 7), Shape::new(dims));
            let weight = flex(
                wave(dims[1] * c_out * kernel[0] * kernel[1], 5),
                Shape::new([dims[1], c_out, kernel[0], kernel[1]]),
            );
            let options = ConvTransposeOptions::new(stride, padding, out_padding, [1, 1], 1);
            let theirs = Flex::conv_transpose2d(x.clone(), weight.clone(), None, options);
            let out = theirs.shape();
            let geometry = Geometry { kernel, stride, padding };
            assert!(applies(&geometry, c_out, [dims[2], dims[3]]));
            let ours = forward(&values(&x), dims, &values(&weight), c_out, &geometry, [out[2], out[3]]);
            assert_eq!(ours.len(), out.num_elements());
            for (k, (a, b)) in ours.iter().zip(values(&theirs).iter()).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{dims:?} {kernel:?} {stride:?}: y[{k}] = {a}, burn {b}"
                );
            }
        }
    }

    /// Under bf16 on a CPU that has it, output channels in whole blocks
    /// make their columns in [`bf16_gemm`](super::super::bf16_gemm): on
    /// operands already bf16 (as the precision wrappers hand them over)
    /// the result is the f32 one's up to the order of the f32 sums.
    #[test]
    fn in_bf16_the_lane_route_sums_the_rounded_operands_in_f32() {
        use crate::kernels::precision::{Precision, scoped};
        if !Precision::Bf16.native() {
            e2e::skip("in_bf16_the_lane_route_sums_the_rounded_operands_in_f32", "no AVX512_BF16 on this CPU");
            return;
        }
        // All samples in one product; one product per sample with an odd
        // number of input channels (a pair padded with zero), one sample
        // after another and, with as many samples as threads, a task per
        // sample; an odd kernel and stride with a channel block past the
        // first.
        let cases = [
            ([16, 8, 4, 4], 32, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([3, 5, 17, 9], 16, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([rayon::current_num_threads(), 5, 17, 9], 32, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([1, 3, 9, 8], 48, [3, 4], [3, 2], [1, 2], [2, 1]),
        ];
        for (dims, c_out, kernel, stride, padding, out_padding) in cases {
            let x = Precision::Bf16.rounded(&wave(dims.iter().product(), 7));
            let weight = Precision::Bf16.rounded(&wave(dims[1] * c_out * kernel[0] * kernel[1], 5));
            let geometry = Geometry { kernel, stride, padding };
            let out = [0, 1].map(|a| (dims[2 + a] - 1) * stride[a] + kernel[a] + out_padding[a] - 2 * padding[a]);
            let single = forward(&x, dims, &weight, c_out, &geometry, out);
            let half = scoped(Precision::Bf16, || forward(&x, dims, &weight, c_out, &geometry, out));
            assert_eq!(half.len(), dims[0] * c_out * out[0] * out[1]);
            for (k, (a, b)) in half.iter().zip(&single).enumerate() {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{dims:?} {kernel:?}: y[{k}] bf16 {a}, f32 {b}");
            }
        }
    }

    #[test]
    fn columns_too_large_for_memory_are_left_to_burn() {
        let geometry = Geometry { kernel: [5, 5], stride: [2, 2], padding: [2, 2] };
        assert!(!applies(&geometry, 4096, [1024, 1024]));
        assert!(!applies(&Geometry { stride: [0, 2], ..geometry }, 8, [4, 4]));
    }
}
