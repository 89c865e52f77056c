//! Our kernels behind burn's backend-extension route (`#[backend_extension]`,
//! burn book "Backend Extension"): one trait, [`KernelOps`], whose default
//! bodies compose burn's own primitive operations, so every backend runs
//! them; burn's Flex CPU backend overrides them with the direct kernels,
//! and `Autodiff<Flex>` with the direct kernels plus their hand-written
//! backward passes. The generated `Dispatch` implementation routes each
//! call by the backend its tensors live on.

use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::ops::{ActivationOps, FloatTensorOps, ModuleOps};
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, AutodiffBackend, Backend, Flex, TensorMetadata, backend_extension};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{DType, FloatDType, Shape};

use super::activation;
use super::batch_norm;
use super::columns::{KeptInput, Window};
use super::conv_transpose2d;
use super::conv2d_forward;
use super::conv2d_grad;
use super::direct_conv::{self, ConvShape, PaddedInput};
use super::direct_pool;
use super::flex::{flex, values};
use super::lstm_cell;
use super::precision::Precision;
use super::twin;

/// Narrowest volume (in voxels along `w`) given to the direct convolution:
/// below it burn's GEMM wins (`cargo bench -p stagehand-trainer --bench ops`).
pub const MIN_DIRECT_WIDTH: usize = 8;

/// The operations our models need beyond burn's: a stride-1 "same" 3-D
/// convolution with bias, 3-D pooling over 2³ windows, and 2-D
/// convolutions (plain and transposed) whose weight gradient is
/// [`conv2d_grad::weight_grad`] on the CPU.
#[backend_extension(Flex, Autodiff, Cube: cfg(feature = "gpu"))]
pub trait KernelOps: Backend {
    /// `conv3d` with stride 1, dilation 1, one group and `k / 2` zeros of
    /// padding: x [N, C_in, D, H, W], weight [C_out, C_in, k, k, k], bias [C_out].
    fn conv3d_same(x: FloatTensor<Self>, weight: FloatTensor<Self>, bias: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::conv3d_same::<Self>(x, weight, bias)
    }

    /// `conv3d` with stride 1, dilation 1, one group and no padding (a
    /// "valid" convolution, as pyprob's 3-D CNN): x [N, C_in, D, H, W],
    /// weight [C_out, C_in, k, k, k] with odd k ≤ D, H, W, bias [C_out];
    /// the output is [N, C_out, D - k + 1, H - k + 1, W - k + 1].
    fn conv3d_valid(x: FloatTensor<Self>, weight: FloatTensor<Self>, bias: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::conv3d_valid::<Self>(x, weight, bias)
    }

    /// Maximum over each 2³ window of x [N, C, D, H, W] (D, H, W even).
    fn max_pool3d_2(x: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::pool3d_2::<Self>(x, false)
    }

    /// Maximum over each 2×2 window of x [N, C, H, W], stride 2 (H, W even).
    fn max_pool2d_2(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::max_pool2d(x, [2, 2], [2, 2], [0, 0], [1, 1], false)
    }

    /// Mean over each 2³ window of x [N, C, D, H, W] (D, H, W even).
    fn avg_pool3d_2(x: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::pool3d_2::<Self>(x, true)
    }

    /// burn's `conv2d` without bias: x [N, C_in, H, W], weight [C_out,
    /// C_in / groups, kh, kw].
    fn conv2d_unbiased(x: FloatTensor<Self>, weight: FloatTensor<Self>, options: ConvOptions<2>) -> FloatTensor<Self> {
        Self::conv2d(x, weight, None, options)
    }

    /// burn's `conv_transpose2d` without bias: x [N, C_in, H, W], weight
    /// [C_in, C_out / groups, kh, kw].
    fn conv_transpose2d_unbiased(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        options: ConvTransposeOptions<2>,
    ) -> FloatTensor<Self> {
        Self::conv_transpose2d(x, weight, None, options)
    }

    /// LeakyReLU: x where x ≥ 0, `negative_slope`·x elsewhere
    /// (`negative_slope` > 0). On Flex one pass forward and one backward,
    /// where burn's default composes a comparison, a scaled copy and a
    /// masked select (and twice as many passes backward).
    fn fused_leaky_relu(x: FloatTensor<Self>, negative_slope: f32) -> FloatTensor<Self> {
        <Self as ActivationOps<Self>>::leaky_relu(x, negative_slope.into())
    }

    /// ReLU (x where x > 0 or NaN, 0 elsewhere): burn's
    /// `activation::relu`, on the CPU by the pool's threads.
    fn fused_relu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        <Self as ActivationOps<Self>>::relu(x)
    }

    /// The mean and biased variance of each group of samples and channel
    /// of x [N, C, ...], as [2, G, C]: sample n is in group n mod G
    /// (`groups` = G divides N). Not differentiated (the normalisation
    /// below differentiates through them).
    fn batch_statistics(x: FloatTensor<Self>, groups: usize) -> FloatTensor<Self> {
        composed::batch_statistics::<Self>(x, groups)
    }

    /// Batch normalisation in training mode of x [N, C, ...] in `groups`
    /// groups of samples, scaled by `gamma` and shifted by `beta` [C];
    /// `statistics` must be what [`batch_statistics`] gives for this `x`
    /// (the CPU's single-pass kernels read them; other backends compute
    /// them again inside the graph). The backward pass is the whole
    /// training-mode gradient, through the statistics.
    ///
    /// [`batch_statistics`]: KernelOps::batch_statistics
    fn batch_norm_with_statistics(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        statistics: FloatTensor<Self>,
        groups: usize,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        let _ = statistics;
        composed::batch_norm_train::<Self>(x, gamma, beta, groups, epsilon)
    }

    /// [`conv2d_unbiased`](KernelOps::conv2d_unbiased) of a twin batch x
    /// [2N, C_in, H, W] ([`twin`](super::twin)): the same values, the
    /// weight's gradient from the first copies only. On the CPU the
    /// convolution runs once, on the first copies.
    fn conv2d_twin_unbiased(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        options: ConvOptions<2>,
    ) -> FloatTensor<Self> {
        composed::conv2d_twin::<Self>(x, weight, options)
    }

    /// [`batch_norm_with_statistics`](KernelOps::batch_norm_with_statistics)
    /// of a twin batch in `groups` groups (twice its halves' groups, so
    /// that the copies are normalised apart): the same values, γ's and
    /// β's gradients from the first copies only.
    fn batch_norm_twin_with_statistics(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        statistics: FloatTensor<Self>,
        groups: usize,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        let _ = statistics;
        composed::batch_norm_twin::<Self>(x, (gamma, beta), groups, epsilon)
    }

    /// An LSTM step's next cell state from the summed gate inputs
    /// `gates` [B, 4U] (order i, f, g, o) and the cell state `c` [B, U]:
    /// σ(f)·c + σ(i)·tanh(g) ([`lstm_cell`](super::lstm_cell)).
    fn lstm_cell_state(gates: FloatTensor<Self>, c: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::lstm_cell_state::<Self>(gates, c)
    }

    /// An LSTM step's output from its gate inputs `gates` [B, 4U] and its
    /// next cell state `c_next` [B, U]: σ(o)·tanh(c').
    fn lstm_cell_output(gates: FloatTensor<Self>, c_next: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::lstm_cell_output::<Self>(gates, c_next)
    }

    /// `x` rounded to `precision` (f32: unchanged); in the backward pass
    /// the gradient is rounded the same way ([`precision`](super::precision)).
    fn round_to(x: FloatTensor<Self>, precision: Precision) -> FloatTensor<Self> {
        composed::round_to::<Self>(x, precision)
    }
}

/// The operations from burn's own primitives, for any backend.
mod composed {
    use super::*;

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
}

/// The shape of a convolution the direct kernels take, or `None` for
/// anything they do not cover (which then goes to burn's `conv3d`, which
/// also reports shapes that do not fit together).
fn direct_conv_shape(x: &FlexTensor, weight: &FlexTensor, bias: &FlexTensor) -> Option<ConvShape> {
    direct_conv_shape_padded(x, weight, bias, Padding::Same)
}

/// How a 3-D convolution pads its input: `k / 2` zeros on every side
/// (output volume = input volume) or none (the output `k - 1` smaller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Padding {
    Same,
    Valid,
}

impl Padding {
    /// The volume of the input of a convolution of `shape` (whose volume
    /// is the output's).
    fn input_volume(self, shape: &ConvShape) -> [usize; 3] {
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
fn direct_conv_shape_padded(
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
fn direct_pool_volume(x: &FlexTensor) -> Option<[usize; 3]> {
    let shape = x.shape();
    let &[_, _, d, h, w] = shape.as_slice() else { return None };
    (x.dtype() == DType::F32 && [d, h, w].iter().all(|e| e % 2 == 0)).then_some([d, h, w])
}

/// The window of a 2-D convolution our weight gradient takes (f32, one
/// group), or `None` for burn's.
fn conv2d_window(
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
fn conv2d_flex(x: FlexTensor, weight: FlexTensor, options: ConvOptions<2>) -> FlexTensor {
    conv2d_flex_keeping(x, weight, options, false).0
}

/// [`conv2d_flex`], with what ours built from the input when `keep` asks
/// ([`conv2d_forward::forward_keeping_input`]).
fn conv2d_flex_keeping(
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
fn lstm_units(gates: &FlexTensor, c: &FlexTensor) -> Option<usize> {
    let (g, c_shape) = (gates.shape(), c.shape());
    let f32s = gates.dtype() == DType::F32 && c.dtype() == DType::F32;
    let fits = g.num_dims() == 2 && c_shape.num_dims() == 2 && g[0] == c_shape[0] && g[1] == 4 * c_shape[1];
    (f32s && fits && c_shape[1] > 0).then(|| c_shape[1])
}

/// The first copies of a twin batch [2N, ...] ([`twin::first_copies`]).
fn first_copies_flex(x: &FlexTensor) -> FlexTensor {
    let mut shape = x.shape();
    let sample = shape.num_elements() / shape[0].max(1);
    shape.as_mut_slice()[0] /= 2;
    flex(twin::first_copies(&values(x), sample), shape)
}

/// The twin batch of x [N, ...] ([`twin::twice`]).
fn twice_flex(x: &FlexTensor) -> FlexTensor {
    let mut shape = x.shape();
    let sample = shape.num_elements() / shape[0].max(1);
    shape.as_mut_slice()[0] *= 2;
    flex(twin::twice(&values(x), sample), shape)
}

fn conv_forward(shape: &ConvShape, x: &FlexTensor, weight: &FlexTensor, bias: &FlexTensor) -> FlexTensor {
    let [d, h, w] = shape.volume;
    let y = direct_conv::forward(shape, &values(x), &values(weight), Some(&values(bias)));
    flex(y, Shape::new([shape.batch, shape.c_out, d, h, w]))
}

/// The layout of x [N, C, ...] (f32) in `groups` groups of samples for
/// [`batch_norm`]'s kernels; `None` (burn's composition) otherwise.
fn norm_layout(x: &FlexTensor, groups: usize) -> Option<batch_norm::Layout> {
    let shape = x.shape();
    let (n, c) = (*shape.as_slice().first()?, *shape.as_slice().get(1)?);
    let fits = x.dtype() == DType::F32 && groups > 0 && n.is_multiple_of(groups) && n * c > 0;
    fits.then(|| batch_norm::Layout { samples: n, channels: c, positions: shape.num_elements() / (n * c), groups })
}

/// [2, G, C] statistics as (mean, variance), each [G · C].
fn split_statistics(stats: &[f32], layout: batch_norm::Layout) -> (&[f32], &[f32]) {
    stats.split_at(layout.groups * layout.channels)
}

/// The shape of `x` [N, C, D, H, W] halved in D, H and W.
/// [H, W] of a tensor [N, C, H, W] of f32 with both even, which the
/// direct 2-D pool takes; `None` for burn's.
fn direct_pool_plane(x: &FlexTensor) -> Option<[usize; 2]> {
    let shape = x.shape();
    let &[_, _, h, w] = shape.as_slice() else { return None };
    (x.dtype() == DType::F32 && h % 2 == 0 && w % 2 == 0).then_some([h, w])
}

fn pooled_shape(x: &FlexTensor) -> Shape {
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

/// On burn's GPU backends the default bodies (burn's own ops) run.
#[cfg(feature = "gpu")]
impl KernelOps for burn::backend::Cube {}

#[cfg(feature = "gpu")]
impl<C: CheckpointStrategy> KernelOps for Autodiff<burn::backend::Cube, C> {}

type AutodiffFloat<C> = FloatTensor<Autodiff<Flex, C>>;
type NodeId = burn::backend::autodiff::NodeId;

#[derive(Debug)]
struct Conv2dBackward;

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
fn conv2d_input_grad(x: FlexTensor, weight: FlexTensor, out_grad: FlexTensor, options: ConvOptions<2>) -> FlexTensor {
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
fn conv_transpose2d_flex(x: &FlexTensor, weight: &FlexTensor, options: &ConvTransposeOptions<2>) -> FlexTensor {
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
fn conv_transpose2d_ours(
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
struct ConvTranspose2dBackward;

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
fn conv_transpose2d_input_grad(
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
struct ConvBackward;

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
fn round_flex(mut x: FlexTensor, precision: Precision) -> FlexTensor {
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
struct RoundBackward;

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
struct BatchNormBackward;

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
type LstmForward = fn(&[f32], &[f32], usize) -> Vec<f32>;
type LstmGradient = fn(&[f32], &[f32], usize, &[f32]) -> (Vec<f32>, Vec<f32>);

/// Either LSTM cell operation's backward pass: its gradient function.
#[derive(Debug)]
struct LstmCellBackward(LstmGradient);

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
fn lstm_cell_tracked<C: CheckpointStrategy>(
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
struct LeakyReluBackward;

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
struct ReluBackward;

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
struct MaxPoolBackward;

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
struct MaxPool2dBackward;

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
struct AvgPoolBackward;

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
fn conv2d_tracked<C: CheckpointStrategy>(
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
fn batch_norm_tracked<C: CheckpointStrategy>(
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::module::conv3d;
    use burn::tensor::{Device, Tensor, TensorData};

    use super::super::{Pooling, conv3d_same, pool3d};
    use super::*;

    fn filled<const D: usize>(shape: [usize; D], seed: usize, device: &Device) -> Tensor<D> {
        let n: usize = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|i| ((i * 37 + seed * 11) % 23) as f32 / 11.0 - 1.0).collect();
        Tensor::from_data(TensorData::new(values, shape), device)
    }

    fn to_vec<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_into_vec_as().unwrap()
    }

    fn max_diff<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
        let (a, b) = (to_vec(a), to_vec(b));
        assert_eq!(a.len(), b.len());
        assert!(!a.is_empty());
        a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    fn burn_conv(x: Tensor<5>, weight: Tensor<5>, bias: Tensor<1>) -> Tensor<5> {
        conv3d(x, weight, Some(bias), ConvOptions::new([1; 3], [1; 3], [1; 3], 1))
    }

    /// Values and all three gradients equal burn's `conv3d` (to float
    /// tolerance) on the autodiff Flex device, where the direct kernels run.
    #[test]
    fn direct_convolution_matches_burn_conv3d_in_values_and_gradients() {
        let device = Device::flex().autodiff();
        // Rows wide enough for the row kernels; then a narrow volume with
        // 16 and 32 channels, which goes to the kernels with channels in
        // the vector lanes.
        for (x_shape, c_out) in [([2, 3, 4, 5, MIN_DIRECT_WIDTH], 4), ([2, 16, 2, 3, 4], 32)] {
            let c_in = x_shape[1];
            let x = filled(x_shape, 1, &device).require_grad();
            let weight = filled([c_out, c_in, 3, 3, 3], 2, &device).require_grad();
            let bias = filled([c_out], 3, &device).require_grad();
            let [n, _, d, h, w] = x_shape;
            let up = filled([n, c_out, d, h, w], 4, &device);
            let ours = conv3d_same(x.clone(), weight.clone(), Some(bias.clone()));
            let theirs = burn_conv(x.clone(), weight.clone(), bias.clone());
            assert!(max_diff(ours.clone(), theirs.clone()) < 1e-4);
            assert_gradients_match(&format!("{x_shape:?}"), (ours, theirs), up, (&x, &weight, &bias));
        }
    }

    /// `ours` and `theirs`, the same function of x, weight and bias, back-
    /// propagate `up` to the same gradients within 1e-3.
    fn assert_gradients_match(
        case: &str,
        (ours, theirs): (Tensor<5>, Tensor<5>),
        up: Tensor<5>,
        (x, weight, bias): (&Tensor<5>, &Tensor<5>, &Tensor<1>),
    ) {
        let g_ours = (ours * up.clone()).sum().backward();
        let g_theirs = (theirs * up).sum().backward();
        for (what, a, b) in
            [("x", x.grad(&g_ours), x.grad(&g_theirs)), ("weight", weight.grad(&g_ours), weight.grad(&g_theirs))]
        {
            let diff = max_diff(a.unwrap(), b.unwrap());
            assert!(diff < 1e-3, "{case}: {what} gradient differs by {diff}");
        }
        assert!(max_diff(bias.grad(&g_ours).unwrap(), bias.grad(&g_theirs).unwrap()) < 1e-3, "{case}: bias gradient");
    }

    /// The valid convolution's values and three gradients equal burn's
    /// `conv3d` without padding, on every route: rows wide enough for the
    /// row kernels, a narrow volume whose channels go to the lanes, one
    /// whose forward pass goes to the lanes and input gradient (at the
    /// input's, wider, volume) to the rows, and one too narrow for either,
    /// which runs as the "same" convolution cropped.
    #[test]
    fn valid_convolution_matches_burn_conv3d_in_values_and_gradients() {
        let device = Device::flex().autodiff();
        let cases = [
            ([2, 3, 4, 5, MIN_DIRECT_WIDTH + 2], 4, true),
            ([2, 16, 3, 4, 5], 32, true),
            ([1, 16, 3, 3, 16], 16, true),
            ([1, 2, 3, 4, MIN_DIRECT_WIDTH - 2], 2, false),
        ];
        for (x_shape, c_out, direct) in cases {
            let c_in = x_shape[1];
            let x = filled(x_shape, 1, &device).require_grad();
            let weight = filled([c_out, c_in, 3, 3, 3], 2, &device).require_grad();
            let bias = filled([c_out], 3, &device).require_grad();
            let plain = |t: Tensor<5>| filled(t.dims(), 0, &Device::flex()).try_into_primitive::<Flex>().unwrap();
            let plain_bias = filled([c_out], 0, &Device::flex()).try_into_primitive::<Flex>().unwrap();
            let routed =
                direct_conv_shape_padded(&plain(x.clone()), &plain(weight.clone()), &plain_bias, Padding::Valid);
            assert_eq!(routed.is_some(), direct, "{x_shape:?} -> {c_out}: direct kernels or not");
            let [n, _, d, h, w] = x_shape;
            let up = filled([n, c_out, d - 2, h - 2, w - 2], 4, &device);
            let ours = super::super::conv3d_valid(x.clone(), weight.clone(), Some(bias.clone()));
            let theirs =
                conv3d(x.clone(), weight.clone(), Some(bias.clone()), ConvOptions::new([1; 3], [0; 3], [1; 3], 1));
            assert_eq!(ours.dims(), theirs.dims());
            assert!(max_diff(ours.clone(), theirs.clone()) < 1e-4, "{x_shape:?}: values");
            assert_gradients_match(&format!("{x_shape:?} valid"), (ours, theirs), up, (&x, &weight, &bias));
        }
    }

    /// Untracked (inference, and tensors on the plain device), the valid
    /// convolution gives the tracked forward pass's values.
    #[test]
    fn the_untracked_valid_convolution_gives_the_same_values() {
        let (plain, autodiff) = (Device::flex(), Device::flex().autodiff());
        let run = |device: &Device| {
            let x = filled([2, 3, 4, 5, MIN_DIRECT_WIDTH + 3], 1, device);
            let (weight, bias) = (filled([4, 3, 3, 3, 3], 2, device), filled([4], 3, device));
            to_vec(super::super::conv3d_valid(x, weight, Some(bias)))
        };
        assert_eq!(run(&plain), run(&autodiff));
    }

    /// The direct kernel really ran: its result differs from burn's GEMM in
    /// the last bits (another summation order) but not beyond rounding.
    #[test]
    fn the_flex_backend_takes_the_direct_kernel_and_other_shapes_take_burns() {
        let device = Device::flex();
        let (x, weight, bias) =
            (filled([1, 3, 6, 6, 9], 5, &device), filled([5, 3, 3, 3, 3], 6, &device), filled([5], 7, &device));
        let direct = <Flex as KernelOps>::conv3d_same(
            x.clone().try_into_primitive::<Flex>().unwrap(),
            weight.clone().try_into_primitive::<Flex>().unwrap(),
            bias.clone().try_into_primitive::<Flex>().unwrap(),
        );
        let shape = direct_conv_shape(
            &x.clone().try_into_primitive::<Flex>().unwrap(),
            &weight.clone().try_into_primitive::<Flex>().unwrap(),
            &bias.clone().try_into_primitive::<Flex>().unwrap(),
        );
        assert!(shape.is_some(), "a 9-wide volume goes to the direct kernel");
        let direct: Tensor<5> = Tensor::from_primitive::<Flex>(direct);
        assert!(max_diff(direct, burn_conv(x, weight.clone(), bias.clone())) < 1e-4);
        let narrow = filled([1, 3, 6, 6, MIN_DIRECT_WIDTH - 1], 5, &device).try_into_primitive::<Flex>().unwrap();
        let (w, b) = (weight.try_into_primitive::<Flex>().unwrap(), bias.try_into_primitive::<Flex>().unwrap());
        assert!(direct_conv_shape(&narrow, &w, &b).is_none(), "narrow volumes of few channels go to burn");
        let deep = filled([1, 16, 2, 2, 2], 5, &device).try_into_primitive::<Flex>().unwrap();
        let deep_weight = filled([32, 16, 3, 3, 3], 6, &device).try_into_primitive::<Flex>().unwrap();
        let deep_bias = filled([32], 7, &device).try_into_primitive::<Flex>().unwrap();
        assert!(
            direct_conv_shape(&deep, &deep_weight, &deep_bias).is_some(),
            "narrow volumes with channels in groups of 16 go to the channel-lane kernels"
        );
        let even = filled([5, 3, 2, 2, 2], 6, &device).try_into_primitive::<Flex>().unwrap();
        let x9 = filled([1, 3, 6, 6, 9], 5, &device).try_into_primitive::<Flex>().unwrap();
        assert!(direct_conv_shape(&x9, &even, &b).is_none(), "even kernels go to burn");
    }

    /// As in evaluation: data on the autodiff device, parameters of
    /// `model.valid()` on the plain one; and everything plain.
    #[test]
    fn mixed_plain_and_autodiff_inputs_give_burns_values() {
        let (plain, autodiff) = (Device::flex(), Device::flex().autodiff());
        for x_device in [&plain, &autodiff] {
            let x = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH], 5, x_device);
            let weight = filled([2, 2, 3, 3, 3], 6, &plain);
            let bias = filled([2], 7, &plain);
            let ours = conv3d_same(x.clone(), weight.clone(), Some(bias.clone()));
            assert!(max_diff(ours, burn_conv(x, weight, bias)) < 1e-4);
        }
    }

    #[test]
    fn a_convolution_without_bias_or_with_a_narrow_volume_still_computes() {
        let device = Device::flex().autodiff();
        let narrow = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH / 2], 5, &device);
        let (weight, bias) = (filled([2, 2, 3, 3, 3], 6, &device), filled([2], 7, &device));
        let y = conv3d_same(narrow.clone(), weight.clone(), Some(bias.clone()));
        assert!(max_diff(y, burn_conv(narrow.clone(), weight.clone(), bias)) < 1e-5);
        let unbiased = conv3d_same(narrow.clone(), weight.clone(), None);
        let theirs = conv3d(narrow, weight, None, ConvOptions::new([1; 3], [1; 3], [1; 3], 1));
        assert!(max_diff(unbiased, theirs) < 1e-5);
    }

    /// Values and gradients of [`super::super::conv2d`] and
    /// [`super::super::conv_transpose2d`] equal burn's for the windows the
    /// segmentation networks use (strides, dilations, a batch of 2 and at
    /// most 16 output channels, where burn's weight gradient is slowest).
    #[test]
    fn two_dimensional_convolutions_match_burns_in_values_and_gradients() {
        use burn::tensor::module::{conv_transpose2d, conv2d};
        let device = Device::flex().autodiff();
        for (stride, dilation) in [(1, 1), (1, 2), (2, 1), (1, 6)] {
            let pad = dilation;
            let options = ConvOptions::new([stride; 2], [pad; 2], [dilation; 2], 1);
            let x = filled([2, 3, 9, 11], 1, &device).require_grad();
            let weight = filled([5, 3, 3, 3], 2, &device).require_grad();
            let bias = filled([5], 3, &device).require_grad();
            let ours = super::super::conv2d(x.clone(), weight.clone(), Some(bias.clone()), options.clone());
            let theirs = conv2d(x.clone(), weight.clone(), Some(bias.clone()), options);
            let up = filled(theirs.dims(), 4, &device);
            assert!(max_diff(ours.clone(), theirs.clone()) < 1e-5);
            let (g_ours, g_theirs) = ((ours * up.clone()).sum().backward(), (theirs * up).sum().backward());
            for (what, a, b) in [
                ("x", x.grad(&g_ours).unwrap(), x.grad(&g_theirs).unwrap()),
                ("weight", weight.grad(&g_ours).unwrap(), weight.grad(&g_theirs).unwrap()),
            ] {
                let diff = max_diff(a, b);
                assert!(diff < 1e-3, "stride {stride} dilation {dilation}: {what} gradient differs by {diff}");
            }
            assert!(max_diff(bias.grad(&g_ours).unwrap(), bias.grad(&g_theirs).unwrap()) < 1e-3);
        }
        // CosmoGAN's discriminator: 5×5, stride 2, padding 2 on even sides.
        let options = ConvOptions::new([2, 2], [2, 2], [1, 1], 1);
        let x = filled([2, 3, 8, 10], 9, &device).require_grad();
        let weight = filled([4, 3, 5, 5], 10, &device).require_grad();
        let ours = super::super::conv2d(x.clone(), weight.clone(), None, options.clone());
        let theirs = conv2d(x.clone(), weight.clone(), None, options);
        let up = filled(theirs.dims(), 11, &device);
        assert!(max_diff(ours.clone(), theirs.clone()) < 1e-5);
        let (g_ours, g_theirs) = ((ours * up.clone()).sum().backward(), (theirs * up).sum().backward());
        assert!(max_diff(x.grad(&g_ours).unwrap(), x.grad(&g_theirs).unwrap()) < 1e-3);
        assert!(max_diff(weight.grad(&g_ours).unwrap(), weight.grad(&g_theirs).unwrap()) < 1e-3);

        // Transposed: a 3×3 window, and CosmoGAN's generator's (5×5, stride
        // 2, padding 2, one extra row and column), whose input gradients are
        // our forward convolution's.
        for (kernel, c_out, padding, dims) in [(3, 3, 1, [2, 3, 10, 14]), (5, 8, 2, [2, 8, 10, 14])] {
            let options = ConvTransposeOptions::new([2, 2], [padding; 2], [1, 1], [1, 1], 1);
            let x = filled([2, 4, 5, 7], 5, &device).require_grad();
            let weight = filled([4, c_out, kernel, kernel], 6, &device).require_grad();
            let bias = filled([c_out], 7, &device).require_grad();
            let ours = super::super::conv_transpose2d(x.clone(), weight.clone(), Some(bias.clone()), options.clone());
            let theirs = conv_transpose2d(x.clone(), weight.clone(), Some(bias.clone()), options);
            assert_eq!(ours.dims(), dims);
            let up = filled(theirs.dims(), 8, &device);
            assert!(max_diff(ours.clone(), theirs.clone()) < 1e-5);
            let (g_ours, g_theirs) = ((ours * up.clone()).sum().backward(), (theirs * up).sum().backward());
            assert!(max_diff(x.grad(&g_ours).unwrap(), x.grad(&g_theirs).unwrap()) < 1e-3);
            assert!(max_diff(weight.grad(&g_ours).unwrap(), weight.grad(&g_theirs).unwrap()) < 1e-3);
            assert!(max_diff(bias.grad(&g_ours).unwrap(), bias.grad(&g_theirs).unwrap()) < 1e-3);
        }
    }

    #[test]
    fn fused_activations_equal_burns_in_values_and_gradients_bit_for_bit() {
        use burn::tensor::activation::{leaky_relu, relu};
        type Activation = fn(Tensor<4>) -> Tensor<4>;
        let cases: [(&str, Activation, Activation); 2] = [
            ("relu", super::super::relu, relu),
            ("leaky", |x| super::super::leaky_relu(x, 0.2), |x| leaky_relu(x, 0.2)),
        ];
        let bits = |t: Tensor<4>| to_vec(t).iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
        for (name, ours_of, theirs_of) in cases {
            for device in [Device::flex(), Device::flex().autodiff()] {
                // `filled` has exact zeros, where the slope switches, here
                // with NaNs and negative zeros among them; the permuted
                // view is not contiguous; the larger shape spans several
                // of the tasks the pool's threads share.
                for (shape, permuted) in [([2, 3, 4, 5], false), ([2, 3, 4, 5], true), ([2, 8, 64, 96], false)] {
                    // One leaf for each side: burn's backward consumes the graph.
                    let leaf = || {
                        let mut values = to_vec(filled(shape, 1, &device));
                        values.iter_mut().step_by(7).for_each(|v| *v = f32::NAN);
                        values.iter_mut().skip(3).step_by(11).for_each(|v| *v = -0.0);
                        let x = Tensor::<4>::from_data(TensorData::new(values, shape), &device);
                        if device.is_autodiff() { x.require_grad() } else { x }
                    };
                    let (x_ours, x_theirs) = (leaf(), leaf());
                    let view = |x: &Tensor<4>| if permuted { x.clone().permute([0, 2, 1, 3]) } else { x.clone() };
                    let ours = ours_of(view(&x_ours));
                    let theirs = theirs_of(view(&x_theirs));
                    assert_eq!(bits(ours.clone()), bits(theirs.clone()), "{name} {shape:?} values");
                    if !device.is_autodiff() {
                        continue;
                    }
                    let up = filled(theirs.dims(), 2, &device);
                    let (g_ours, g_theirs) = ((ours * up.clone()).sum().backward(), (theirs * up).sum().backward());
                    let (g_ours, g_theirs) = (x_ours.grad(&g_ours).unwrap(), x_theirs.grad(&g_theirs).unwrap());
                    assert_eq!(bits(g_ours), bits(g_theirs), "{name} {shape:?} gradients");
                }
            }
        }
    }

    /// Pool by definition: every 2×2×2 window of every plane, one at a time.
    fn naive(x: &[f32], [n, c, d, h, w]: [usize; 5], pooling: Pooling) -> Vec<f32> {
        let mut out = Vec::new();
        for plane in 0..n * c {
            for z in (0..d).step_by(2) {
                for y in (0..h).step_by(2) {
                    for v in (0..w).step_by(2) {
                        let window: Vec<f32> = (0..8)
                            .map(|k| x[(((plane * d + z + k / 4) * h) + y + (k / 2) % 2) * w + v + k % 2])
                            .collect();
                        out.push(match pooling {
                            Pooling::Max => window.iter().copied().fold(f32::MIN, f32::max),
                            Pooling::Avg => window.iter().sum::<f32>() / 8.0,
                        });
                    }
                }
            }
        }
        out
    }

    #[test]
    fn pooling_equals_the_definition_on_every_window_on_both_paths() {
        let dims = [2, 3, 4, 6, 8];
        let len: usize = dims.iter().product();
        let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % 101) as f32 - 50.0).collect();
        let device = Device::flex();
        for pooling in [Pooling::Max, Pooling::Avg] {
            let t = Tensor::<5>::from_data(TensorData::new(x.clone(), dims), &device);
            let want = naive(&x, dims, pooling);
            let composed: Tensor<5> = Tensor::from_primitive::<Flex>(composed::pool3d_2::<Flex>(
                t.clone().try_into_primitive::<Flex>().unwrap(),
                pooling == Pooling::Avg,
            ));
            for (path, pooled) in [("direct", pool3d(t, pooling)), ("composed", composed)] {
                assert_eq!(pooled.dims(), [2, 3, 2, 3, 4]);
                let got = to_vec(pooled);
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() < 1e-5, "{path} {pooling:?}: {g} != {w}");
                }
            }
        }
    }

    /// The direct kernels and burn's composed pool agree on autodiff
    /// tensors, values and gradients (distinct values: no ties).
    #[test]
    fn direct_and_composed_pools_agree_in_values_and_gradients() {
        let dims = [2, 2, 4, 4, 6];
        let len: usize = dims.iter().product();
        let device = Device::flex().autodiff();
        let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % len) as f32 / 10.0 - 9.0).collect();
        let up: Vec<f32> = (0..len / 8).map(|i| i as f32 - 5.0).collect();
        let up = Tensor::<5>::from_data(TensorData::new(up, [2, 2, 2, 2, 3]), &device);
        for pooling in [Pooling::Max, Pooling::Avg] {
            let run = |direct: bool| {
                let t = Tensor::<5>::from_data(TensorData::new(x.clone(), dims), &device).require_grad();
                let y = if direct {
                    pool3d(t.clone(), pooling)
                } else {
                    type Ad = Autodiff<Flex>;
                    let primitive = t.clone().try_into_primitive::<Ad>().unwrap();
                    Tensor::from_primitive::<Ad>(composed::pool3d_2::<Ad>(primitive, pooling == Pooling::Avg))
                };
                let grads = (y.clone() * up.clone()).sum().backward();
                (to_vec(y), to_vec(t.grad(&grads).unwrap()))
            };
            let (direct, composed) = (run(true), run(false));
            assert_eq!(direct.1.len(), len, "{pooling:?}: no input gradient");
            for (a, b) in direct.0.iter().chain(&direct.1).zip(composed.0.iter().chain(&composed.1)) {
                assert!((a - b).abs() < 1e-5, "{pooling:?}: {a} != {b}");
            }
        }
    }

    /// The CPU's batch normalisation and the composition every other
    /// backend runs agree in values, statistics and gradients (input, γ, β)
    /// for one and several groups.
    #[test]
    fn fused_and_composed_batch_normalisation_agree() {
        type Ad = Autodiff<Flex>;
        let device = Device::flex().autodiff();
        let dims = [4, 3, 5, 6];
        let up = filled(dims, 2, &device);
        for groups in [1, 2, 4] {
            let run = |fused: bool| {
                let x = filled(dims, 1, &device).require_grad();
                let gamma = (filled([3], 3, &device) + 1.5).detach().require_grad();
                let beta = filled([3], 4, &device).require_grad();
                let (y, mean) = if fused {
                    let (y, mean, _) =
                        super::super::batch_norm_training(x.clone(), (gamma.clone(), beta.clone()), 1e-5, groups);
                    (y, to_vec(mean))
                } else {
                    let primitive = |t: &Tensor<4>| t.clone().try_into_primitive::<Ad>().unwrap();
                    let stats = composed::batch_statistics::<Ad>(primitive(&x), groups);
                    let stats: Tensor<3> = Tensor::from_primitive::<Ad>(stats);
                    let mean = stats.mean_dim(1).narrow(0, 0, 1).reshape([3]);
                    let y = composed::batch_norm_train::<Ad>(
                        primitive(&x),
                        gamma.clone().try_into_primitive::<Ad>().unwrap(),
                        beta.clone().try_into_primitive::<Ad>().unwrap(),
                        groups,
                        1e-5,
                    );
                    (Tensor::from_primitive::<Ad>(y), to_vec(mean))
                };
                let grads = (y.clone() * up.clone()).sum().backward();
                [
                    to_vec(y),
                    mean,
                    to_vec(x.grad(&grads).unwrap()),
                    to_vec(gamma.grad(&grads).unwrap()),
                    to_vec(beta.grad(&grads).unwrap()),
                ]
            };
            let (fused, composed) = (run(true), run(false));
            for (what, (a, b)) in ["y", "mean", "dx", "dγ", "dβ"].iter().zip(fused.iter().zip(&composed)) {
                assert_eq!(a.len(), b.len(), "{what}");
                for (a, b) in a.iter().zip(b) {
                    assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "{groups} groups, {what}: {a} against {b}");
                }
            }
        }
    }

    /// Three LSTM steps through the CPU's two cell operations equal the
    /// same steps through their composition of burn's operations (what
    /// other backends run) in values and in the gradients of the gate
    /// inputs and the first cell state.
    #[test]
    fn lstm_cell_operations_equal_their_composition() {
        type Ad = Autodiff<Flex>;
        let device = Device::flex().autodiff();
        let prim = |t: &Tensor<2>| t.clone().try_into_primitive::<Ad>().unwrap();
        let run = |ours: bool| {
            let gates: Vec<Tensor<2>> = (0..3).map(|t| filled([2, 12], t, &device).require_grad()).collect();
            let c0 = filled([2, 3], 7, &device).require_grad();
            let (mut c, mut out) = (c0.clone(), Vec::new());
            for g in &gates {
                let (h, next) = if ours {
                    let next = super::super::lstm_cell_state(g.clone(), c);
                    (super::super::lstm_cell_output(g.clone(), next.clone()), next)
                } else {
                    let next = Tensor::<2>::from_primitive::<Ad>(composed::lstm_cell_state::<Ad>(prim(g), prim(&c)));
                    let h = composed::lstm_cell_output::<Ad>(prim(g), prim(&next));
                    (Tensor::<2>::from_primitive::<Ad>(h), next)
                };
                out.push(h);
                c = next;
            }
            let up = filled([2, 3], 9, &device);
            let loss = out.iter().fold(c.clone().sum(), |l, h| l + (h.clone() * up.clone()).sum());
            let grads = loss.backward();
            let mut all: Vec<Vec<f32>> = out.into_iter().map(to_vec).collect();
            all.extend(gates.iter().map(|g| to_vec(g.grad(&grads).unwrap())));
            all.push(to_vec(c0.grad(&grads).unwrap()));
            all
        };
        let (ours, theirs) = (run(true), run(false));
        assert_eq!(ours.len(), theirs.len());
        for (k, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a.len(), b.len(), "tensor {k}");
            for (a, b) in a.iter().zip(b) {
                assert!((a - b).abs() < 1e-5 * (1.0 + b.abs()), "tensor {k}: {a} against {b}");
            }
        }
    }

    /// The CPU's twin convolution and normalisation (one convolution, the
    /// parameters trained by the first copies) equal the composition
    /// other backends run (two of each, the second on parameters cut from
    /// the graph) in values and every gradient, in one group and two.
    #[test]
    fn twin_kernels_equal_their_composition_of_two_passes() {
        type Ad = Autodiff<Flex>;
        let device = Device::flex().autodiff();
        let prim = |t: &Tensor<4>| t.clone().try_into_primitive::<Ad>().unwrap();
        let prim1 = |t: &Tensor<1>| t.clone().try_into_primitive::<Ad>().unwrap();
        for groups in [1, 2] {
            let run = |ours: bool| {
                let half = filled([2, 3, 9, 8], 1, &device);
                let x = Tensor::stack::<5>(vec![half.clone().detach(), half], 1).reshape([4, 3, 9, 8]).require_grad();
                let weight = filled([5, 3, 3, 3], 2, &device).require_grad();
                let gamma = (filled([5], 3, &device) + 1.5).detach().require_grad();
                let beta = filled([5], 4, &device).require_grad();
                let options = ConvOptions::new([2, 2], [1, 1], [1, 1], 1);
                let y = if ours {
                    let y = super::super::conv2d_twin(x.clone(), weight.clone(), None, options);
                    super::super::batch_norm_training_twin(y, (gamma.clone(), beta.clone()), 1e-5, groups).0
                } else {
                    let y = composed::conv2d_twin::<Ad>(prim(&x), prim(&weight), options);
                    let both = 2 * groups;
                    Tensor::from_primitive::<Ad>(composed::batch_norm_twin::<Ad>(
                        y,
                        (prim1(&gamma), prim1(&beta)),
                        both,
                        1e-5,
                    ))
                };
                let up = filled(y.dims(), 5, &device);
                let grads = (y.clone() * up).sum().backward();
                [
                    to_vec(y),
                    to_vec(x.grad(&grads).unwrap()),
                    to_vec(weight.grad(&grads).unwrap()),
                    to_vec(gamma.grad(&grads).unwrap()),
                    to_vec(beta.grad(&grads).unwrap()),
                ]
            };
            let (ours, theirs) = (run(true), run(false));
            for (what, (a, b)) in ["y", "dx", "dw", "dγ", "dβ"].iter().zip(ours.iter().zip(&theirs)) {
                assert_eq!(a.len(), b.len(), "{what}");
                for (a, b) in a.iter().zip(b) {
                    assert!((a - b).abs() < 1e-3 * (1.0 + b.abs()), "{groups} groups, {what}: {a} against {b}");
                }
            }
        }
    }

    /// The direct 2-D max pool equals burn's `max_pool2d` in values and
    /// input gradient on autodiff tensors (distinct values: no ties), and
    /// an odd side still pools (through burn's).
    #[test]
    fn the_direct_2d_max_pool_equals_burns_in_values_and_gradients() {
        let burns_pool = burn::nn::pool::MaxPool2dConfig::new([2, 2]).with_strides([2, 2]).init();
        let dims = [2, 3, 6, 10];
        let len: usize = dims.iter().product();
        let device = Device::flex().autodiff();
        let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % len) as f32 / 10.0 - 9.0).collect();
        let up: Vec<f32> = (0..len / 4).map(|i| i as f32 - 5.0).collect();
        let up = Tensor::<4>::from_data(TensorData::new(up, [2, 3, 3, 5]), &device);
        let run = |direct: bool| {
            let t = Tensor::<4>::from_data(TensorData::new(x.clone(), dims), &device).require_grad();
            let y = if direct { super::super::max_pool2d_2(t.clone()) } else { burns_pool.forward(t.clone()) };
            let grads = (y.clone() * up.clone()).sum().backward();
            (to_vec(y), to_vec(t.grad(&grads).unwrap()))
        };
        let (direct, burns) = (run(true), run(false));
        assert_eq!((direct.0.len(), direct.1.len()), (len / 4, len));
        assert_eq!(direct, burns);
        let odd = filled([1, 2, 5, 4], 3, &Device::flex());
        assert_eq!(super::super::max_pool2d_2(odd).dims(), [1, 2, 2, 2]);
    }
}
