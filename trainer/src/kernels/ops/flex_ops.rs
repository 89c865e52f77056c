//! The direct kernels as burn's Flex CPU backend runs them: the shapes
//! they take, and [`KernelOps`] for `Flex`.

use burn::backend::flex::FlexTensor;
use burn::backend::ops::{ActivationOps, ModuleOps};
use burn::backend::{Flex, TensorMetadata};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{DType, Shape};

use crate::kernels::columns::{KeptInput, Window};
use crate::kernels::direct_conv::ConvShape;
use crate::kernels::flex::{flex, values};
use crate::kernels::precision::Precision;
use crate::kernels::{
    activation, batch_norm, conv2d_forward, direct_conv, direct_pool, lstm_cell, lstm_sequence, twin,
};

use super::backward::{conv_transpose2d_flex, round_flex};
use super::{KernelOps, MIN_DIRECT_WIDTH, composed};

/// The shape of a convolution the direct kernels take, or `None` for
/// anything they do not cover (which then goes to burn's `conv3d`, which
/// also reports shapes that do not fit together).
pub(super) fn direct_conv_shape(x: &FlexTensor, weight: &FlexTensor, bias: &FlexTensor) -> Option<ConvShape> {
    direct_conv_shape_padded(x, weight, bias, Padding::Same)
}

/// How a 3-D convolution pads its input: `k / 2` zeros on every side
/// (output volume = input volume) or none (the output `k - 1` smaller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Padding {
    Same,
    Valid,
}

impl Padding {
    /// The volume of the input of a convolution of `shape` (whose volume
    /// is the output's).
    pub(super) fn input_volume(self, shape: &ConvShape) -> [usize; 3] {
        match self {
            Padding::Same => shape.volume,
            Padding::Valid => shape.padded(),
        }
    }
}

/// [`direct_conv_shape`] of a convolution padded as `padding` says; the
/// shape's volume is the output's. A valid convolution's input gradient
/// is a "same" convolution at the input's volume, which must fit the
/// kernels too.
pub(super) fn direct_conv_shape_padded(
    x: &FlexTensor,
    weight: &FlexTensor,
    bias: &FlexTensor,
    padding: Padding,
) -> Option<ConvShape> {
    if [x.dtype(), weight.dtype(), bias.dtype()].iter().any(|t| *t != DType::F32) {
        return None;
    }
    let (xs, ws, bs) = (x.shape(), weight.shape(), bias.shape());
    let (&[batch, c_in, d, h, w], &[c_out, weight_c_in, k, k_h, k_w], &[bias_len]) =
        (xs.as_slice(), ws.as_slice(), bs.as_slice())
    else {
        return None;
    };
    let fits = k % 2 == 1 && k_h == k && k_w == k && weight_c_in == c_in && bias_len == c_out;
    let volume = match padding {
        Padding::Same => [d, h, w],
        // Zero (no direct kernel; burn reports the misfit) where k > e.
        Padding::Valid => [d, h, w].map(|e| (e + 1).saturating_sub(k)),
    };
    let shape = ConvShape { batch, c_in, c_out, volume, kernel: k };
    let runs = |s: &ConvShape| s.volume[2] >= MIN_DIRECT_WIDTH || direct_conv::channels_in_lanes(s);
    let input = ConvShape { volume: padding.input_volume(&shape), ..shape };
    (fits && volume.iter().all(|&e| e > 0) && runs(&shape) && runs(&input)).then_some(shape)
}

/// The volume of a pool the direct kernels take (f32, even edges).
pub(super) fn direct_pool_volume(x: &FlexTensor) -> Option<[usize; 3]> {
    let shape = x.shape();
    let &[_, _, d, h, w] = shape.as_slice() else { return None };
    (x.dtype() == DType::F32 && [d, h, w].iter().all(|e| e % 2 == 0)).then_some([d, h, w])
}

/// The window of a 2-D convolution our weight gradient takes (f32, one
/// group), or `None` for burn's.
pub(super) fn conv2d_window(
    tensors: [&FlexTensor; 2],
    kernel: &FlexTensor,
    [stride, padding, dilation]: [[usize; 2]; 3],
    groups: usize,
) -> Option<Window> {
    let f32s = tensors.iter().chain([&kernel]).all(|t| t.dtype() == DType::F32);
    let shape = kernel.shape();
    (f32s && groups == 1 && shape.num_dims() == 4).then(|| Window {
        kernel: [shape[2], shape[3]],
        stride,
        padding,
        dilation,
    })
}

/// conv2d without bias on the CPU: ours ([`conv2d_forward`]) where the
/// window is larger than one pixel, burn-flex's otherwise (its 1 × 1 path
/// multiplies the NCHW input in place, without columns) and for groups or
/// other dtypes.
pub(super) fn conv2d_flex(x: FlexTensor, weight: FlexTensor, options: ConvOptions<2>) -> FlexTensor {
    conv2d_flex_keeping(x, weight, options, false).0
}

/// [`conv2d_flex`], with what ours built from the input when `keep` asks
/// ([`conv2d_forward::forward_keeping_input`]).
pub(super) fn conv2d_flex_keeping(
    x: FlexTensor,
    weight: FlexTensor,
    options: ConvOptions<2>,
    keep: bool,
) -> (FlexTensor, Option<KeptInput>) {
    let geometry = [options.stride, options.padding_begin(), options.dilation];
    let window = conv2d_window([&x, &weight], &weight, geometry, options.groups).filter(|w| w.kernel != [1, 1]);
    let (size, end) = (x.shape(), options.padding_end());
    // An input smaller than the window has no output: burn's says so.
    let out = |window: &Window, axis: usize| {
        let reach = window.dilation[axis] * (window.kernel[axis] - 1) + 1;
        let span = (size[2 + axis] + window.padding[axis] + end[axis]).checked_sub(reach)?;
        Some(span / window.stride[axis] + 1)
    };
    let Some(window) = window else {
        return (Flex::conv2d(x, weight, None, options), None);
    };
    match (out(&window, 0), out(&window, 1)) {
        (Some(out_h), Some(out_w)) => conv2d_forward::forward_keeping_input(&x, &weight, &window, [out_h, out_w], keep),
        _ => (Flex::conv2d(x, weight, None, options), None),
    }
}

/// U of an LSTM step's f32 gates [B, 4U] and cell state [B, U], or `None`
/// for anything else (burn's composition then runs, and reports shapes
/// that do not fit).
pub(super) fn lstm_units(gates: &FlexTensor, c: &FlexTensor) -> Option<usize> {
    let (g, c_shape) = (gates.shape(), c.shape());
    let f32s = gates.dtype() == DType::F32 && c.dtype() == DType::F32;
    let fits = g.num_dims() == 2 && c_shape.num_dims() == 2 && g[0] == c_shape[0] && g[1] == 4 * c_shape[1];
    (f32s && fits && c_shape[1] > 0).then(|| c_shape[1])
}

/// The shape of an LSTM sequence for f32 `gates_in` [B, T, 4U], `w` [U,
/// 4U] and `bias` [4U] with U ≥ 1; `None` otherwise.
pub(super) fn lstm_sequence_shape(
    gates_in: &FlexTensor,
    w: &FlexTensor,
    bias: &FlexTensor,
) -> Option<lstm_sequence::Sequence> {
    let f32s = [gates_in, w, bias].iter().all(|t| t.dtype() == DType::F32);
    let (x, ws, bs) = (gates_in.shape(), w.shape(), bias.shape());
    if !f32s || x.num_dims() != 3 || ws.num_dims() != 2 || bs.num_dims() != 1 {
        return None;
    }
    let g = x[2];
    let fits = g % 4 == 0 && g > 0 && ws[0] == g / 4 && ws[1] == g && bs[0] == g;
    fits.then_some(lstm_sequence::Sequence {
        batch: x[0],
        steps: x[1],
        units: g / 4,
        precision: crate::kernels::precision::current(),
    })
}

/// The first copies of a twin batch [2N, ...] ([`twin::first_copies`]).
pub(super) fn first_copies_flex(x: &FlexTensor) -> FlexTensor {
    let mut shape = x.shape();
    let sample = shape.num_elements() / shape[0].max(1);
    shape.as_mut_slice()[0] /= 2;
    flex(twin::first_copies(&values(x), sample), shape)
}

/// The twin batch of x [N, ...] ([`twin::twice`]).
pub(super) fn twice_flex(x: &FlexTensor) -> FlexTensor {
    let mut shape = x.shape();
    let sample = shape.num_elements() / shape[0].max(1);
    shape.as_mut_slice()[0] *= 2;
    flex(twin::twice(&values(x), sample), shape)
}

pub(super) fn conv_forward(shape: &ConvShape, x: &FlexTensor, weight: &FlexTensor, bias: &FlexTensor) -> FlexTensor {
    let [d, h, w] = shape.volume;
    let y = direct_conv::forward(shape, &values(x), &values(weight), Some(&values(bias)));
    flex(y, Shape::new([shape.batch, shape.c_out, d, h, w]))
}

/// The layout of x [N, C, ...] (f32) in `groups` groups of samples for
/// [`batch_norm`]'s kernels; `None` (burn's composition) otherwise.
pub(super) fn norm_layout(x: &FlexTensor, groups: usize) -> Option<batch_norm::Layout> {
    let shape = x.shape();
    let (n, c) = (*shape.as_slice().first()?, *shape.as_slice().get(1)?);
    let fits = x.dtype() == DType::F32 && groups > 0 && n.is_multiple_of(groups) && n * c > 0;
    fits.then(|| batch_norm::Layout { samples: n, channels: c, positions: shape.num_elements() / (n * c), groups })
}

/// [2, G, C] statistics as (mean, variance), each [G · C].
pub(super) fn split_statistics(stats: &[f32], layout: batch_norm::Layout) -> (&[f32], &[f32]) {
    stats.split_at(layout.groups * layout.channels)
}

/// The shape of `x` [N, C, D, H, W] halved in D, H and W.
/// [H, W] of a tensor [N, C, H, W] of f32 with both even, which the
/// direct 2-D pool takes; `None` for burn's.
pub(super) fn direct_pool_plane(x: &FlexTensor) -> Option<[usize; 2]> {
    let shape = x.shape();
    let &[_, _, h, w] = shape.as_slice() else { return None };
    (x.dtype() == DType::F32 && h % 2 == 0 && w % 2 == 0).then_some([h, w])
}

pub(super) fn pooled_shape(x: &FlexTensor) -> Shape {
    let mut shape = x.shape();
    for e in shape.as_mut_slice().iter_mut().skip(2) {
        *e /= 2;
    }
    shape
}

impl KernelOps for Flex {
    fn fused_relu(x: FlexTensor) -> FlexTensor {
        if x.dtype() == DType::F32 { activation::relu(x) } else { Flex::relu(x) }
    }

    fn fused_leaky_relu(x: FlexTensor, negative_slope: f32) -> FlexTensor {
        if x.dtype() == DType::F32 {
            activation::leaky_relu(x, negative_slope)
        } else {
            Flex::leaky_relu(x, negative_slope.into())
        }
    }

    fn conv3d_same(x: FlexTensor, weight: FlexTensor, bias: FlexTensor) -> FlexTensor {
        match direct_conv_shape(&x, &weight, &bias) {
            Some(shape) => conv_forward(&shape, &x, &weight, &bias),
            None => composed::conv3d_same::<Self>(x, weight, bias),
        }
    }

    fn conv3d_valid(x: FlexTensor, weight: FlexTensor, bias: FlexTensor) -> FlexTensor {
        match direct_conv_shape_padded(&x, &weight, &bias, Padding::Valid) {
            Some(shape) => {
                let [d, h, w] = shape.volume;
                let y = direct_conv::forward_valid(&shape, &values(&x), &values(&weight), Some(&values(&bias)));
                flex(y, Shape::new([shape.batch, shape.c_out, d, h, w]))
            }
            None => composed::conv3d_same_cropped::<Self>(x, weight, bias),
        }
    }

    fn max_pool3d_2(x: FlexTensor) -> FlexTensor {
        match direct_pool_volume(&x) {
            Some(volume) => flex(direct_pool::max_forward(volume, &values(&x)).0, pooled_shape(&x)),
            None => composed::pool3d_2::<Self>(x, false),
        }
    }

    fn avg_pool3d_2(x: FlexTensor) -> FlexTensor {
        match direct_pool_volume(&x) {
            Some(volume) => flex(direct_pool::avg_forward(volume, &values(&x)), pooled_shape(&x)),
            None => composed::pool3d_2::<Self>(x, true),
        }
    }

    fn conv2d_unbiased(x: FlexTensor, weight: FlexTensor, options: ConvOptions<2>) -> FlexTensor {
        conv2d_flex(x, weight, options)
    }

    fn conv_transpose2d_unbiased(x: FlexTensor, weight: FlexTensor, options: ConvTransposeOptions<2>) -> FlexTensor {
        conv_transpose2d_flex(&x, &weight, &options)
    }

    fn conv2d_twin_unbiased(x: FlexTensor, weight: FlexTensor, options: ConvOptions<2>) -> FlexTensor {
        twice_flex(&conv2d_flex(first_copies_flex(&x), weight, options))
    }

    fn lstm_sequence(gates_in: FlexTensor, w: FlexTensor, bias: FlexTensor) -> FlexTensor {
        match lstm_sequence_shape(&gates_in, &w, &bias) {
            Some(seq) => {
                let (out, _) = lstm_sequence::forward(seq, &values(&gates_in), &values(&w), &values(&bias));
                flex(out, Shape::new([seq.batch, seq.steps, seq.units]))
            }
            None => composed::lstm_sequence::<Self>(gates_in, w, bias),
        }
    }

    fn lstm_cell_state(gates: FlexTensor, c: FlexTensor) -> FlexTensor {
        match lstm_units(&gates, &c) {
            Some(units) => flex(lstm_cell::state(&values(&gates), &values(&c), units), c.shape()),
            None => composed::lstm_cell_state::<Self>(gates, c),
        }
    }

    fn lstm_cell_output(gates: FlexTensor, c_next: FlexTensor) -> FlexTensor {
        match lstm_units(&gates, &c_next) {
            Some(units) => flex(lstm_cell::output(&values(&gates), &values(&c_next), units), c_next.shape()),
            None => composed::lstm_cell_output::<Self>(gates, c_next),
        }
    }

    fn batch_norm_twin_with_statistics(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        statistics: FlexTensor,
        groups: usize,
        epsilon: f64,
    ) -> FlexTensor {
        // Without a backward pass the copies normalise as any two groups.
        Self::batch_norm_with_statistics(x, gamma, beta, statistics, groups, epsilon)
    }

    fn round_to(x: FlexTensor, precision: Precision) -> FlexTensor {
        round_flex(x, precision)
    }

    fn batch_statistics(x: FlexTensor, groups: usize) -> FlexTensor {
        match norm_layout(&x, groups) {
            Some(layout) => {
                let (mean, variance) = batch_norm::statistics(&values(&x), layout);
                flex([mean, variance].concat(), Shape::new([2, groups, layout.channels]))
            }
            None => composed::batch_statistics::<Flex>(x, groups),
        }
    }

    fn batch_norm_with_statistics(
        x: FlexTensor,
        gamma: FlexTensor,
        beta: FlexTensor,
        statistics: FlexTensor,
        groups: usize,
        epsilon: f64,
    ) -> FlexTensor {
        match norm_layout(&x, groups).filter(|_| [&gamma, &beta, &statistics].iter().all(|t| t.dtype() == DType::F32)) {
            Some(layout) => {
                let stats = values(&statistics);
                let (gamma, beta) = (values(&gamma), values(&beta));
                let affine = batch_norm::Affine { gamma: &gamma, beta: &beta, epsilon: epsilon as f32 };
                let y = batch_norm::forward(&values(&x), layout, split_statistics(&stats, layout), affine);
                flex(y, x.shape())
            }
            None => composed::batch_norm_train::<Flex>(x, gamma, beta, groups, epsilon),
        }
    }

    fn max_pool2d_2(x: FlexTensor) -> FlexTensor {
        match direct_pool_plane(&x) {
            Some(plane) => flex(direct_pool::max2_forward(plane, &values(&x)).0, pooled_shape(&x)),
            None => Self::max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], false),
        }
    }
}
