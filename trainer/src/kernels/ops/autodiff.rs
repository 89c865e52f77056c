//! [`KernelOps`] for `Autodiff<Flex>`: the direct kernels forward, each
//! registered with its backward step ([`super::backward`]).

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::ops::{Backward, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::{FloatTensorOps, ModuleOps};
use burn::backend::{Autodiff, AutodiffBackend, Flex, TensorMetadata};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{DType, Shape};

use crate::kernels::direct_conv::PaddedInput;
use crate::kernels::flex::{flex, values};
use crate::kernels::precision::Precision;
use crate::kernels::{batch_norm, direct_conv, direct_pool, lstm_cell};

use super::backward::{
    AutodiffFloat, AvgPoolBackward, BatchNormBackward, Conv2dBackward, ConvBackward, ConvTranspose2dBackward,
    LeakyReluBackward, MaxPool2dBackward, MaxPoolBackward, ReluBackward, RoundBackward, conv_transpose2d_flex,
    dense_product_tracked, lstm_cell_tracked, lstm_sequence_tracked, round_flex,
};
use super::flex_ops::{
    Padding, conv_forward, conv2d_flex, conv2d_flex_keeping, direct_conv_shape, direct_conv_shape_padded,
    direct_pool_plane, direct_pool_volume, first_copies_flex, norm_layout, pooled_shape, split_statistics, twice_flex,
};
use super::{KernelOps, composed};

impl<C: CheckpointStrategy> KernelOps for Autodiff<Flex, C> {
    fn conv3d_same(x: AutodiffFloat<C>, weight: AutodiffFloat<C>, bias: AutodiffFloat<C>) -> AutodiffFloat<C> {
        let Some(shape) = direct_conv_shape(x.primitive(), weight.primitive(), bias.primitive()) else {
            return composed::conv3d_same::<Self>(x, weight, bias);
        };
        match ConvBackward.prepare::<C>([x.node(), weight.node(), bias.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let weight_state = prep.checkpoint(&weight);
                let padded = Arc::new(PaddedInput::new(&shape, &values(x.primitive())));
                let y = direct_conv::forward_from_padded(
                    &padded,
                    &values(weight.primitive()),
                    Some(&values(bias.primitive())),
                );
                let [d, h, w] = shape.volume;
                let y = flex(y, Shape::new([shape.batch, shape.c_out, d, h, w]));
                prep.finish((padded, weight_state, shape, Padding::Same), y)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(conv_forward(&shape, x.primitive(), weight.primitive(), bias.primitive()))
            }
        }
    }

    fn conv3d_valid(x: AutodiffFloat<C>, weight: AutodiffFloat<C>, bias: AutodiffFloat<C>) -> AutodiffFloat<C> {
        let Some(shape) = direct_conv_shape_padded(x.primitive(), weight.primitive(), bias.primitive(), Padding::Valid)
        else {
            return composed::conv3d_same_cropped::<Self>(x, weight, bias);
        };
        let (weights, biases) = (values(weight.primitive()), values(bias.primitive()));
        let [d, h, w] = shape.volume;
        let out_shape = Shape::new([shape.batch, shape.c_out, d, h, w]);
        match ConvBackward.prepare::<C>([x.node(), weight.node(), bias.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let weight_state = prep.checkpoint(&weight);
                // The weight gradient reads the input as it is: kept whole.
                let input = Arc::new(PaddedInput::valid(&shape, values(x.primitive()).into_owned()));
                let y = direct_conv::forward_from_padded(&input, &weights, Some(&biases));
                prep.finish((input, weight_state, shape, Padding::Valid), flex(y, out_shape))
            }
            OpsKind::UnTracked(prep) => {
                let y = direct_conv::forward_valid(&shape, &values(x.primitive()), &weights, Some(&biases));
                prep.finish(flex(y, out_shape))
            }
        }
    }

    fn max_pool3d_2(x: AutodiffFloat<C>) -> AutodiffFloat<C> {
        let Some(volume) = direct_pool_volume(x.primitive()) else {
            return composed::pool3d_2::<Self>(x, false);
        };
        let (in_shape, out_shape) = (x.primitive().shape(), pooled_shape(x.primitive()));
        let (y, arg) = direct_pool::max_forward(volume, &values(x.primitive()));
        match MaxPoolBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((arg, volume, in_shape), flex(y, out_shape)),
            OpsKind::UnTracked(prep) => prep.finish(flex(y, out_shape)),
        }
    }

    fn round_to(x: AutodiffFloat<C>, precision: Precision) -> AutodiffFloat<C> {
        if precision == Precision::F32 {
            return x;
        }
        // The backward pass needs no value of x, so its buffer may be
        // rounded in place when nothing else holds it.
        match RoundBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(precision, round_flex(x.into_primitive(), precision)),
            OpsKind::UnTracked(prep) => prep.finish(round_flex(x.into_primitive(), precision)),
        }
    }

    fn max_pool2d_2(x: AutodiffFloat<C>) -> AutodiffFloat<C> {
        let Some(plane) = direct_pool_plane(x.primitive()) else {
            return Self::max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], false);
        };
        let (in_shape, out_shape) = (x.primitive().shape(), pooled_shape(x.primitive()));
        let (y, arg) = direct_pool::max2_forward(plane, &values(x.primitive()));
        match MaxPool2dBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((arg, plane, in_shape), flex(y, out_shape)),
            OpsKind::UnTracked(prep) => prep.finish(flex(y, out_shape)),
        }
    }

    fn avg_pool3d_2(x: AutodiffFloat<C>) -> AutodiffFloat<C> {
        let Some(volume) = direct_pool_volume(x.primitive()) else {
            return composed::pool3d_2::<Self>(x, true);
        };
        let (in_shape, out_shape) = (x.primitive().shape(), pooled_shape(x.primitive()));
        let y = direct_pool::avg_forward(volume, &values(x.primitive()));
        match AvgPoolBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((volume, in_shape), flex(y, out_shape)),
            OpsKind::UnTracked(prep) => prep.finish(flex(y, out_shape)),
        }
    }

    fn conv2d_unbiased(x: AutodiffFloat<C>, weight: AutodiffFloat<C>, options: ConvOptions<2>) -> AutodiffFloat<C> {
        conv2d_tracked::<C>(x, weight, options, false)
    }

    fn conv2d_twin_unbiased(
        x: AutodiffFloat<C>,
        weight: AutodiffFloat<C>,
        options: ConvOptions<2>,
    ) -> AutodiffFloat<C> {
        conv2d_tracked::<C>(x, weight, options, true)
    }

    fn lstm_cell_state(gates: AutodiffFloat<C>, c: AutodiffFloat<C>) -> AutodiffFloat<C> {
        lstm_cell_tracked::<C>(&gates, &c, (lstm_cell::state, lstm_cell::state_grad))
            .unwrap_or_else(|| composed::lstm_cell_state::<Self>(gates, c))
    }

    fn lstm_cell_output(gates: AutodiffFloat<C>, c_next: AutodiffFloat<C>) -> AutodiffFloat<C> {
        lstm_cell_tracked::<C>(&gates, &c_next, (lstm_cell::output, lstm_cell::output_grad))
            .unwrap_or_else(|| composed::lstm_cell_output::<Self>(gates, c_next))
    }

    fn lstm_sequence(gates_in: AutodiffFloat<C>, w: AutodiffFloat<C>, bias: AutodiffFloat<C>) -> AutodiffFloat<C> {
        lstm_sequence_tracked::<C>(&gates_in, &w, &bias)
            .unwrap_or_else(|| composed::lstm_sequence::<Self>(gates_in, w, bias))
    }

    fn dense_product(x: AutodiffFloat<C>, w: AutodiffFloat<C>) -> AutodiffFloat<C> {
        dense_product_tracked::<C>(&x, &w).unwrap_or_else(|| Self::float_matmul(x, w))
    }

    fn batch_statistics(x: AutodiffFloat<C>, groups: usize) -> AutodiffFloat<C> {
        Self::from_inner(<Flex as KernelOps>::batch_statistics(x.into_primitive(), groups))
    }

    fn batch_norm_with_statistics(
        x: AutodiffFloat<C>,
        gamma: AutodiffFloat<C>,
        beta: AutodiffFloat<C>,
        statistics: AutodiffFloat<C>,
        groups: usize,
        epsilon: f64,
    ) -> AutodiffFloat<C> {
        batch_norm_tracked::<C>(x, (gamma, beta), statistics, (groups, epsilon), 1)
    }

    fn batch_norm_twin_with_statistics(
        x: AutodiffFloat<C>,
        gamma: AutodiffFloat<C>,
        beta: AutodiffFloat<C>,
        statistics: AutodiffFloat<C>,
        groups: usize,
        epsilon: f64,
    ) -> AutodiffFloat<C> {
        if norm_layout(x.primitive(), groups).is_none() || !groups.is_multiple_of(2) {
            return composed::batch_norm_twin::<Self>(x, (gamma, beta), groups, epsilon);
        }
        batch_norm_tracked::<C>(x, (gamma, beta), statistics, (groups, epsilon), 2)
    }

    fn fused_leaky_relu(x: AutodiffFloat<C>, negative_slope: f32) -> AutodiffFloat<C> {
        // The backward pass reads the output's sign, which is the input's
        // for a positive slope: keeping the output (which the next layer
        // keeps anyway) rather than the input saves a tensor per layer.
        match LeakyReluBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let y = Flex::fused_leaky_relu(x.into_primitive(), negative_slope);
                prep.finish((y.clone(), negative_slope), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_leaky_relu(x.into_primitive(), negative_slope)),
        }
    }

    fn fused_relu(x: AutodiffFloat<C>) -> AutodiffFloat<C> {
        // As burn's: the backward pass reads the output.
        match ReluBackward.prepare::<C>([x.node()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let y = Flex::fused_relu(x.into_primitive());
                prep.finish(y.clone(), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(Flex::fused_relu(x.into_primitive())),
        }
    }

    fn conv_transpose2d_unbiased(
        x: AutodiffFloat<C>,
        weight: AutodiffFloat<C>,
        options: ConvTransposeOptions<2>,
    ) -> AutodiffFloat<C> {
        let forward = |x: &FlexTensor, weight: &FlexTensor| conv_transpose2d_flex(x, weight, &options);
        match ConvTranspose2dBackward.prepare::<C>([x.node(), weight.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let (x_state, weight_state) = (prep.checkpoint(&x), prep.checkpoint(&weight));
                let y = forward(x.primitive(), weight.primitive());
                prep.finish((x_state, weight_state, options.clone()), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(x.primitive(), weight.primitive())),
        }
    }
}

/// conv2d on the autodiff CPU backend, of a twin batch if `twin` (the
/// convolution then runs on the first copies, and its output is handed
/// to both).
pub(super) fn conv2d_tracked<C: CheckpointStrategy>(
    x: AutodiffFloat<C>,
    weight: AutodiffFloat<C>,
    options: ConvOptions<2>,
    twin: bool,
) -> AutodiffFloat<C> {
    let input = |x: &FlexTensor| if twin { first_copies_flex(x) } else { x.clone() };
    let output = |y: FlexTensor| if twin { twice_flex(&y) } else { y };
    // A trained weight's gradient reads the columns the forward pass
    // builds; a frozen one has none to take.
    let trained = weight.is_tracked();
    match Conv2dBackward.prepare::<C>([x.node(), weight.node()]).compute_bound().stateful() {
        OpsKind::Tracked(mut prep) => {
            let (x_state, weight_state) = (prep.checkpoint(&x), prep.checkpoint(&weight));
            let (y, kept) =
                conv2d_flex_keeping(input(x.primitive()), weight.primitive().clone(), options.clone(), trained);
            prep.finish((x_state, weight_state, options, kept.map(Arc::new), twin), output(y))
        }
        OpsKind::UnTracked(prep) => {
            prep.finish(output(conv2d_flex(input(x.primitive()), weight.primitive().clone(), options)))
        }
    }
}

/// Batch normalisation on the autodiff CPU backend by `statistics` (of
/// this `x`), γ and β trained by the groups g with g mod `every` = 0.
pub(super) fn batch_norm_tracked<C: CheckpointStrategy>(
    x: AutodiffFloat<C>,
    (gamma, beta): (AutodiffFloat<C>, AutodiffFloat<C>),
    statistics: AutodiffFloat<C>,
    (groups, epsilon): (usize, f64),
    every: usize,
) -> AutodiffFloat<C> {
    let f32s = [&gamma, &beta, &statistics].iter().all(|t| t.primitive().dtype() == DType::F32);
    let Some(layout) = norm_layout(x.primitive(), groups).filter(|_| f32s) else {
        return composed::batch_norm_train::<Autodiff<Flex, C>>(x, gamma, beta, groups, epsilon);
    };
    let stats = values(statistics.primitive()).into_owned();
    let y = {
        let (g, b) = (values(gamma.primitive()), values(beta.primitive()));
        let affine = batch_norm::Affine { gamma: &g, beta: &b, epsilon: epsilon as f32 };
        flex(
            batch_norm::forward(&values(x.primitive()), layout, split_statistics(&stats, layout), affine),
            x.primitive().shape(),
        )
    };
    match BatchNormBackward.prepare::<C>([x.node(), gamma.node(), beta.node()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let state = (x.primitive().clone(), gamma.primitive().clone(), stats, layout, epsilon as f32, every);
            prep.finish(state, y)
        }
        OpsKind::UnTracked(prep) => prep.finish(y),
    }
}
