//! Our kernels behind burn's backend-extension route (`#[backend_extension]`,
//! burn book "Backend Extension"): one trait, [`KernelOps`], whose default
//! bodies compose burn's own primitive operations, so every backend runs
//! them; burn's Flex CPU backend overrides them with the direct kernels,
//! and `Autodiff<Flex>` with the direct kernels plus their hand-written
//! backward passes. The generated `Dispatch` implementation routes each
//! call by the backend its tensors live on.
//!
//! The parts: the trait and its default bodies here and in [`composed`];
//! the Flex overrides in `flex_ops`; the autodiff overrides in
//! `autodiff`, with their backward steps in `backward`.

use burn::backend::ops::ActivationOps;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, backend_extension};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};

use super::precision::Precision;

mod autodiff;
mod backward;
mod composed;
mod flex_ops;
#[cfg(test)]
mod tests;

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

    /// An LSTM layer over a whole sequence ([`lstm_sequence`](super::lstm_sequence)):
    /// from every step's input products `gates_in` [B, T, 4U], the hidden
    /// weight `w` [U, 4U] and `bias` [4U], the outputs h_t [B, T, U].
    fn lstm_sequence(gates_in: FloatTensor<Self>, w: FloatTensor<Self>, bias: FloatTensor<Self>) -> FloatTensor<Self> {
        composed::lstm_sequence::<Self>(gates_in, w, bias)
    }

    /// A dense layer's product x [M, K] · w [K, N]: burn's `matmul`. On
    /// the autodiff CPU backend the input gradient g·wᵀ of a product with
    /// few rows and long ones is [`dense_input_grad`](super::dense_input_grad)'s
    /// dot products, up to 40 times faster than burn's product at an LSTM
    /// step's shapes.
    fn dense_product(x: FloatTensor<Self>, w: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_matmul(x, w)
    }

    /// `x` rounded to `precision` (f32: unchanged); in the backward pass
    /// the gradient is rounded the same way ([`precision`](super::precision)).
    fn round_to(x: FloatTensor<Self>, precision: Precision) -> FloatTensor<Self> {
        composed::round_to::<Self>(x, precision)
    }
}

/// On burn's GPU backends the default bodies (burn's own ops) run.
#[cfg(feature = "gpu")]
impl KernelOps for burn::backend::Cube {}

#[cfg(feature = "gpu")]
impl<C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy> KernelOps
    for burn::backend::Autodiff<burn::backend::Cube, C>
{
}
