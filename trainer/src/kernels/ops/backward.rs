//! The hand-written backward passes of our kernels on `Autodiff<Flex>`,
//! one burn `Backward` step per operation.

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::{FloatTensorOps, ModuleOps};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Flex, TensorMetadata};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{DType, Shape};

use crate::kernels::columns::KeptInput;
use crate::kernels::direct_conv::{ConvShape, PaddedInput};
use crate::kernels::flex::{flex, values};
use crate::kernels::precision::Precision;
use crate::kernels::{
    activation, batch_norm, conv_transpose2d, conv2d_forward, conv2d_grad, dense_input_grad, direct_conv, direct_pool,
    lstm_sequence,
};

use super::composed;
use super::flex_ops::{
    Padding, conv2d_flex, conv2d_window, first_copies_flex, lstm_sequence_shape, lstm_units, split_statistics,
};

pub(super) type AutodiffFloat<C> = FloatTensor<Autodiff<Flex, C>>;
pub(super) type NodeId = burn::backend::autodiff::NodeId;

#[derive(Debug)]
pub(super) struct Conv2dBackward;

impl Backward<Flex, 2> for Conv2dBackward {
    /// x, the weight, the options, what the forward pass built from x
    /// that the weight gradient reads again, and whether x is a twin
    /// batch (the weight gradient then reads its first copies only, which
    /// are what the forward pass built from).
    type State = (NodeId, NodeId, ConvOptions<2>, Option<Arc<KeptInput>>, bool);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_weight] = ops.parents;
        let out_grad = grads.consume::<Flex>(&ops.node);
        let (x_state, weight_state, options, kept, twin) = ops.state;
        let x: FlexTensor = checkpointer.retrieve_node_output(x_state);
        let weight: FlexTensor = checkpointer.retrieve_node_output(weight_state);
        if let Some(node) = node_weight {
            let firsts = twin.then(|| (first_copies_flex(&x), first_copies_flex(&out_grad)));
            let (x, out_grad) = firsts.as_ref().map_or((&x, &out_grad), |(x, g)| (x, g));
            let geometry = [options.stride, options.padding_begin(), options.dilation];
            let grad = match conv2d_window([x, out_grad], &weight, geometry, options.groups) {
                Some(window) => conv2d_grad::weight_grad_with(x, out_grad, &window, kept.as_deref()),
                None => Flex::conv2d_weight_backward(x.clone(), weight.clone(), out_grad.clone(), options.clone()),
            };
            grads.register::<Flex>(node.id, grad);
        }
        if let Some(node) = node_x {
            grads.register::<Flex>(node.id, conv2d_input_grad(x, weight, out_grad, options));
        }
    }
}

/// dX of a 2-D convolution: the transposed convolution of the output
/// gradient with the same weight. Strided, with one group, dilation 1 and
/// the same padding on both sides (CosmoGAN's discriminator, DeepLabv3+'s
/// encoder), it runs as ours ([`conv_transpose2d`]), the output padding
/// chosen to give back the input's size: burn's adds every column back
/// into place one tap at a time, and took a sixth of a CosmoGAN `small`
/// step (`docs/benchmarks.md`, CosmoGAN). With stride 1 and one group it
/// is the forward convolution of the output gradient with the kernel
/// flipped in space and its channel axes swapped (padding d·(k−1) − p on
/// each side), which burn-flex runs as columns times a matrix; anything
/// else is burn's transposed convolution.
pub(super) fn conv2d_input_grad(
    x: FlexTensor,
    weight: FlexTensor,
    out_grad: FlexTensor,
    options: ConvOptions<2>,
) -> FlexTensor {
    let w = weight.shape();
    let reach = |axis: usize| options.dilation[axis] * (w[2 + axis] - 1);
    let (begin, end) = (options.padding_begin(), options.padding_end());
    let fits = (0..2).all(|a| begin[a] <= reach(a) && end[a] <= reach(a));
    if options.stride != [1, 1]
        && options.groups == 1
        && options.dilation == [1, 1]
        && w.num_dims() == 4
        && begin == end
    {
        let (xs, gs) = (x.shape(), out_grad.shape());
        // The rows and columns past the last output's window that the
        // input still has (fewer than a stride): the transposed
        // convolution's output padding.
        let pad_out = |a: usize| -> Option<usize> {
            let reached = gs.get(2 + a)?.checked_sub(1)? * options.stride[a] + w[2 + a];
            (xs.get(2 + a)? + 2 * begin[a]).checked_sub(reached).filter(|&p| p < options.stride[a])
        };
        if let (Some(p0), Some(p1)) = (pad_out(0), pad_out(1)) {
            let transposed = ConvTransposeOptions::new(options.stride, begin, [p0, p1], [1, 1], 1);
            return conv_transpose2d_flex(&out_grad, &weight, &transposed);
        }
    }
    if options.stride != [1, 1] || options.groups != 1 || w.num_dims() != 4 || !fits {
        return Flex::conv2d_x_backward(x, weight, out_grad, options);
    }
    let flipped = Flex::float_flip(Flex::float_swap_dims(weight, 0, 1), &[2, 3]);
    let padding = [(reach(0) - begin[0], reach(0) - end[0]), (reach(1) - begin[1], reach(1) - end[1])];
    conv2d_flex(out_grad, flipped, ConvOptions::new_with_padding([1, 1], padding, options.dilation, 1))
}

/// conv_transpose2d without bias on the CPU: ours ([`conv_transpose2d`])
/// for f32, one group and dilation 1, burn-flex's otherwise.
pub(super) fn conv_transpose2d_flex(
    x: &FlexTensor,
    weight: &FlexTensor,
    options: &ConvTransposeOptions<2>,
) -> FlexTensor {
    let (size, kernel) = (x.shape(), weight.shape());
    let out = |axis: usize| -> Option<usize> {
        let grown = size.get(2 + axis)?.checked_sub(1)? * options.stride[axis]
            + kernel.get(2 + axis)?.checked_sub(1)?
            + options.padding_out[axis]
            + 1;
        grown.checked_sub(2 * options.padding[axis]).filter(|&o| o > 0)
    };
    let plain = options.groups == 1 && options.dilation == [1, 1] && size.num_dims() == 4 && kernel.num_dims() == 4;
    let out = if plain { out(0).zip(out(1)).map(|(h, w)| [h, w]) } else { None };
    let geometry = conv_transpose2d::Geometry {
        kernel: [kernel.get(2).copied().unwrap_or(0), kernel.get(3).copied().unwrap_or(0)],
        stride: options.stride,
        padding: options.padding,
    };
    out.and_then(|out| conv_transpose2d_ours(x, weight, &geometry, out))
        .unwrap_or_else(|| Flex::conv_transpose2d(x.clone(), weight.clone(), None, options.clone()))
}

/// [`conv_transpose2d::forward`] of x [N, C_in, H, W] and weight [C_in,
/// C_out, kh, kw] (f32) into `out` [out_h, out_w], when the kernel applies.
pub(super) fn conv_transpose2d_ours(
    x: &FlexTensor,
    weight: &FlexTensor,
    geometry: &conv_transpose2d::Geometry,
    out: [usize; 2],
) -> Option<FlexTensor> {
    let (xs, ws) = (x.shape(), weight.shape());
    let f32s = x.dtype() == DType::F32 && weight.dtype() == DType::F32;
    if !f32s || xs.num_dims() != 4 || ws.num_dims() != 4 || ws[0] != xs[1] {
        return None;
    }
    let dims = [xs[0], xs[1], xs[2], xs[3]];
    let c_out = ws[1];
    if !conv_transpose2d::applies(geometry, c_out, [dims[2], dims[3]]) || [ws[2], ws[3]] != geometry.kernel {
        return None;
    }
    let y = conv_transpose2d::forward(&values(x), dims, &values(weight), c_out, geometry, out);
    Some(flex(y, Shape::new([dims[0], c_out, out[0], out[1]])))
}

#[derive(Debug)]
pub(super) struct ConvTranspose2dBackward;

impl Backward<Flex, 2> for ConvTranspose2dBackward {
    type State = (NodeId, NodeId, ConvTransposeOptions<2>);

    /// A transposed convolution is the input gradient of the convolution
    /// with the same window, so its weight gradient is that convolution's
    /// weight gradient with the roles swapped: its output gradient as the
    /// input, its input as the output gradient.
    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_weight] = ops.parents;
        let out_grad = grads.consume::<Flex>(&ops.node);
        let (x_state, weight_state, options) = ops.state;
        let x: FlexTensor = checkpointer.retrieve_node_output(x_state);
        let weight: FlexTensor = checkpointer.retrieve_node_output(weight_state);
        if let Some(node) = node_weight {
            let geometry = [options.stride, options.padding, options.dilation];
            let grad = match conv2d_window([&x, &out_grad], &weight, geometry, options.groups) {
                Some(window) => conv2d_grad::weight_grad(&out_grad, &x, &window),
                None => {
                    Flex::conv_transpose2d_weight_backward(x.clone(), weight.clone(), out_grad.clone(), options.clone())
                }
            };
            grads.register::<Flex>(node.id, grad);
        }
        if let Some(node) = node_x {
            grads.register::<Flex>(node.id, conv_transpose2d_input_grad(&x, weight, out_grad, options));
        }
    }
}

/// The input gradient of a transposed convolution is the convolution of
/// its output gradient with the same weight ([C_in, C_out, kh, kw] is the
/// convolution's [C_out, C_in, kh, kw] read the other way) and window: on
/// [`conv2d_forward`] rather than burn-flex's (which converts to channels
/// last and back), with the output the size of the input, which the
/// output padding makes unambiguous.
pub(super) fn conv_transpose2d_input_grad(
    x: &FlexTensor,
    weight: FlexTensor,
    out_grad: FlexTensor,
    options: ConvTransposeOptions<2>,
) -> FlexTensor {
    let geometry = [options.stride, options.padding, options.dilation];
    let size = x.shape();
    match conv2d_window([&out_grad, x], &weight, geometry, options.groups) {
        Some(window) if size.num_dims() == 4 => {
            conv2d_forward::forward(&out_grad, &weight, &window, [size[2], size[3]])
        }
        _ => Flex::conv_transpose2d_x_backward(weight, out_grad, options),
    }
}

#[derive(Debug)]
pub(super) struct ConvBackward;

/// The backward pass keeps the input as the forward pass padded it (the
/// weight gradient reads it padded), not the input itself: one copy of
/// every convolution input fewer per step.
impl Backward<Flex, 3> for ConvBackward {
    type State = (Arc<PaddedInput>, NodeId, ConvShape, Padding);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_weight, node_bias] = ops.parents;
        let out_grad = grads.consume::<Flex>(&ops.node);
        let out_grad = values(&out_grad);
        let (padded, weight_state, shape, padding) = ops.state;
        let weight: FlexTensor = checkpointer.retrieve_node_output(weight_state);
        if let Some(node) = node_x {
            let grad = match padding {
                Padding::Same => direct_conv::input_grad(&shape, &values(&weight), &out_grad),
                Padding::Valid => direct_conv::input_grad_valid(&shape, &values(&weight), &out_grad),
            };
            let [d, h, w] = padding.input_volume(&shape);
            grads.register::<Flex>(node.id, flex(grad, Shape::new([shape.batch, shape.c_in, d, h, w])));
        }
        if let Some(node) = node_weight {
            let grad = direct_conv::weight_grad_from_padded(&padded, &out_grad);
            grads.register::<Flex>(node.id, flex(grad, weight.shape()));
        }
        if let Some(node) = node_bias {
            grads.register::<Flex>(node.id, flex(direct_conv::bias_grad(&shape, &out_grad), Shape::new([shape.c_out])));
        }
    }
}

/// `x` (f32) rounded to `precision`, in place when `x` holds its values
/// alone (no copy), into a new buffer otherwise; another dtype goes
/// through burn's casts.
pub(super) fn round_flex(mut x: FlexTensor, precision: Precision) -> FlexTensor {
    if precision == Precision::F32 {
        return x;
    }
    if x.dtype() != DType::F32 {
        return composed::round_to::<Flex>(x, precision);
    }
    if x.is_contiguous()
        && x.layout().start_offset() == 0
        && let Some(values) = x.try_storage_mut::<f32>()
    {
        precision.round_in_place(values);
        return x;
    }
    flex(precision.rounded(&values(&x)), x.shape())
}

#[derive(Debug)]
pub(super) struct RoundBackward;

impl Backward<Flex, 1> for RoundBackward {
    type State = Precision;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        if let Some(node) = node {
            grads.register::<Flex>(node.id, round_flex(grad, ops.state));
        }
    }
}

#[derive(Debug)]
pub(super) struct BatchNormBackward;

impl Backward<Flex, 3> for BatchNormBackward {
    /// The input, γ, the statistics ([2, G, C] values), the layout, ε and
    /// every how many groups train γ and β (2 on a twin batch).
    type State = (FlexTensor, FlexTensor, Vec<f32>, batch_norm::Layout, f32, usize);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let dy = grads.consume::<Flex>(&ops.node);
        let (x, gamma, stats, layout, epsilon, every) = ops.state;
        let statistics = split_statistics(&stats, layout);
        let affine = (&values(&gamma)[..], epsilon);
        let (dx, d_gamma, d_beta) =
            batch_norm::backward_trained_by(&values(&x), &values(&dy), layout, statistics, affine, every);
        let channels = Shape::new([layout.channels]);
        if let Some(node) = node_x {
            grads.register::<Flex>(node.id, flex(dx, x.shape()));
        }
        if let Some(node) = node_gamma {
            grads.register::<Flex>(node.id, flex(d_gamma, channels.clone()));
        }
        if let Some(node) = node_beta {
            grads.register::<Flex>(node.id, flex(d_beta, channels));
        }
    }
}

/// The forward and backward halves of one LSTM cell operation
/// ([`lstm_cell::state`] with its gradient, or [`lstm_cell::output`]).
pub(super) type LstmForward = fn(&[f32], &[f32], usize) -> Vec<f32>;
pub(super) type LstmGradient = fn(&[f32], &[f32], usize, &[f32]) -> (Vec<f32>, Vec<f32>);

/// Either LSTM cell operation's backward pass: its gradient function.
#[derive(Debug)]
pub(super) struct LstmCellBackward(LstmGradient);

impl Backward<Flex, 2> for LstmCellBackward {
    /// The gate inputs, the cell state the operation read and U.
    type State = (FlexTensor, FlexTensor, usize);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_gates, node_c] = ops.parents;
        let up = grads.consume::<Flex>(&ops.node);
        let (gates, c, units) = ops.state;
        let (d_gates, dc) = (self.0)(&values(&gates), &values(&c), units, &values(&up));
        if let Some(node) = node_gates {
            grads.register::<Flex>(node.id, flex(d_gates, gates.shape()));
        }
        if let Some(node) = node_c {
            grads.register::<Flex>(node.id, flex(dc, c.shape()));
        }
    }
}

/// An LSTM cell operation on the autodiff CPU backend, `None` where
/// [`lstm_units`] refuses the shapes (the caller then composes it).
pub(super) fn lstm_cell_tracked<C: CheckpointStrategy>(
    gates: &AutodiffFloat<C>,
    c: &AutodiffFloat<C>,
    (forward, gradient): (LstmForward, LstmGradient),
) -> Option<AutodiffFloat<C>> {
    let units = lstm_units(gates.primitive(), c.primitive())?;
    let y = flex(forward(&values(gates.primitive()), &values(c.primitive()), units), c.primitive().shape());
    Some(match LstmCellBackward(gradient).prepare::<C>([gates.node(), c.node()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish((gates.primitive().clone(), c.primitive().clone(), units), y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    })
}

#[derive(Debug)]
pub(super) struct LstmSequenceBackward;

impl Backward<Flex, 3> for LstmSequenceBackward {
    /// What the forward pass kept, the hidden weight and the shape.
    type State = (Arc<lstm_sequence::Kept>, FlexTensor, lstm_sequence::Sequence);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_in, node_w, node_bias] = ops.parents;
        let up = grads.consume::<Flex>(&ops.node);
        let (kept, w, seq) = ops.state;
        let (d_in, d_w, d_bias) = lstm_sequence::backward(seq, &kept, &values(&w), &values(&up));
        let g = 4 * seq.units;
        if let Some(node) = node_in {
            grads.register::<Flex>(node.id, flex(d_in, Shape::new([seq.batch, seq.steps, g])));
        }
        if let Some(node) = node_w {
            grads.register::<Flex>(node.id, flex(d_w, Shape::new([seq.units, g])));
        }
        if let Some(node) = node_bias {
            grads.register::<Flex>(node.id, flex(d_bias, Shape::new([g])));
        }
    }
}

/// An LSTM sequence on the autodiff CPU backend, `None` where
/// [`lstm_sequence_shape`] refuses the operands (the caller then unrolls it).
pub(super) fn lstm_sequence_tracked<C: CheckpointStrategy>(
    gates_in: &AutodiffFloat<C>,
    w: &AutodiffFloat<C>,
    bias: &AutodiffFloat<C>,
) -> Option<AutodiffFloat<C>> {
    let seq = lstm_sequence_shape(gates_in.primitive(), w.primitive(), bias.primitive())?;
    let (out, kept) =
        lstm_sequence::forward(seq, &values(gates_in.primitive()), &values(w.primitive()), &values(bias.primitive()));
    let y = flex(out, Shape::new([seq.batch, seq.steps, seq.units]));
    let parents = [gates_in.node(), w.node(), bias.node()];
    Some(match LstmSequenceBackward.prepare::<C>(parents).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish((Arc::new(kept), w.primitive().clone(), seq), y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    })
}

#[derive(Debug)]
pub(super) struct DenseProductBackward;

impl Backward<Flex, 2> for DenseProductBackward {
    /// The operands x [M, K] and w [K, N].
    type State = (FlexTensor, FlexTensor);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let up = grads.consume::<Flex>(&ops.node);
        let (x, w) = ops.state;
        let [m, k] = x.shape().dims();
        let n = up.shape()[1];
        if let Some(node) = node_x {
            let dx = if dense_input_grad::pays([m, k, n]) {
                flex(dense_input_grad::input_grad(&values(&up), &values(&w), [m, k, n]), Shape::new([m, k]))
            } else {
                Flex::float_matmul(up.clone(), Flex::float_transpose(w))
            };
            grads.register::<Flex>(node.id, dx);
        }
        if let Some(node) = node_w {
            grads.register::<Flex>(node.id, Flex::float_matmul(Flex::float_transpose(x), up));
        }
    }
}

/// A dense layer's product on the autodiff CPU backend, `None` where
/// [`dense_operands`] refuses the operands (the caller then takes burn's).
pub(super) fn dense_product_tracked<C: CheckpointStrategy>(
    x: &AutodiffFloat<C>,
    w: &AutodiffFloat<C>,
) -> Option<AutodiffFloat<C>> {
    dense_operands(x.primitive(), w.primitive())?;
    let y = Flex::float_matmul(x.primitive().clone(), w.primitive().clone());
    Some(match DenseProductBackward.prepare::<C>([x.node(), w.node()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish((x.primitive().clone(), w.primitive().clone()), y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    })
}

/// [M, K, N] for f32 operands x [M, K] and w [K, N]; `None` otherwise.
fn dense_operands(x: &FlexTensor, w: &FlexTensor) -> Option<[usize; 3]> {
    let (xs, ws) = (x.shape(), w.shape());
    let f32s = x.dtype() == DType::F32 && w.dtype() == DType::F32;
    (f32s && xs.num_dims() == 2 && ws.num_dims() == 2 && xs[1] == ws[0]).then(|| [xs[0], xs[1], ws[1]])
}

#[derive(Debug)]
pub(super) struct LeakyReluBackward;

impl Backward<Flex, 1> for LeakyReluBackward {
    /// The forward pass's output and the slope.
    type State = (FlexTensor, f32);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let (y, slope) = ops.state;
        if let Some(node) = node {
            grads.register::<Flex>(node.id, activation::leaky_relu_grad(grad, &values(&y), slope));
        }
    }
}

#[derive(Debug)]
pub(super) struct ReluBackward;

impl Backward<Flex, 1> for ReluBackward {
    /// The forward pass's output.
    type State = FlexTensor;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        if let Some(node) = node {
            grads.register::<Flex>(node.id, activation::relu_grad(grad, &values(&ops.state)));
        }
    }
}

#[derive(Debug)]
pub(super) struct MaxPoolBackward;

impl Backward<Flex, 1> for MaxPoolBackward {
    /// Which voxel of each window held its maximum; the input's volume and shape.
    type State = (Vec<u8>, [usize; 3], Shape);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let grad = values(&grad);
        let (arg, volume, shape) = ops.state;
        if let Some(node) = node {
            grads.register::<Flex>(node.id, flex(direct_pool::max_backward(volume, &arg, &grad), shape));
        }
    }
}

#[derive(Debug)]
pub(super) struct MaxPool2dBackward;

impl Backward<Flex, 1> for MaxPool2dBackward {
    /// Which pixel of each window held its maximum; the input's plane and shape.
    type State = (Vec<u8>, [usize; 2], Shape);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let grad = values(&grad);
        let (arg, plane, shape) = ops.state;
        if let Some(node) = node {
            grads.register::<Flex>(node.id, flex(direct_pool::max2_backward(plane, &arg, &grad), shape));
        }
    }
}

#[derive(Debug)]
pub(super) struct AvgPoolBackward;

impl Backward<Flex, 1> for AvgPoolBackward {
    type State = ([usize; 3], Shape);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<Flex>(&ops.node);
        let grad = values(&grad);
        let (volume, shape) = ops.state;
        if let Some(node) = node {
            grads.register::<Flex>(node.id, flex(direct_pool::avg_backward(volume, &grad), shape));
        }
    }
}
