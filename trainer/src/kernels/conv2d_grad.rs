//! The weight gradient of a 2-D convolution (and of a transposed one) as
//! columns (im2col) times the output gradient, one GEMM per tile of output
//! rows.
//!
//! burn computes this gradient as a second convolution: the input with
//! batch and channels swapped, convolved with the output gradient as its
//! kernel (`conv2d_weight_grad_no_groups` in burn-backend 0.22). The batch
//! becomes that convolution's input channels, so with a small batch and at
//! most 16 output channels burn-flex takes its "small channel" direct path,
//! which slides a kernel the size of the whole field (112×208 in the tests)
//! over a 3×3 output one multiply at a time: the small segmentation
//! networks spent most of a training step there (`docs/benchmarks.md`).
//! Here the same sum is a matrix product with the long dimension (output
//! positions) as the inner one, which is the shape GEMM is fast at.
//!
//! dW[co, ci, i, j] = Σ_n Σ_(oh, ow) g[n, co, oh, ow] ·
//! x[n, ci, oh·s₀ − p₀ + i·d₀, ow·s₁ − p₁ + j·d₁] (zero outside x).

use std::ops::Range;

use burn::backend::Flex;
use burn::backend::TensorMetadata;
use burn::backend::flex::FlexTensor;
use burn::backend::ops::FloatTensorOps;
use burn::tensor::Shape;
use rayon::prelude::*;

use super::flex::{flex, values};

/// Floats one tile of columns may hold (16 MiB): large enough that each
/// GEMM has thousands of output positions to sum over, small enough that
/// the paper-size fields (768×1152) do not need a copy of the input per
/// kernel tap in memory at once.
const TILE_FLOATS: usize = 4 << 20;

/// Where a convolution's kernel taps land on its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Step between output positions, in input pixels.
    pub stride: [usize; 2],
    /// Zeros before the first input row and column.
    pub padding: [usize; 2],
    /// Step between kernel taps, in input pixels.
    pub dilation: [usize; 2],
}

impl Window {
    /// The output positions `o` in `0..out` whose tap `k` lands inside an
    /// input of `size` along axis `axis`: `0 <= o·s + k·d − p < size`.
    fn valid(&self, axis: usize, k: usize, size: usize, out: usize) -> Range<usize> {
        let (s, d, p) = (self.stride[axis], self.dilation[axis], self.padding[axis]);
        let offset = k * d;
        let start = if offset >= p { 0 } else { (p - offset).div_ceil(s) };
        let end = if offset >= size + p { 0 } else { (size + p - offset).div_ceil(s) };
        let end = end.min(out);
        start.min(end)..end
    }
}

/// Fill `cols` (rows (ci, i, j) of `rows.len() · out_w` values each) with
/// the input values that tap (i, j) of channel `ci` meets at output rows
/// `rows`, for one sample `x` of shape [C_in, H, W]; zeros where the tap
/// falls into the padding.
pub fn fill_columns(
    x: &[f32],
    [h, w]: [usize; 2],
    out_w: usize,
    window: &Window,
    rows: Range<usize>,
    cols: &mut [f32],
) {
    let [kh, kw] = window.kernel;
    let width = rows.len() * out_w;
    if width == 0 {
        return;
    }
    cols.par_chunks_mut(width).enumerate().for_each(|(r, dst)| {
        let (ci, i, j) = (r / (kh * kw), (r / kw) % kh, r % kw);
        let plane = &x[ci * h * w..(ci + 1) * h * w];
        let valid_rows = window.valid(0, i, h, rows.end);
        let valid_cols = window.valid(1, j, w, out_w);
        for (t, oh) in rows.clone().enumerate() {
            let line = &mut dst[t * out_w..(t + 1) * out_w];
            if !valid_rows.contains(&oh) || valid_cols.is_empty() {
                line.fill(0.0);
                continue;
            }
            let ih = oh * window.stride[0] + i * window.dilation[0] - window.padding[0];
            let src = &plane[ih * w..(ih + 1) * w];
            line[..valid_cols.start].fill(0.0);
            line[valid_cols.end..].fill(0.0);
            let first = valid_cols.start * window.stride[1] + j * window.dilation[1] - window.padding[1];
            let step = window.stride[1];
            if step == 1 {
                line[valid_cols.clone()].copy_from_slice(&src[first..first + valid_cols.len()]);
            } else {
                for (k, v) in line[valid_cols.clone()].iter_mut().enumerate() {
                    *v = src[first + k * step];
                }
            }
        }
    });
}

/// Output rows per tile when one output row of every sample needs
/// `floats_per_row` floats of columns: as many as [`TILE_FLOATS`] holds, at
/// least one.
pub(crate) fn rows_per_tile(floats_per_row: usize, out_h: usize) -> usize {
    (TILE_FLOATS / floats_per_row.max(1)).clamp(1, out_h.max(1))
}

/// The columns of output rows `rows` for every sample of `x` [N, C_in, H,
/// W]: [N, taps, rows · out_w], each sample's as [`fill_columns`] builds them.
pub(crate) fn batch_columns(
    x: &[f32],
    [n, c_in, h, w]: [usize; 4],
    out_w: usize,
    window: &Window,
    rows: Range<usize>,
) -> Vec<f32> {
    let [kh, kw] = window.kernel;
    let sample_len = c_in * kh * kw * rows.len() * out_w;
    let mut cols = vec![0.0f32; n * sample_len];
    for (s, sample_cols) in cols.chunks_mut(sample_len.max(1)).enumerate() {
        let sample = &x[s * c_in * h * w..(s + 1) * c_in * h * w];
        fill_columns(sample, [h, w], out_w, window, rows.clone(), sample_cols);
    }
    cols
}

/// dW of shape [C_out, C_in, kh, kw] for input [N, C_in, H, W] and output
/// gradient [N, C_out, OH, OW] (f32, one group).
pub fn weight_grad(input: &FlexTensor, out_grad: &FlexTensor, window: &Window) -> FlexTensor {
    let (xs, gs) = (input.shape(), out_grad.shape());
    let [n, c_in, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let [c_out, out_h, out_w] = [gs[1], gs[2], gs[3]];
    let [kh, kw] = window.kernel;
    let taps = c_in * kh * kw;
    let (x, g) = (values(input), values(out_grad));
    let tile_rows = rows_per_tile(n * taps * out_w, out_h);
    let mut total: Option<FlexTensor> = None;
    for first in (0..out_h).step_by(tile_rows) {
        let rows = first..(first + tile_rows).min(out_h);
        let width = rows.len() * out_w;
        let cols = batch_columns(&x, [n, c_in, h, w], out_w, window, rows.clone());
        let mut grad = Vec::with_capacity(n * c_out * width);
        for s in 0..n {
            for co in 0..c_out {
                let plane = (s * c_out + co) * out_h * out_w;
                grad.extend_from_slice(&g[plane + rows.start * out_w..plane + rows.end * out_w]);
            }
        }
        // [taps, width] × [width, C_out]: the columns as the left operand,
        // whose rows (the sum's long dimension) are contiguous, so GEMM
        // packs them with plain loads; the transposed output is small.
        let cols = flex(cols, Shape::new([n, taps, width]));
        let grad = Flex::float_swap_dims(flex(grad, Shape::new([n, c_out, width])), 1, 2);
        let tile = Flex::float_sum_dim(Flex::float_matmul(cols, grad), 0);
        total = Some(match total {
            Some(sum) => Flex::float_add(sum, tile),
            None => tile,
        });
    }
    let shape = Shape::new([c_out, c_in, kh, kw]);
    match total {
        Some(sum) => Flex::float_reshape(Flex::float_swap_dims(sum, 1, 2), shape),
        None => flex(vec![0.0; c_out * taps], shape),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// dW by its definition, one product at a time.
    fn naive(
        x: &[f32],
        g: &[f32],
        [n, c_in, h, w]: [usize; 4],
        [c_out, out_h, out_w]: [usize; 3],
        window: &Window,
    ) -> Vec<f32> {
        let [kh, kw] = window.kernel;
        let mut dw = vec![0.0f64; c_out * c_in * kh * kw];
        for s in 0..n {
            for co in 0..c_out {
                for ci in 0..c_in {
                    for i in 0..kh {
                        for j in 0..kw {
                            for oh in 0..out_h {
                                for ow in 0..out_w {
                                    let ih = (oh * window.stride[0] + i * window.dilation[0]) as isize
                                        - window.padding[0] as isize;
                                    let iw = (ow * window.stride[1] + j * window.dilation[1]) as isize
                                        - window.padding[1] as isize;
                                    if ih < 0 || iw < 0 || ih >= h as isize || iw >= w as isize {
                                        continue;
                                    }
                                    let xv = x[((s * c_in + ci) * h + ih as usize) * w + iw as usize];
                                    let gv = g[((s * c_out + co) * out_h + oh) * out_w + ow];
                                    dw[((co * c_in + ci) * kh + i) * kw + j] += f64::from(xv) * f64::from(gv);
                                }
                            }
                        }
                    }
                }
            }
        }
        dw.into_iter().map(|v| v as f32).collect()
    }

    fn wave(len: usize, k: usize) -> Vec<f32> {
        (0..len).map(|i| ((i * k % 29) as f32 - 14.0) / 9.0).collect()
    }

    #[test]
    fn weight_gradient_equals_the_definition_for_strides_dilations_and_padding() {
        let cases = [
            // (x dims, c_out, window)
            ([2, 3, 7, 9], 4, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }),
            ([1, 2, 8, 10], 3, Window { kernel: [3, 3], stride: [2, 2], padding: [1, 1], dilation: [1, 1] }),
            ([2, 2, 9, 9], 2, Window { kernel: [3, 3], stride: [1, 1], padding: [2, 2], dilation: [2, 2] }),
            ([1, 3, 6, 7], 5, Window { kernel: [5, 5], stride: [1, 1], padding: [2, 2], dilation: [1, 1] }),
            ([3, 4, 5, 6], 2, Window { kernel: [1, 1], stride: [1, 1], padding: [0, 0], dilation: [1, 1] }),
            ([1, 1, 6, 8], 2, Window { kernel: [7, 7], stride: [2, 2], padding: [3, 3], dilation: [1, 1] }),
            ([1, 2, 5, 5], 1, Window { kernel: [3, 3], stride: [1, 1], padding: [6, 6], dilation: [6, 6] }),
        ];
        for (dims, c_out, window) in cases {
            let [n, c_in, h, w] = dims;
            let out = |axis: usize, size: usize| {
                (size + 2 * window.padding[axis] - window.dilation[axis] * (window.kernel[axis] - 1) - 1)
                    / window.stride[axis]
                    + 1
            };
            let (out_h, out_w) = (out(0, h), out(1, w));
            let x = wave(n * c_in * h * w, 7);
            let g = wave(n * c_out * out_h * out_w, 5);
            let want = naive(&x, &g, dims, [c_out, out_h, out_w], &window);
            let got = weight_grad(&flex(x, Shape::new(dims)), &flex(g, Shape::new([n, c_out, out_h, out_w])), &window);
            assert_eq!(got.shape().as_slice(), &[c_out, c_in, window.kernel[0], window.kernel[1]]);
            let got = values(&got);
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{window:?} {dims:?}: dW[{k}] = {a}, want {b}");
            }
        }
    }

    /// Tiles of a few rows sum to the same gradient as one tile.
    #[test]
    fn tiles_of_rows_cover_every_output_row_once() {
        let window = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        let (x, g) = (wave(2 * 2 * 5 * 4, 3), wave(2 * 3 * 5 * 4, 11));
        let want = naive(&x, &g, [2, 2, 5, 4], [3, 5, 4], &window);
        let mut cols = vec![f32::NAN; 2 * 9 * 5 * 4];
        let mut parts = vec![0.0f32; 2 * 9 * 5 * 4];
        for rows in [0..2, 2..3, 3..5] {
            let width = rows.len() * 4;
            fill_columns(&x[..2 * 20], [5, 4], 4, &window, rows.clone(), &mut cols[..18 * width]);
            for r in 0..18 {
                parts[r * 20 + rows.start * 4..r * 20 + rows.end * 4]
                    .copy_from_slice(&cols[r * width..(r + 1) * width]);
            }
        }
        let mut whole = vec![0.0f32; 18 * 20];
        fill_columns(&x[..2 * 20], [5, 4], 4, &window, 0..5, &mut whole);
        assert_eq!(parts[..18 * 20], whole[..]);
        let got = values(&weight_grad(&flex(x, Shape::new([2, 2, 5, 4])), &flex(g, Shape::new([2, 3, 5, 4])), &window))
            .into_owned();
        assert!(got.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-4));
    }
}
