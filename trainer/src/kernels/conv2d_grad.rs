//! The weight gradient of a 2-D convolution (and of a transposed one) as
//! columns (im2col) times the output gradient, one GEMM per tile of output
//! rows; or, for stride-1 kernels 1 or 3 wide, as the sums with the output
//! channels along the lanes of `shifted_weight_grad2d`; or, for few output
//! channels with strides or dilations, as the direct sums in registers of
//! `direct_weight_grad2d`.
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

use burn::backend::TensorMetadata;
use burn::backend::flex::FlexTensor;
use burn::tensor::Shape;
use rayon::prelude::*;

use super::bf16_gemm::{self, Runs};
use super::columns::{
    ColumnOrder, ColumnSource, KeptColumns, KeptInput, SMALL_PLANE, TapRows, Window, batch_columns, batch_columns_in,
    rows_per_tile, swap_leading_axes,
};
use super::flex::{flex, values};
use super::strided_gemm::{self, View};
use super::{direct_weight_grad2d, shifted_weight_grad2d};

/// dW of shape [C_out, C_in, kh, kw] for input [N, C_in, H, W] and output
/// gradient [N, C_out, OH, OW] (f32, one group).
pub fn weight_grad(input: &FlexTensor, out_grad: &FlexTensor, window: &Window) -> FlexTensor {
    weight_grad_with(input, out_grad, window, None)
}

/// [`weight_grad`] reading what the forward pass built of the same input
/// (`kept`, [`KeptInput`]: its columns or its padded input) where it has
/// them, rather than building them again.
pub(crate) fn weight_grad_with(
    input: &FlexTensor,
    out_grad: &FlexTensor,
    window: &Window,
    kept: Option<&KeptInput>,
) -> FlexTensor {
    let (xs, gs) = (input.shape(), out_grad.shape());
    let [n, c_in, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let [c_out, out_h, out_w] = [gs[1], gs[2], gs[3]];
    let [kh, kw] = window.kernel;
    let taps = c_in * kh * kw;
    let (x, g) = (values(input), values(out_grad));
    if shifted_weight_grad2d::applies(c_out, window, [out_h, out_w]) && kept.and_then(KeptInput::columns).is_none() {
        let padded = kept.and_then(KeptInput::padded);
        let grad = shifted_weight_grad2d::weight_grad(padded, &x, [n, c_in, h, w], &g, c_out, window, [out_h, out_w]);
        return flex(grad, Shape::new([c_out, c_in, kh, kw]));
    }
    if direct_weight_grad2d::applies(c_out, out_w, kw) {
        let (padded, dims) = (kept.and_then(KeptInput::padded), [n, c_in, h, w]);
        let grad = direct_weight_grad2d::weight_grad_from(padded, &x, dims, &g, c_out, window, [out_h, out_w]);
        return flex(grad, Shape::new([c_out, c_in, kh, kw]));
    }
    let plane = out_h * out_w;
    let dims = [n, c_out, out_h, out_w];
    let kept = kept.and_then(KeptInput::columns).filter(|k| k.columns.shape().num_elements() == n * taps * plane);
    let source = ColumnSource::new(&x, [n, c_in, h, w], window);
    let tile_rows = rows_per_tile(n * taps * out_w, out_h);
    if bf16_gemm::native_here() {
        return bf16_weight_grad(&source, kept, &g, dims, tile_rows, window);
    }
    if let Some(kept) = kept {
        let cols = values(&kept.columns);
        return match kept.order {
            ColumnOrder::TapMajor => small_planes(&cols, &g, dims, [c_in, kh, kw]),
            ColumnOrder::SampleMajor => {
                let transposed = tile_product(&cols, &g, dims, 0..out_h, taps);
                untranspose(&transposed, c_out, [c_in, kh, kw])
            }
        };
    }
    if plane < SMALL_PLANE && n > 1 && tile_rows >= out_h {
        let cols = batch_columns_in(&source, out_w, window, 0..out_h, ColumnOrder::TapMajor);
        return small_planes(&cols, &g, dims, [c_in, kh, kw]);
    }
    let mut transposed: Option<Vec<f32>> = None;
    for first in (0..out_h).step_by(tile_rows) {
        let rows = first..(first + tile_rows).min(out_h);
        let cols = batch_columns(&source, out_w, window, rows.clone());
        match &mut transposed {
            Some(sum) => accumulate_tile(sum, &cols, &g, dims, rows, 0..dims[0]),
            None => transposed = Some(tile_product(&cols, &g, dims, rows, taps)),
        }
    }
    let transposed = transposed.unwrap_or_else(|| vec![0.0; taps * c_out]);
    untranspose(&transposed, c_out, [c_in, kh, kw])
}

/// dWᵀ [taps × C_out] of the output rows `rows` alone: [`accumulate_tile`]
/// into a new matrix whose first sample's product is written rather than
/// added to zeros (a zeroing pass of megabytes on one thread in
/// CosmoGAN's `paper` layers).
fn tile_product(cols: &[f32], g: &[f32], dims: [usize; 4], rows: std::ops::Range<usize>, taps: usize) -> Vec<f32> {
    let [n, c_out, out_h, out_w] = dims;
    if n == 0 {
        return vec![0.0; taps * c_out];
    }
    let (plane, width) = (out_h * out_w, rows.len() * out_w);
    let first = (g, View::rows(width, c_out).strides(1, plane).at(rows.start * out_w));
    let mut transposed = strided_gemm::product_of((cols, View::rows(taps, width)), first, true);
    accumulate_tile(&mut transposed, cols, g, dims, rows, 1..n);
    transposed
}

/// Adds to dWᵀ [taps × C_out] (`transposed`) the product of the columns of
/// output rows `rows` ([N, taps, width], [`ColumnOrder::SampleMajor`]) and
/// the output gradient's rows of them read in place as [width × C_out]
/// (one channel's plane per column), for each sample of `samples`. dWᵀ row-major:
/// `gemm` then runs its widest kernel (64 rows) down the taps, where C_out
/// (16 in the small networks) as the rows would leave it a 16-row one.
fn accumulate_tile(
    transposed: &mut [f32],
    cols: &[f32],
    g: &[f32],
    [_, c_out, out_h, out_w]: [usize; 4],
    rows: std::ops::Range<usize>,
    samples: std::ops::Range<usize>,
) {
    let taps = transposed.len() / c_out.max(1);
    let (plane, width) = (out_h * out_w, rows.len() * out_w);
    for s in samples {
        strided_gemm::accumulate(
            (transposed, View::rows(taps, c_out)),
            (cols, View::rows(taps, width).at(s * taps * width)),
            (g, View::rows(width, c_out).strides(1, plane).at(s * c_out * plane + rows.start * out_w)),
        );
    }
}

/// [`weight_grad`] for small output planes (CosmoGAN's 4 × 4 end), where a
/// product per sample would sum over a dozen positions only: one product
/// dWᵀ [taps × C_out] = columns [taps × N·positions] (`cols`,
/// [`ColumnOrder::TapMajor`]) times the output gradient as [N·positions ×
/// C_out], read from a copy of it laid out [C_out, N, plane].
fn small_planes(cols: &[f32], g: &[f32], [n, c_out, out_h, out_w]: [usize; 4], kernel: [usize; 3]) -> FlexTensor {
    let taps = kernel.iter().product::<usize>();
    let plane = out_h * out_w;
    let positions = n * plane;
    let by_channel = swap_leading_axes(g, [n, c_out, plane]);
    let mut transposed = vec![0.0f32; taps * c_out];
    strided_gemm::multiply(
        (&mut transposed, View::rows(taps, c_out)),
        (cols, View::rows(taps, positions)),
        (&by_channel, View::columns(positions, c_out)),
        true,
    );
    untranspose(&transposed, c_out, kernel)
}

/// dW [C_out, C_in, kh, kw] from dWᵀ [taps × C_out], the threads sharing
/// blocks of 16 output channels: a block reads one cache line of every row
/// of dWᵀ, so dWᵀ is read once in all (a pass per output channel read
/// each of its lines C_out times), and no thread waits while one copies
/// (the copy is megabytes in CosmoGAN's `paper` layers).
fn untranspose(transposed: &[f32], c_out: usize, [c_in, kh, kw]: [usize; 3]) -> FlexTensor {
    const CHANNELS: usize = 16;
    let taps = c_in * kh * kw;
    let mut gradient = vec![0.0f32; c_out * taps];
    gradient.par_chunks_mut(CHANNELS * taps.max(1)).enumerate().for_each(|(block, rows)| {
        let first = block * CHANNELS;
        for (t, channels) in transposed.chunks_exact(c_out.max(1)).take(taps).enumerate() {
            for (row, &value) in channels[first..].iter().take(rows.len() / taps.max(1)).enumerate() {
                rows[row * taps + t] = value;
            }
        }
    });
    flex(gradient, Shape::new([c_out, c_in, kh, kw]))
}

/// [`weight_grad`] with bf16 products: dW [C_out × taps] = G · colsᵀ per
/// tile of output rows, both operands read in place as one run per sample
/// ([`bf16_gemm::Runs`]), so the sum over the samples is part of the
/// product's sum along K (in f32). The long dimension (positions) is K;
/// taps, the wide one, fills the kernel's 32-column panels, where C_out
/// (16 in the small networks) would leave half of each empty. The columns
/// the forward pass kept (either order) are read where they lie.
fn bf16_weight_grad(
    source: &ColumnSource,
    kept: Option<&KeptColumns>,
    g: &[f32],
    [n, c_out, out_h, out_w]: [usize; 4],
    tile_rows: usize,
    window: &Window,
) -> FlexTensor {
    let [kh, kw] = window.kernel;
    let c_in = source.channels();
    let taps = c_in * kh * kw;
    let plane = out_h * out_w;
    let shape = Shape::new([c_out, c_in, kh, kw]);
    // Output rows `rows` of every sample's gradient: one run per sample.
    let grad_rows = |rows: &std::ops::Range<usize>| Runs {
        rows: c_out,
        offset: rows.start * out_w,
        row_stride: plane,
        runs: n,
        run_stride: c_out * plane,
        length: rows.len() * out_w,
    };
    if let Some(kept) = kept {
        let column_rows = match kept.order {
            // [taps, N, plane]: tap t's run for sample s at t·N·plane + s·plane.
            ColumnOrder::TapMajor => {
                Runs { rows: taps, offset: 0, row_stride: n * plane, runs: n, run_stride: plane, length: plane }
            }
            ColumnOrder::SampleMajor => {
                Runs { rows: taps, offset: 0, row_stride: plane, runs: n, run_stride: taps * plane, length: plane }
            }
        };
        let gradient = bf16_gemm::gemm_runs((g, grad_rows(&(0..out_h))), (&values(&kept.columns), column_rows));
        return flex(gradient, shape);
    }
    // The columns made tap by tap as the product packs them, never whole
    // in f32.
    let mut gradient = vec![0.0f32; c_out * taps];
    for first in (0..out_h).step_by(tile_rows) {
        let rows = first..(first + tile_rows).min(out_h);
        let tap_rows = TapRows::new(source, out_w, window, rows.clone());
        let shape = [taps, n, tap_rows.width()];
        let tile = bf16_gemm::gemm_runs_from_rows((g, grad_rows(&rows)), shape, |sample, tap, out| {
            tap_rows.write_tap(sample, tap, out);
        });
        for (sum, value) in gradient.iter_mut().zip(tile) {
            *sum += value;
        }
    }
    flex(gradient, shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::columns::{wave, weight_grad_by_definition};
    use crate::kernels::precision::{Precision, scoped};

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
            // Every sample in one product (output planes under 64 positions,
            // several samples; the first and fifth cases too): CosmoGAN's 4 × 4 end.
            ([16, 8, 8, 8], 4, Window { kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] }),
            // More output channels than one of `untranspose`'s blocks, the
            // last block partial: in one product and in tiles.
            ([2, 3, 12, 12], 37, Window { kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] }),
            ([1, 3, 20, 20], 37, Window { kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] }),
        ];
        // bf16 where the CPU computes it ([`bf16_gemm`]), on operands
        // already rounded to it as the precision wrappers hand them over.
        let mut precisions = vec![Precision::F32];
        if Precision::Bf16.native() {
            precisions.push(Precision::Bf16);
        } else {
            e2e::skip("weight_gradient_equals_the_definition (bf16)", "no AVX512_BF16 on this CPU");
        }
        for ((dims, c_out, window), precision) in
            cases.into_iter().flat_map(|c| precisions.iter().map(move |&p| (c, p)))
        {
            let [n, c_in, h, w] = dims;
            let (out_h, out_w) = (window.output_size(0, h), window.output_size(1, w));
            let (mut x, mut g) = (wave(n * c_in * h * w, 7), wave(n * c_out * out_h * out_w, 5));
            precision.round_in_place(&mut x);
            precision.round_in_place(&mut g);
            let want = weight_grad_by_definition(&x, &g, dims, [c_out, out_h, out_w], &window);
            let (x, g) = (flex(x, Shape::new(dims)), flex(g, Shape::new([n, c_out, out_h, out_w])));
            let got = scoped(precision, || weight_grad(&x, &g, &window));
            assert_eq!(got.shape().as_slice(), &[c_out, c_in, window.kernel[0], window.kernel[1]]);
            let got = values(&got);
            for (k, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(*a) - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{precision} {window:?} {dims:?}: dW[{k}] = {a}, want {b}"
                );
            }
        }
    }

    /// Enough taps × width that a tile holds fewer output rows than the
    /// output: the tiles' products sum to the whole gradient.
    #[test]
    fn tiles_of_output_rows_sum_to_the_whole_gradient() {
        let window = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        let dims = [1, 64, 70, 300];
        assert!(rows_per_tile(64 * 9 * 300, 70) < 70);
        let (x, g) = (wave(dims.iter().product(), 3), wave(2 * 70 * 300, 11));
        let want = weight_grad_by_definition(&x, &g, dims, [2, 70, 300], &window);
        let got = values(&weight_grad(&flex(x, Shape::new(dims)), &flex(g, Shape::new([1, 2, 70, 300])), &window))
            .into_owned();
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((f64::from(*a) - b).abs() <= 1e-3 * (1.0 + b.abs()), "dW[{k}] = {a}, want {b}");
        }
    }

    /// What the forward pass keeps (its columns, in both orders, or its
    /// padded input for the direct sums) gives the weight gradient the bits
    /// that building it again gives, and the forward pass the same output:
    /// in f32, and in bf16 where the CPU computes it (the products in
    /// [`bf16_gemm`], which read the kept columns in either order).
    #[test]
    fn weight_gradient_from_what_the_forward_pass_kept_equals_building_it_again() {
        let mut precisions = vec![Precision::F32];
        if Precision::Bf16.native() {
            precisions.push(Precision::Bf16);
        } else {
            e2e::skip("weight_gradient_from_what_the_forward_pass_kept (bf16)", "no AVX512_BF16 on this CPU");
        }
        for precision in precisions {
            scoped(precision, the_kept_input_gives_the_rebuilt_gradient);
        }
    }

    fn the_kept_input_gives_the_rebuilt_gradient() {
        use crate::kernels::conv2d_forward::forward_keeping_input;
        let five = Window { kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] };
        let three = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        // (x dims, C_out, window, what is kept): a plane of 16 positions
        // over 4 samples (tap-major columns), one of 80 (sample-major), 8
        // channels along rows of 50 (the direct forward pass and the
        // lane sums), and strided rows of 50 under a kernel 7 wide, too
        // wide for the lane sums (the row-wise direct sums both ways).
        let seven_wide = Window { kernel: [3, 7], stride: [2, 2], padding: [1, 3], ..three };
        let cases = [
            ([4, 3, 8, 8], 4, five, "tap-major"),
            ([2, 3, 16, 20], 4, five, "sample-major"),
            ([2, 3, 6, 50], 8, three, "padded"),
            ([2, 3, 6, 100], 8, seven_wide, "padded"),
        ];
        for (dims, c_out, window, what) in cases {
            let [n, c_in, h, w] = dims;
            let [kh, kw] = window.kernel;
            let out = [window.output_size(0, h), window.output_size(1, w)];
            let x = flex(wave(n * c_in * h * w, 7), Shape::new(dims));
            let weight = flex(wave(c_out * c_in * kh * kw, 3), Shape::new([c_out, c_in, kh, kw]));
            let (y, kept) = forward_keeping_input(&x, &weight, &window, out, true);
            let kept = kept.expect("kept");
            let kind = match &kept {
                KeptInput::Columns(c) if c.order == ColumnOrder::TapMajor => "tap-major",
                KeptInput::Columns(_) => "sample-major",
                KeptInput::Padded(padded) => {
                    // Padded as far as the weight gradient reads, so that it takes it.
                    let extent = if shifted_weight_grad2d::applies(c_out, &window, out) {
                        shifted_weight_grad2d::padded_extent(out)
                    } else {
                        direct_weight_grad2d::padded_extent(out)
                    };
                    assert!(padded.serves(dims, &window, extent), "{padded:?}");
                    "padded"
                }
            };
            assert_eq!(kind, what);
            let (plain, none) = forward_keeping_input(&x, &weight, &window, out, false);
            assert!(none.is_none());
            assert_eq!(values(&y), values(&plain), "{what}: forward");
            let g = flex(wave(y.shape().num_elements(), 5), y.shape());
            let (from_kept, rebuilt) = (weight_grad_with(&x, &g, &window, Some(&kept)), weight_grad(&x, &g, &window));
            assert_eq!(values(&from_kept), values(&rebuilt), "{what}: weight gradient");
        }
    }
}
