//! The operations from burn's own primitives, for any backend.

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, TensorMetadata};
use burn::tensor::ops::ConvOptions;
use burn::tensor::{FloatDType, Shape};

use crate::kernels::precision::Precision;

use super::KernelOps;

pub(super) fn conv3d_same<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    let p = weight.shape()[2] / 2;
    B::conv3d(x, weight, Some(bias), ConvOptions::new([1; 3], [p; 3], [1; 3], 1))
}

pub(super) fn conv3d_valid<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    B::conv3d(x, weight, Some(bias), ConvOptions::new([1; 3], [0; 3], [1; 3], 1))
}

/// The valid convolution as the "same" one with its border of `k / 2`
/// cropped: for the CPU's shapes the direct kernels do not take,
/// whose "same" convolution (wider) they may, where burn's own
/// backward (a transposed convolution for the input gradient, a
/// per-voxel loop for the weights') would cost most of a training step.
pub(super) fn conv3d_same_cropped<B: KernelOps>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    let (p, k) = (weight.shape()[2] / 2, weight.shape()[2]);
    if x.shape().as_slice()[2..].iter().any(|&e| e < k) {
        return conv3d_valid::<B>(x, weight, bias);
    }
    let y = B::conv3d_same(x, weight, bias);
    let shape = y.shape();
    let ranges: Vec<burn::tensor::Slice> = shape
        .as_slice()
        .iter()
        .enumerate()
        .map(|(axis, &e)| if axis < 2 { (0..e).into() } else { (p..e - p).into() })
        .collect();
    B::float_slice(y, &ranges)
}

/// A round trip through burn's half-precision dtype (whose rounding of
/// bf16 denormals may differ from [`Precision::round`]'s flush to zero).
pub(super) fn round_to<B: Backend>(x: FloatTensor<B>, precision: Precision) -> FloatTensor<B> {
    let half = match precision {
        Precision::F32 => return x,
        Precision::Bf16 => FloatDType::BF16,
        Precision::F16 => FloatDType::F16,
    };
    B::float_cast(B::float_cast(x, half), FloatDType::F32)
}

/// The gates i, f, g, o of `gates` [B, 4U], each [B, U].
fn gate_quarters<B: Backend>(gates: FloatTensor<B>) -> [FloatTensor<B>; 4] {
    let shape = gates.shape();
    let (rows, units) = (shape[0], shape[1] / 4);
    std::array::from_fn(|k| B::float_slice(gates.clone(), &[(0..rows).into(), (k * units..(k + 1) * units).into()]))
}

pub(super) fn lstm_cell_state<B: Backend>(gates: FloatTensor<B>, c: FloatTensor<B>) -> FloatTensor<B> {
    let [i, f, g, _] = gate_quarters::<B>(gates);
    B::float_add(B::float_mul(B::sigmoid(f), c), B::float_mul(B::sigmoid(i), B::float_tanh(g)))
}

pub(super) fn lstm_cell_output<B: Backend>(gates: FloatTensor<B>, c_next: FloatTensor<B>) -> FloatTensor<B> {
    let [_, _, _, o] = gate_quarters::<B>(gates);
    B::float_mul(B::sigmoid(o), B::float_tanh(c_next))
}

/// A twin batch's convolution as two: the first copies' with the
/// weight, the second's with the weight cut from the graph.
pub(super) fn conv2d_twin<B: KernelOps>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    options: ConvOptions<2>,
) -> FloatTensor<B> {
    let (first, second) = split_twins::<B>(x);
    let detached = B::float_detach(weight.clone());
    let first = B::conv2d_unbiased(first, weight, options.clone());
    join_twins::<B>(first, B::conv2d_unbiased(second, detached, options))
}

/// A twin batch's normalisation in `groups` groups as two, each copy
/// in half of them, the second's γ and β cut from the graph.
pub(super) fn batch_norm_twin<B: Backend>(
    x: FloatTensor<B>,
    (gamma, beta): (FloatTensor<B>, FloatTensor<B>),
    groups: usize,
    epsilon: f64,
) -> FloatTensor<B> {
    let (first, second) = split_twins::<B>(x);
    let half = (groups / 2).max(1);
    let frozen = (B::float_detach(gamma.clone()), B::float_detach(beta.clone()));
    let first = batch_norm_train::<B>(first, gamma, beta, half, epsilon);
    join_twins::<B>(first, batch_norm_train::<B>(second, frozen.0, frozen.1, half, epsilon))
}

/// A twin batch [2N, ...] as its first and its second copies, [N, ...] each.
pub(super) fn split_twins<B: Backend>(x: FloatTensor<B>) -> (FloatTensor<B>, FloatTensor<B>) {
    let shape = x.shape();
    let pairs = shape[0] / 2;
    let rest = shape.num_elements() / (2 * pairs).max(1);
    let paired = B::float_reshape(x, Shape::new([pairs, 2, rest]));
    let mut half = shape.clone();
    half.as_mut_slice()[0] = pairs;
    let copy = |h: usize| {
        let one = B::float_slice(paired.clone(), &[(0..pairs).into(), (h..h + 1).into(), (0..rest).into()]);
        B::float_reshape(one, half.clone())
    };
    (copy(0), copy(1))
}

/// The twin batch of `first` and `second` [N, ...]: sample 2i is
/// `first`'s i, sample 2i + 1 `second`'s.
pub(super) fn join_twins<B: Backend>(first: FloatTensor<B>, second: FloatTensor<B>) -> FloatTensor<B> {
    let shape = first.shape();
    let pairs = shape[0];
    let rest = shape.num_elements() / pairs.max(1);
    let column = |t| B::float_reshape(t, Shape::new([pairs, 1, rest]));
    let joined = B::float_cat(vec![column(first), column(second)], 1);
    let mut twin = shape.clone();
    twin.as_mut_slice()[0] = 2 * pairs;
    B::float_reshape(joined, twin)
}

/// x [N, C, ...] as [N / G, G, C, S]: sample n = j·G + g at [j, g].
fn grouped<B: Backend>(x: FloatTensor<B>, groups: usize) -> FloatTensor<B> {
    let shape = x.shape();
    let (n, c) = (shape[0], shape[1]);
    let positions = shape.num_elements() / (n * c).max(1);
    B::float_reshape(x, Shape::new([n / groups, groups, c, positions]))
}

/// Per (group, channel) mean and biased variance of the grouped view,
/// each [1, G, C, 1].
fn grouped_moments<B: Backend>(view: FloatTensor<B>) -> (FloatTensor<B>, FloatTensor<B>) {
    let mean = B::float_mean_dim(B::float_mean_dim(view.clone(), 3), 0);
    let centred = B::float_sub(view, mean.clone());
    let variance = B::float_mean_dim(B::float_mean_dim(B::float_mul(centred.clone(), centred), 3), 0);
    (mean, variance)
}

pub(super) fn batch_statistics<B: Backend>(x: FloatTensor<B>, groups: usize) -> FloatTensor<B> {
    let (groups_channels, view) = {
        let shape = x.shape();
        ([1, groups, shape[1]], grouped::<B>(x, groups))
    };
    let (mean, variance) = grouped_moments::<B>(view);
    let flat = |t| B::float_reshape(t, Shape::new(groups_channels));
    B::float_cat(vec![flat(mean), flat(variance)], 0)
}

/// Batch normalisation by the statistics of each group, all of it in
/// the graph (burn's autodiff differentiates the composition).
pub(super) fn batch_norm_train<B: Backend>(
    x: FloatTensor<B>,
    gamma: FloatTensor<B>,
    beta: FloatTensor<B>,
    groups: usize,
    epsilon: f64,
) -> FloatTensor<B> {
    let shape = x.shape();
    let per_channel = Shape::new([1, 1, shape[1], 1]);
    let view = grouped::<B>(x, groups);
    let (mean, variance) = grouped_moments::<B>(view.clone());
    let inverse = B::float_recip(B::float_sqrt(B::float_add_scalar(variance, epsilon.into())));
    let normalised = B::float_mul(B::float_sub(view, mean), inverse);
    let scaled = B::float_mul(normalised, B::float_reshape(gamma, per_channel.clone()));
    B::float_reshape(B::float_add(scaled, B::float_reshape(beta, per_channel)), shape)
}

/// Pool H and W with burn's 2-D pool, then pairs along D by a reshape
/// and a reduction (exact, forward and backward, because the windows do
/// not overlap).
pub(super) fn pool3d_2<B: Backend>(x: FloatTensor<B>, average: bool) -> FloatTensor<B> {
    let shape = x.shape();
    let [n, c, d, h, w] = [shape[0], shape[1], shape[2], shape[3], shape[4]];
    let planes = B::float_reshape(x, Shape::new([n * c, d, h, w]));
    let halved = if average {
        B::avg_pool2d(planes, [2, 2], [2, 2], [0, 0], true, false)
    } else {
        B::max_pool2d(planes, [2, 2], [2, 2], [0, 0], [1, 1], false)
    };
    let pairs = B::float_reshape(halved, Shape::new([n * c, d / 2, 2, (h / 2) * (w / 2)]));
    let reduced = if average { B::float_mean_dim(pairs, 2) } else { B::float_max_dim(pairs, 2) };
    B::float_reshape(reduced, Shape::new([n, c, d / 2, h / 2, w / 2]))
}

/// The LSTM layer's steps unrolled into burn's operations: each step's
/// gate inputs gates_in[:, t] + (h·w + bias), then the cell; the hidden
/// product in this thread's precision, as the fused sequence computes it.
pub(super) fn lstm_sequence<B: KernelOps>(
    gates_in: FloatTensor<B>,
    w: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    let shape = gates_in.shape();
    let (b, steps, g) = (shape[0], shape[1], shape[2]);
    let u = g / 4;
    let (device, dtype) = (gates_in.device(), gates_in.dtype().into());
    if steps == 0 {
        return B::float_zeros(Shape::new([b, 0, u]), &device, dtype);
    }
    let bias = B::float_expand(B::float_reshape(bias, Shape::new([1, g])), Shape::new([b, g]));
    let precision = crate::kernels::precision::current();
    let mut h = B::float_zeros(Shape::new([b, u]), &device, dtype);
    let mut c = B::float_zeros(Shape::new([b, u]), &device, dtype);
    let mut out = Vec::with_capacity(steps);
    for t in 0..steps {
        let step = B::float_slice(gates_in.clone(), &[(0..b).into(), (t..t + 1).into(), (0..g).into()]);
        let product = B::float_matmul(B::round_to(h, precision), w.clone());
        let hidden = B::round_to(B::float_add(product, bias.clone()), precision);
        let gates = B::float_add(B::float_reshape(step, Shape::new([b, g])), hidden);
        c = B::lstm_cell_state(gates.clone(), c);
        h = B::lstm_cell_output(gates, c.clone());
        out.push(B::float_reshape(h.clone(), Shape::new([b, 1, u])));
    }
    B::float_cat(out, 1)
}
