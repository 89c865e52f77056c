//! The transposed 2-D convolution (CosmoGAN's generator, and the input
//! gradient of every strided 2-D convolution) as s₀·s₁ ordinary stride-1
//! convolutions, one per output phase, on [`conv2d_forward`].
//!
//! y[n, co, oh, ow] = Σ_(ci, i, j) x[n, ci, ih, iw] · w[ci, co, i, j] over
//! the (ih, iw) with ih·s₀ − p₀ + i = oh and iw·s₁ − p₁ + j = ow.
//!
//! burn-flex multiplies per sample the weight [C_out·kh·kw, C_in] by the
//! input [C_in, H·W] and adds the columns back into place (col2im), one
//! kernel tap at a time. The output rows of one phase r = oh mod s take
//! only the taps i ≡ r + p (mod s), each always from the same input row
//! offset: oh = s·q + r reads ih = q + (r + p − i)/s. So each phase is a
//! stride-1 convolution of x with the sub-kernel of those taps (flipped),
//! and no product is spent on the zeros that a convolution over the
//! zero-stuffed input would multiply. The phases reuse the column builder
//! and the GEMM (f32, or bf16 under `--precision bf16`) of the forward
//! convolution, all samples in one product, and are interleaved into the
//! output at the end. This is the sub-pixel view of the transposed
//! convolution: Shi et al. 2016, "Real-Time Single Image and Video
//! Super-Resolution Using an Efficient Sub-Pixel Convolutional Neural
//! Network", CVPR, §2.2, and Dumoulin & Visin 2016, "A guide to
//! convolution arithmetic for deep learning", §4.

use rayon::prelude::*;

use super::columns::Window;
use super::conv2d_forward;
use super::flex::values;
use burn::backend::TensorMetadata;
use burn::backend::flex::FlexTensor;
use burn::tensor::Shape;

/// Fewest output channels the phases pay for: the columns hold every
/// input channel and tap per output position, which a product with one
/// output channel (CosmoGAN's last layer) uses once; burn's per-sample
/// product then col2im moves far less there.
const MIN_OUT_CHANNELS: usize = 8;

/// One output phase along one axis: which taps it takes and where they
/// read the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Phase {
    /// The phase's first output position (oh mod s).
    first: usize,
    /// Its output positions: first, first + s, ... below the output size.
    outputs: usize,
    /// Its first kernel tap (≡ first + p mod s) and their number.
    first_tap: usize,
    taps: usize,
    /// Zeros before the first input row of its stride-1 convolution.
    padding: usize,
}

/// The phases along an axis with `kernel` taps, `stride` and `padding`,
/// for `output` positions; `None` if a phase's convolution would need
/// negative padding (padding beyond the kernel, which crops the output).
fn phases(kernel: usize, stride: usize, padding: usize, output: usize) -> Option<Vec<Phase>> {
    (0..stride.min(output))
        .map(|first| {
            let first_tap = (first + padding) % stride;
            let taps = kernel.saturating_sub(first_tap).div_ceil(stride);
            // Output q of the phase reads input q + offset − t for its tap t.
            let offset = (first + padding - first_tap) / stride;
            let padding = if taps == 0 { 0 } else { (taps - 1).checked_sub(offset)? };
            Some(Phase { first, outputs: (output - first).div_ceil(stride), first_tap, taps, padding })
        })
        .collect()
}

/// conv_transpose2d(x, weight) without bias, dilation 1, one group: x [N,
/// C_in, H, W], weight [C_in, C_out, kh, kw] (f32), output [N, C_out,
/// out_h, out_w]. `None` where burn's route is the better one (fewer than
/// [`MIN_OUT_CHANNELS`] outputs) or the geometry has no phase convolution
/// (padding larger than the kernel).
pub fn forward(
    x: &FlexTensor,
    weight: &FlexTensor,
    stride: [usize; 2],
    padding: [usize; 2],
    [out_h, out_w]: [usize; 2],
) -> Option<FlexTensor> {
    let (xs, ws) = (x.shape(), weight.shape());
    if xs.num_dims() != 4 || ws.num_dims() != 4 || ws[0] != xs[1] || stride.contains(&0) {
        return None;
    }
    let [n, c_in, h, w] = [xs[0], xs[1], xs[2], xs[3]];
    let [c_out, kh, kw] = [ws[1], ws[2], ws[3]];
    if c_out < MIN_OUT_CHANNELS || n * c_in * h * w == 0 {
        return None;
    }
    let rows = phases(kh, stride[0], padding[0], out_h)?;
    let cols = phases(kw, stride[1], padding[1], out_w)?;
    let weights = values(weight);
    let plane = out_h * out_w;
    let mut y = vec![0.0f32; n * c_out * plane];
    for row in &rows {
        for col in &cols {
            if row.taps == 0 || col.taps == 0 || row.outputs == 0 || col.outputs == 0 {
                continue;
            }
            let sub = sub_kernel(&weights, [c_in, c_out, kh, kw], stride, [row, col]);
            let window = Window {
                kernel: [row.taps, col.taps],
                stride: [1, 1],
                padding: [row.padding, col.padding],
                dilation: [1, 1],
            };
            let sub = super::flex::flex(sub, Shape::new([c_out, c_in, row.taps, col.taps]));
            let part = conv2d_forward::forward(x, &sub, &window, [row.outputs, col.outputs]);
            interleave(&values(&part), &mut y, [out_h, out_w], stride, [row, col]);
        }
    }
    Some(super::flex::flex(y, Shape::new([n, c_out, out_h, out_w])))
}

/// The phase's stride-1 convolution weight [C_out, C_in, taps₀, taps₁]:
/// its taps of `weight` [C_in, C_out, kh, kw], last first (the tap read
/// from the lowest input row comes last along the kernel).
fn sub_kernel(
    weight: &[f32],
    [c_in, c_out, kh, kw]: [usize; 4],
    stride: [usize; 2],
    [row, col]: [&Phase; 2],
) -> Vec<f32> {
    let mut sub = Vec::with_capacity(c_out * c_in * row.taps * col.taps);
    for co in 0..c_out {
        for ci in 0..c_in {
            let base = (ci * c_out + co) * kh * kw;
            for u in 0..row.taps {
                let i = row.first_tap + stride[0] * (row.taps - 1 - u);
                for v in 0..col.taps {
                    let j = col.first_tap + stride[1] * (col.taps - 1 - v);
                    sub.push(weight[base + i * kw + j]);
                }
            }
        }
    }
    sub
}

/// Writes a phase's output [N, C_out, rows, cols] into every s-th row and
/// column of `y` [N, C_out, out_h, out_w] from its first position.
fn interleave(part: &[f32], y: &mut [f32], [out_h, out_w]: [usize; 2], stride: [usize; 2], [row, col]: [&Phase; 2]) {
    let part_plane = row.outputs * col.outputs;
    y.par_chunks_mut(out_h * out_w).zip(part.par_chunks(part_plane)).for_each(|(plane, from)| {
        for (q, values) in from.chunks(col.outputs).enumerate() {
            let line = &mut plane[(row.first + q * stride[0]) * out_w..][..out_w];
            for (k, value) in values.iter().enumerate() {
                line[col.first + k * stride[1]] = *value;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::backend::Flex;
    use burn::backend::ops::ModuleOps;
    use burn::tensor::ops::ConvTransposeOptions;

    use super::*;
    use crate::kernels::columns::wave;
    use crate::kernels::flex::flex;

    #[test]
    fn phases_cover_every_output_once_with_every_tap_once() {
        for (kernel, stride, padding, output) in
            [(5, 2, 2, 16), (3, 2, 1, 9), (4, 3, 1, 11), (1, 2, 0, 8), (2, 4, 0, 9)]
        {
            let phases = phases(kernel, stride, padding, output).unwrap();
            assert_eq!(phases.iter().map(|p| p.outputs).sum::<usize>(), output);
            assert_eq!(phases.iter().map(|p| p.taps).sum::<usize>(), kernel);
        }
        // Padding past the kernel would start a phase's rows before its
        // input: refused.
        assert!(phases(3, 1, 3, 8).is_none());
    }

    #[test]
    fn the_phases_equal_burns_transposed_convolution() {
        // (input, C_out, kernel, stride, padding, output padding): the
        // generator's 5 × 5 upsampling by 2, odd kernels and strides, a
        // stride wider than the kernel, uneven axes.
        let cases = [
            ([2, 3, 4, 5], 8, [5, 5], [2, 2], [2, 2], [1, 1]),
            ([1, 4, 5, 7], 8, [3, 3], [2, 2], [1, 1], [1, 0]),
            ([2, 2, 3, 4], 16, [4, 3], [3, 2], [1, 0], [0, 1]),
            ([1, 3, 4, 4], 8, [2, 2], [3, 3], [0, 0], [2, 0]),
            ([1, 5, 6, 3], 9, [5, 3], [1, 1], [2, 1], [0, 0]),
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
            let ours = forward(&x, &weight, stride, padding, [out[2], out[3]]).unwrap();
            assert_eq!(ours.shape(), out);
            for (k, (a, b)) in values(&ours).iter().zip(values(&theirs).iter()).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
                    "{dims:?} {kernel:?} {stride:?}: y[{k}] = {a}, burn {b}"
                );
            }
        }
    }

    #[test]
    fn few_output_channels_and_padding_beyond_the_kernel_are_left_to_burn() {
        let x = flex(wave(2 * 3 * 4 * 4, 1), Shape::new([2, 3, 4, 4]));
        let one_out = flex(wave(3 * 25, 2), Shape::new([3, 1, 5, 5]));
        assert!(forward(&x, &one_out, [2, 2], [2, 2], [8, 8]).is_none());
        let wide = flex(wave(3 * 8 * 9, 2), Shape::new([3, 8, 3, 3]));
        assert!(forward(&x, &wide, [1, 1], [3, 3], [2, 2]).is_none());
    }
}
