//! The forward 2-D convolution (and, through it, the input gradient of a
//! stride-1 one) as the weight matrix times columns, on burn-flex's GEMM,
//! in NCHW throughout; or, for few output channels along wide rows, as
//! the direct sums in registers of `direct_conv2d`.
//!
//! burn-flex 0.22 runs `conv2d` as a 3-D convolution: it converts the
//! input to channels-last, builds columns for tiles of 512 output
//! positions, multiplies, and converts the output back. Here the columns
//! are built straight from NCHW by [`columns`](super::columns) (as for the
//! weight gradient), a tile spans whole output rows of every sample,
//! and the product `[C_out, taps] × [taps, positions]` is already the NCHW
//! output: no layout conversion on either side.
//!
//! y[n, co, oh, ow] = Σ_(ci, i, j) w[co, ci, i, j] · x[n, ci, oh·s₀ − p₀ +
//! i·d₀, ow·s₁ − p₁ + j·d₁] (zero outside x).

use std::mem::MaybeUninit;

use rayon::prelude::*;

use burn::backend::TensorMetadata;
use burn::backend::flex::FlexTensor;
use burn::tensor::Shape;

use super::columns::{
    ColumnOrder, ColumnSource, KeptColumns, KeptInput, SMALL_PLANE, TapRows, Window, batch_columns, batch_columns_in,
    rows_per_tile, swap_leading_axes,
};
use super::direct_conv2d::Padded;
use super::flex::{flex, values};
use super::strided_gemm::{self, View};
use super::uninit;
use super::{bf16_gemm, direct_conv2d, direct_weight_grad2d, shifted_weight_grad2d};

/// Multiply-adds of one sample's product from which `gemm` shares it among
/// the threads rather than the samples being shared (burn-flex's
/// threshold for batched products, 192³).
const SHARED_PRODUCT: usize = 192 * 192 * 192;

/// conv2d(x, weight) without bias: x [N, C_in, H, W], weight [C_out, C_in,
/// kh, kw] (f32, one group), output [N, C_out, out_h, out_w].
pub fn forward(input: &FlexTensor, weight: &FlexTensor, window: &Window, out: [usize; 2]) -> FlexTensor {
    forward_keeping_input(input, weight, window, out, false).0
}

/// [`forward`], handing back what it built from the input when `keep`
/// asks ([`KeptInput`]): the columns when it built them in one piece in
/// f32 ([`KeptColumns`]), the padded input when both passes take the
/// direct sums. The weight gradient of a layer whose weight is trained
/// then reads them rather than building them again.
pub(crate) fn forward_keeping_input(
    input: &FlexTensor,
    weight: &FlexTensor,
    window: &Window,
    [out_h, out_w]: [usize; 2],
    keep: bool,
) -> (FlexTensor, Option<KeptInput>) {
    let (xs, ws) = (input.shape(), weight.shape());
    let [n, c_in, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let c_out = ws[0];
    let [kh, kw] = window.kernel;
    let taps = c_in * kh * kw;
    let x = values(input);
    // On AMX tiles, a layer of 32 output channels or more (a whole block
    // of tile rows) with a kernel wider than 1 × 1 is faster as columns
    // times the weight than as direct sums (HEP-CNN `small`'s 3 × 3
    // convolutions of 32 filters; `docs/benchmarks.md`, mixed precision);
    // fewer channels would leave the tiles' rows half empty, and a 1 × 1
    // layer's columns (a copy of its input, K only C_in) cost more than
    // they save (the Tiramisu's transitions).
    let tiles_win = bf16_gemm::tiles_here() && c_out >= 32 && kh * kw > 1;
    if direct_conv2d::applies(c_out, out_w) && !tiles_win {
        let (dims, out) = ([n, c_in, h, w], [out_h, out_w]);
        // Padded as far as the weight gradient reads when it takes the
        // direct sums too, and kept for it.
        let extent = if shifted_weight_grad2d::applies(c_out, window, out) {
            shifted_weight_grad2d::reads_forward_padding(window).then(|| shifted_weight_grad2d::padded_extent(out))
        } else {
            direct_weight_grad2d::applies(c_out, out_w, kw).then(|| direct_weight_grad2d::padded_extent(out))
        };
        let kept = extent.filter(|_| keep).map(|extent| Padded::new(&x, dims, window, extent));
        let y = match &kept {
            Some(padded) => direct_conv2d::forward_padded(padded, dims, &values(weight), c_out, window, out),
            None => direct_conv2d::forward(&x, dims, &values(weight), c_out, window, out),
        };
        return (flex(y, Shape::new([n, c_out, out_h, out_w])), kept.map(KeptInput::Padded));
    }
    let source = ColumnSource::new(&x, [n, c_in, h, w], window);
    let tile_rows = rows_per_tile(n * taps * out_w, out_h);
    let plane = out_h * out_w;
    let kept_columns =
        |columns: FlexTensor, order: ColumnOrder| keep.then_some(KeptInput::Columns(KeptColumns { columns, order }));
    if bf16_gemm::native_here() {
        let (y, kept) = bf16_forward(&source, &values(weight), [n, c_out, out_h, out_w], tile_rows, window, keep);
        return (y, kept.and_then(|(cols, order)| kept_columns(cols, order)));
    }
    if plane < SMALL_PLANE && n > 1 && tile_rows >= out_h {
        let order = ColumnOrder::TapMajor;
        let cols = flex(batch_columns_in(&source, out_w, window, 0..out_h, order), Shape::new([taps, n * plane]));
        let y = small_planes(&values(&cols), &values(weight), [n, c_out, out_h, out_w]);
        return (y, kept_columns(cols, order));
    }
    let shape = Shape::new([n, c_out, out_h, out_w]);
    if taps == 0 || n * c_out * plane == 0 {
        // No input channels (sums of nothing, which `gemm` is not asked
        // for) or no output at all.
        return (flex(vec![0.0; n * c_out * plane], shape), None);
    }
    let weights = values(weight);
    // Each tile's product is written straight into its rows of every
    // sample's output planes (a strided destination), never zeroed first
    // and never copied: burn's `matmul` zeroes a fresh output on one
    // thread and its tiles would then be copied into place.
    let write_tile = |y: &mut [MaybeUninit<f32>], rows: std::ops::Range<usize>, cols: &[f32]| {
        let width = rows.len() * out_w;
        let sample = |(s, y): (usize, &mut [MaybeUninit<f32>]), share: bool| {
            strided_gemm::multiply_into_spare(
                (y, View::rows(c_out, width).strides(plane, 1).at(rows.start * out_w)),
                (&weights, View::rows(c_out, taps)),
                (cols, View::rows(taps, width).at(s * taps * width)),
                share,
            );
        };
        // As burn-flex shares a batch of products: the samples among the
        // threads when there are many or each is small, otherwise each
        // product among them.
        if n >= 4 || (n > 1 && c_out * width * taps < SHARED_PRODUCT) {
            y.par_chunks_mut(c_out * plane).enumerate().for_each(|part| sample(part, false));
        } else {
            y.chunks_mut(c_out * plane).enumerate().for_each(|part| sample(part, true));
        }
    };
    let kept_whole = (tile_rows >= out_h).then(|| batch_columns(&source, out_w, window, 0..out_h));
    // SAFETY: for each sample s, the tiles' rows cover the plane's out_h
    // rows, and each tile's product writes its c_out rows of `width`
    // values, `plane` apart, from `s · c_out · plane + first · out_w`
    // (taps ≥ 1 and a non-empty output, checked above): every one of the
    // n · c_out · plane values.
    #[allow(unsafe_code)]
    let y = unsafe {
        uninit::written_whole(n * c_out * plane, |y| match &kept_whole {
            Some(cols) => write_tile(y, 0..out_h, cols),
            None => {
                for first in (0..out_h).step_by(tile_rows.max(1)) {
                    let rows = first..(first + tile_rows).min(out_h);
                    write_tile(y, rows.clone(), &batch_columns(&source, out_w, window, rows));
                }
            }
        })
    };
    let kept =
        kept_whole.and_then(|cols| kept_columns(flex(cols, Shape::new([n, taps, plane])), ColumnOrder::SampleMajor));
    (flex(y, shape), kept)
}

/// [`forward`] for small output planes (CosmoGAN's 4 × 4 end): the columns
/// of every sample side by side ([`ColumnOrder::TapMajor`], `cols`), one
/// product [C_out, taps] × [taps, N · positions], and the result [C_out,
/// N, plane] turned into [N, C_out, plane].
fn small_planes(cols: &[f32], weights: &[f32], [n, c_out, out_h, out_w]: [usize; 4]) -> FlexTensor {
    let plane = out_h * out_w;
    let taps = weights.len() / c_out.max(1);
    let mut by_channel = vec![0.0f32; c_out * n * plane];
    strided_gemm::multiply(
        (&mut by_channel, View::rows(c_out, n * plane)),
        (weights, View::rows(c_out, taps)),
        (cols, View::rows(taps, n * plane)),
        true,
    );
    let y = swap_leading_axes(&by_channel, [c_out, n, plane]);
    flex(y, Shape::new([n, c_out, out_h, out_w]))
}

/// [`forward`] with bf16 products, and the columns it built when they
/// were one piece and `keep` asks for them (for the weight gradient to
/// read again, as the f32 paths keep theirs). Small output planes with
/// several samples take one product over every sample's columns side by
/// side, as [`small_planes`] does: a product per sample would be a dozen
/// columns wide, half of a 32-column panel empty, and would pack the
/// weight again for each. Otherwise each sample's product of a tile of
/// output rows is written where it lies in the output, the weight packed
/// once ([`bf16_gemm::PackedA`]); when the columns are not kept they are
/// packed as they are made ([`bf16_gemm::PackedB::from_rows`]), never
/// written out in f32.
fn bf16_forward(
    source: &ColumnSource,
    weights: &[f32],
    [n, c_out, out_h, out_w]: [usize; 4],
    tile_rows: usize,
    window: &Window,
    keep: bool,
) -> (FlexTensor, Option<(FlexTensor, ColumnOrder)>) {
    let taps = weights.len() / c_out.max(1);
    let plane = out_h * out_w;
    let shape = Shape::new([n, c_out, out_h, out_w]);
    if plane < SMALL_PLANE && n > 1 && tile_rows >= out_h {
        let order = ColumnOrder::TapMajor;
        let cols = batch_columns_in(source, out_w, window, 0..out_h, order);
        let by_channel = bf16_gemm::gemm(weights, &cols, [c_out, taps, n * plane]);
        let y = swap_leading_axes(&by_channel, [c_out, n, plane]);
        return (flex(y, shape), Some((flex(cols, Shape::new([taps, n * plane])), order)));
    }
    let packed_weights = bf16_gemm::PackedA::new(weights, [c_out, taps]);
    // Kept, the columns are built whole (one tile) and each sample's
    // packed from them; otherwise packed tap by tap as they are made.
    let kept = (keep && tile_rows >= out_h).then(|| batch_columns(source, out_w, window, 0..out_h));
    let write = |y: &mut [MaybeUninit<f32>]| {
        for first in (0..out_h).step_by(tile_rows.max(1)) {
            let rows = first..(first + tile_rows).min(out_h);
            let at = rows.start * out_w;
            let tap_rows = match &kept {
                Some(cols) => Ok(cols),
                None => Err(TapRows::new(source, out_w, window, rows.clone())),
            };
            for s in 0..n {
                let packed = match &tap_rows {
                    Ok(cols) => bf16_gemm::PackedB::new(&cols[s * taps * plane..][..taps * plane], [taps, plane]),
                    Err(made) => {
                        bf16_gemm::PackedB::from_rows([taps, made.width()], |t, out| made.write_tap(s, t, out))
                    }
                };
                packed.multiply_packed_into_spare(&packed_weights, (y, s * c_out * plane + at, plane));
            }
        }
    };
    // SAFETY: for each sample s and channel c, the tiles' rows cover the
    // plane's out_h rows of out_w (tile r writes C's c_out rows of its
    // width, `plane` apart, from `s · c_out · plane + first · out_w`):
    // every value of the n · c_out · plane is written.
    #[allow(unsafe_code)]
    let y = unsafe { uninit::written_whole(n * c_out * plane, write) };
    let kept = kept.map(|cols| (flex(cols, Shape::new([n, taps, plane])), ColumnOrder::SampleMajor));
    (flex(y, shape), kept)
}

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use burn::backend::ops::ModuleOps;
    use burn::tensor::ops::ConvOptions;

    use super::*;
    use crate::kernels::columns::wave;

    #[test]
    fn the_forward_convolution_equals_burns_for_strides_dilations_and_padding() {
        let cases = [
            ([2, 3, 7, 9], 4, [3, 3], [1, 1], [1, 1], [1, 1]),
            ([1, 2, 8, 10], 3, [3, 3], [2, 2], [1, 1], [1, 1]),
            ([2, 2, 9, 9], 2, [3, 3], [1, 1], [2, 2], [2, 2]),
            ([1, 3, 6, 7], 5, [5, 5], [1, 1], [2, 2], [1, 1]),
            ([1, 1, 6, 8], 2, [7, 7], [2, 2], [3, 3], [1, 1]),
            ([1, 2, 5, 5], 1, [3, 3], [1, 1], [6, 6], [6, 6]),
            ([2, 2, 4, 6], 3, [3, 1], [1, 2], [1, 0], [1, 1]),
            // Every sample in one product (output planes under 64
            // positions, several samples): CosmoGAN's 4 × 4 end.
            ([16, 8, 8, 8], 4, [5, 5], [2, 2], [2, 2], [1, 1]),
            // Direct sums (whole blocks of 8 channels, rows of 16 and more).
            ([2, 3, 6, 40], 8, [3, 3], [1, 1], [1, 1], [1, 1]),
            ([1, 2, 9, 45], 16, [7, 7], [2, 2], [3, 3], [1, 1]),
            ([1, 2, 6, 37], 8, [3, 3], [1, 1], [2, 2], [2, 2]),
        ];
        for (dims, c_out, kernel, stride, padding, dilation) in cases {
            let [n, c_in, h, w] = dims;
            let x = flex(wave(n * c_in * h * w, 7), Shape::new(dims));
            let weight =
                flex(wave(c_out * c_in * kernel[0] * kernel[1], 5), Shape::new([c_out, c_in, kernel[0], kernel[1]]));
            let theirs = Flex::conv2d(x.clone(), weight.clone(), None, ConvOptions::new(stride, padding, dilation, 1));
            let out = theirs.shape();
            let window = Window { kernel, stride, padding, dilation };
            let ours = forward(&x, &weight, &window, [out[2], out[3]]);
            assert_eq!(ours.shape(), out);
            for (k, (a, b)) in values(&ours).iter().zip(values(&theirs).iter()).enumerate() {
                assert!((a - b).abs() <= 1e-4 * (1.0 + b.abs()), "{dims:?} {window:?}: y[{k}] = {a}, burn {b}");
            }
        }
    }

    /// Under bf16 on a CPU that has it the products run in
    /// [`bf16_gemm`]: on operands that are already bf16 (as the precision
    /// wrappers hand them over) the result is the f32 convolution's up to
    /// the order of the f32 sums.
    #[test]
    fn in_bf16_the_forward_convolution_sums_the_rounded_operands_in_f32() {
        use crate::kernels::precision::{Precision, scoped};
        if !Precision::Bf16.native() {
            e2e::skip("in_bf16_the_forward_convolution_sums_the_rounded_operands_in_f32", "no AVX512_BF16 on this CPU");
            return;
        }
        // The third: every sample's columns in one product (output planes
        // of 16 positions, 16 samples); the last: tiles of fewer rows than
        // the output, packed as they are made.
        let cases = [
            ([2, 3, 7, 9], 4, [3, 3], [1, 1], [1, 1]),
            ([1, 16, 12, 20], 24, [3, 3], [2, 2], [1, 1]),
            ([16, 8, 8, 8], 4, [5, 5], [2, 2], [2, 2]),
            ([2, 64, 70, 300], 2, [3, 3], [1, 1], [1, 1]),
        ];
        assert!(rows_per_tile(2 * 64 * 9 * 300, 70) < 70);
        for (dims, c_out, kernel, stride, padding) in cases {
            let rounded = |mut v: Vec<f32>| {
                Precision::Bf16.round_in_place(&mut v);
                v
            };
            let x = flex(rounded(wave(dims.iter().product(), 7)), Shape::new(dims));
            let weight = flex(
                rounded(wave(c_out * dims[1] * kernel[0] * kernel[1], 5)),
                Shape::new([c_out, dims[1], kernel[0], kernel[1]]),
            );
            let window = Window { kernel, stride, padding, dilation: [1, 1] };
            let out = [
                (dims[2] + 2 * padding[0] - kernel[0]) / stride[0] + 1,
                (dims[3] + 2 * padding[1] - kernel[1]) / stride[1] + 1,
            ];
            let single = forward(&x, &weight, &window, out);
            let half = scoped(Precision::Bf16, || forward(&x, &weight, &window, out));
            assert_eq!(half.shape(), single.shape());
            // Keeping the columns for the weight gradient packs them from
            // memory instead: the same products, the same bits.
            let (kept, _) = scoped(Precision::Bf16, || forward_keeping_input(&x, &weight, &window, out, true));
            assert_eq!(values(&kept), values(&half), "{dims:?}: kept columns");
            for (a, b) in values(&half).iter().zip(values(&single).iter()) {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{dims:?}: bf16 {a}, f32 {b}");
            }
        }
    }

    #[test]
    fn tiles_of_output_rows_give_the_whole_output() {
        // Enough taps × width that a tile holds fewer rows than the output.
        let dims = [1, 64, 70, 300];
        let x = flex(wave(dims.iter().product(), 3), Shape::new(dims));
        let weight = flex(wave(2 * 64 * 9, 11), Shape::new([2, 64, 3, 3]));
        let window = Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] };
        assert!(rows_per_tile(64 * 9 * 300, 70) < 70);
        let ours = forward(&x, &weight, &window, [70, 300]);
        let theirs = Flex::conv2d(x, weight, None, ConvOptions::new([1, 1], [1, 1], [1, 1], 1));
        for (a, b) in values(&ours).iter().zip(values(&theirs).iter()) {
            assert!((a - b).abs() <= 1e-3 * (1.0 + b.abs()));
        }
    }
}
