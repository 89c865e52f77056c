//! Operations our models need that burn's CPU backend does not run fast
//! enough, or at all: stride-1 "same" and "valid" 3-D convolutions
//! ([`conv3d_same`], [`conv3d_valid`]),
//! 3-D pooling over 2³ windows ([`pool3d`]; burn 0.22 has no 3-D
//! pooling), 2-D convolutions with our weight gradients ([`conv2d`],
//! [`conv_transpose2d`]), training-mode batch normalisation
//! ([`batch_norm_training`]) and LeakyReLU ([`leaky_relu`]).
//!
//! Model code calls these functions on plain `Tensor`s and never names a
//! backend. They go through burn's backend-extension route ([`ops`]): on
//! burn's Flex CPU backend the direct kernels ([`direct_conv`], which
//! hands volumes narrower than a vector to the private `channel_conv`, and
//! [`direct_pool`]) run, with their own backward passes under autodiff;
//! every other backend (a GPU) runs the same operation composed of burn's
//! own ops. Convolutions and dense layers compute in the precision
//! [`precision`] holds (`trainer train --precision`).
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//! use trainer::kernels::{Pooling, pool3d};
//!
//! let x = Tensor::<5>::ones([1, 2, 4, 4, 4], &Device::flex());
//! assert_eq!(pool3d(x, Pooling::Avg).dims(), [1, 2, 2, 2, 2]);
//! ```

mod activation;
pub mod batch_norm;
pub mod bf16_gemm;
pub mod calibrate;
mod channel_conv;
mod channel_tile_conv;
pub mod columns;
pub mod conv2d_forward;
pub mod conv2d_grad;
mod conv_shape;
pub mod conv_transpose2d;
pub mod cpu;
pub mod dense_input_grad;
pub mod direct_conv;
mod direct_conv2d;
mod direct_conv2d_bf16;
pub mod direct_pool;
mod direct_weight_grad2d;
mod flex;
mod lane_conv_transpose2d;
mod lanes;
pub mod lstm_cell;
pub mod lstm_sequence;
pub mod ops;
mod pair_weight_grad3d;
mod pair_weight_grad3d_bf16;
pub mod precision;
mod shifted_weight_grad2d;
pub mod strided_gemm;
pub mod twin;
pub(crate) mod uninit;
pub mod wait;

use burn::backend::Dispatch;
use burn::nn::Linear;
use burn::tensor::Tensor;
use burn::tensor::module::{conv3d, linear as burn_linear};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};

pub use ops::{KernelOps, MIN_DIRECT_WIDTH};
pub use precision::Precision;

/// Runs `work` on a thread of rayon's global pool, the calling thread
/// waiting for it. Our kernels and burn's split their work with rayon:
/// from a thread outside the pool each split hands its jobs to the pool
/// and puts the caller to sleep until they are done, two context
/// switches per operation, which on a small network's step (hundreds of
/// small operations) kept the kernel's scheduler busy for a third of the
/// time; from a worker, a split stays on that worker and the others
/// steal from it. The trainer binary runs everything in here. Nothing
/// else may then hand the pool work that this thread waits for (the
/// loader's workers and the allreduce thread use no rayon): with a pool
/// of one thread that would never run.
///
/// The pool's threads flush denormals to zero from the first call on
/// ([`cpu::flush_denormals`]): every thread that runs a kernel is one of
/// them.
pub fn on_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    static FLUSHING: std::sync::Once = std::sync::Once::new();
    FLUSHING.call_once(|| {
        rayon::broadcast(|_| cpu::flush_denormals());
    });
    rayon::scope(|_| work())
}

/// Which reduction a pooling layer applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Maximum of each 2×2×2 window (MLPerf HPC CosmoFlow).
    Max,
    /// Mean of each 2×2×2 window (CosmoFlow SC18).
    Avg,
}

/// `conv3d(x, weight, bias)` with stride 1, dilation 1, one group and
/// `k / 2` zeros of padding: x [N, C_in, D, H, W], weight [C_out, C_in, k,
/// k, k] with odd `k`; in this thread's precision ([`precision`]), as are
/// [`conv2d`], [`conv_transpose2d`] and [`linear`].
pub fn conv3d_same(x: Tensor<5>, weight: Tensor<5>, bias: Option<Tensor<1>>) -> Tensor<5> {
    conv3d_stride_1(x, weight, bias, false)
}

/// `conv3d(x, weight, bias)` with stride 1, dilation 1, one group and no
/// padding (a "valid" convolution): x [N, C_in, D, H, W], weight [C_out,
/// C_in, k, k, k] with odd `k`, the output k - 1 smaller in D, H and W; in
/// this thread's precision.
pub fn conv3d_valid(x: Tensor<5>, weight: Tensor<5>, bias: Option<Tensor<1>>) -> Tensor<5> {
    conv3d_stride_1(x, weight, bias, true)
}

/// [`conv3d_valid`] or [`conv3d_same`]: ours with a bias, burn's without.
fn conv3d_stride_1(x: Tensor<5>, weight: Tensor<5>, bias: Option<Tensor<1>>, valid: bool) -> Tensor<5> {
    let p = precision::current();
    let (x, weight, bias) = (rounded(x, p), rounded(weight, p), bias.map(|b| rounded(b, p)));
    let y = match bias {
        Some(bias) => {
            let (x, weight, bias) = (x.into_dispatch(), weight.into_dispatch(), bias.into_dispatch());
            Tensor::from_dispatch(if valid {
                <Dispatch as KernelOps>::conv3d_valid(x, weight, bias)
            } else {
                <Dispatch as KernelOps>::conv3d_same(x, weight, bias)
            })
        }
        None => {
            let padding = if valid { 0 } else { weight.dims()[2] / 2 };
            conv3d(x, weight, None, ConvOptions::new([1; 3], [padding; 3], [1; 3], 1))
        }
    };
    rounded(y, p)
}

/// burn's `conv3d(x, weight, bias, options)` in this thread's precision.
pub fn conv3d_in_precision(
    x: Tensor<5>,
    weight: Tensor<5>,
    bias: Option<Tensor<1>>,
    options: ConvOptions<3>,
) -> Tensor<5> {
    let p = precision::current();
    let y = conv3d(rounded(x, p), rounded(weight, p), bias.map(|b| rounded(b, p)), options);
    rounded(y, p)
}

/// `layer.forward(x)` (a dense layer) in this thread's precision; under
/// f32 its product is [`KernelOps::dense_product`], on x's rows folded
/// into one matrix.
pub fn linear<const D: usize>(layer: &Linear, x: Tensor<D>) -> Tensor<D> {
    let p = precision::current();
    if p == Precision::F32 {
        let weight = layer.weight.val();
        let [inputs, outputs] = weight.dims();
        let mut dims = x.dims();
        let rows = dims[..D - 1].iter().product::<usize>();
        let x = x.reshape([rows, inputs]).into_dispatch();
        let mut y = Tensor::<2>::from_dispatch(<Dispatch as KernelOps>::dense_product(x, weight.into_dispatch()));
        if let Some(bias) = &layer.bias {
            y = y + bias.val().unsqueeze::<2>();
        }
        dims[D - 1] = outputs;
        return y.reshape(dims);
    }
    let bias = layer.bias.as_ref().map(|b| rounded(b.val(), p));
    rounded(burn_linear(rounded(x, p), rounded(layer.weight.val(), p), bias), p)
}

/// `t` rounded to precision `p` ([`precision`]), its gradient rounded the
/// same way in the backward pass; `t` itself under f32.
pub fn rounded<const D: usize>(t: Tensor<D>, p: Precision) -> Tensor<D> {
    if p == Precision::F32 {
        return t;
    }
    Tensor::from_dispatch(<Dispatch as KernelOps>::round_to(t.into_dispatch(), p))
}

/// Pool `x` of shape [N, C, D, H, W] (D, H, W even) by 2 in every spatial
/// dimension.
pub fn pool3d(x: Tensor<5>, pooling: Pooling) -> Tensor<5> {
    let x = x.into_dispatch();
    Tensor::from_dispatch(match pooling {
        Pooling::Max => <Dispatch as KernelOps>::max_pool3d_2(x),
        Pooling::Avg => <Dispatch as KernelOps>::avg_pool3d_2(x),
    })
}

/// 2×2 max pooling with stride 2 of `x` [N, C, H, W]: on the CPU our
/// kernel for even H and W (forward and backward in one pass each), burn's
/// `max_pool2d` otherwise.
pub fn max_pool2d_2(x: Tensor<4>) -> Tensor<4> {
    Tensor::from_dispatch(<Dispatch as KernelOps>::max_pool2d_2(x.into_dispatch()))
}

/// Batch normalisation in training mode of x [N, C, ...] by the
/// statistics of each of `groups` groups of samples (sample n in group
/// n mod `groups`, which must divide N), scaled by `gamma` and shifted by
/// `beta` [C]. Also gives the groups' mean statistics per channel, mean
/// and biased variance (detached), which running statistics move by. On
/// the CPU one pass for the statistics, one to normalise, two backward
/// ([`batch_norm`]); burn's `batch_norm_train` with one group otherwise.
pub fn batch_norm_training<const D: usize>(
    x: Tensor<D>,
    (gamma, beta): (Tensor<1>, Tensor<1>),
    epsilon: f64,
    groups: usize,
) -> (Tensor<D>, Tensor<1>, Tensor<1>) {
    let channels = x.dims()[1];
    let statistics: Tensor<3> =
        Tensor::from_dispatch(<Dispatch as KernelOps>::batch_statistics(x.clone().into_dispatch(), groups)).detach();
    let y = Tensor::from_dispatch(<Dispatch as KernelOps>::batch_norm_with_statistics(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        statistics.clone().into_dispatch(),
        groups,
        epsilon,
    ));
    let per_channel = statistics.mean_dim(1);
    let (mean, variance) = (per_channel.clone().narrow(0, 0, 1), per_channel.narrow(0, 1, 1));
    (y, mean.reshape([channels]), variance.reshape([channels]))
}

/// [`batch_norm_training`] of a twin batch x [2N, C, ...] ([`twin`]) whose
/// halves are each normalised in `groups` groups: the copies normalised
/// apart (in twice as many groups), γ's and β's gradients from the first
/// copies only. The statistics returned are the first copies' (the
/// second's are the same).
pub fn batch_norm_training_twin<const D: usize>(
    x: Tensor<D>,
    (gamma, beta): (Tensor<1>, Tensor<1>),
    epsilon: f64,
    groups: usize,
) -> (Tensor<D>, Tensor<1>, Tensor<1>) {
    let (channels, both) = (x.dims()[1], twin::twin_groups(groups));
    let statistics: Tensor<3> =
        Tensor::from_dispatch(<Dispatch as KernelOps>::batch_statistics(x.clone().into_dispatch(), both)).detach();
    let y = Tensor::from_dispatch(<Dispatch as KernelOps>::batch_norm_twin_with_statistics(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        statistics.clone().into_dispatch(),
        both,
        epsilon,
    ));
    // Groups 2g hold the first copies ([2, 2G, C] as [2, G, 2, C]).
    let firsts = statistics.reshape([2, groups as i64, 2, channels as i64]).narrow(2, 0, 1);
    let per_channel = firsts.mean_dim(1).reshape([2, channels]);
    let (mean, variance) = (per_channel.clone().narrow(0, 0, 1), per_channel.narrow(0, 1, 1));
    (y, mean.reshape([channels]), variance.reshape([channels]))
}

/// An LSTM layer over a whole sequence as one node of the graph
/// ([`lstm_sequence`]): from every step's input products `gates_in` [B, T,
/// 4U], the hidden weight `w` [U, 4U] and `bias` [4U], the outputs h_t
/// [B, T, U].
pub fn lstm_sequence(gates_in: Tensor<3>, w: Tensor<2>, bias: Tensor<1>) -> Tensor<3> {
    Tensor::from_dispatch(<Dispatch as KernelOps>::lstm_sequence(
        gates_in.into_dispatch(),
        w.into_dispatch(),
        bias.into_dispatch(),
    ))
}

/// An LSTM step's next cell state c' = σ(f)·c + σ(i)·tanh(g) from the
/// summed gate inputs `gates` [B, 4U] (PyTorch's order i, f, g, o) and
/// the cell state `c` [B, U]: one node of the graph ([`lstm_cell`]).
pub fn lstm_cell_state(gates: Tensor<2>, c: Tensor<2>) -> Tensor<2> {
    Tensor::from_dispatch(<Dispatch as KernelOps>::lstm_cell_state(gates.into_dispatch(), c.into_dispatch()))
}

/// An LSTM step's output h' = σ(o)·tanh(c') from its gate inputs [B, 4U]
/// and the next cell state [B, U] ([`lstm_cell_state`]): one node.
pub fn lstm_cell_output(gates: Tensor<2>, c_next: Tensor<2>) -> Tensor<2> {
    Tensor::from_dispatch(<Dispatch as KernelOps>::lstm_cell_output(gates.into_dispatch(), c_next.into_dispatch()))
}

/// ReLU (x where x > 0 or NaN, 0 elsewhere): burn's `activation::relu`,
/// forward and backward by the pool's threads on the CPU
/// ([`KernelOps::fused_relu`]).
pub fn relu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as KernelOps>::fused_relu(x.into_dispatch()))
}

/// LeakyReLU (x where x ≥ 0, `negative_slope`·x elsewhere; the slope
/// positive): burn's `activation::leaky_relu` in one pass forward and one
/// backward on the CPU ([`KernelOps::fused_leaky_relu`]).
pub fn leaky_relu<const D: usize>(x: Tensor<D>, negative_slope: f32) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as KernelOps>::fused_leaky_relu(x.into_dispatch(), negative_slope))
}

/// burn's `conv2d(x, weight, bias, options)`, x [N, C_in, H, W], whose
/// weight gradient on the CPU is [`conv2d_grad::weight_grad`] (burn's is
/// slow for small batches: see there).
pub fn conv2d(x: Tensor<4>, weight: Tensor<4>, bias: Option<Tensor<1>>, options: ConvOptions<2>) -> Tensor<4> {
    let p = precision::current();
    let y = Tensor::from_dispatch(<Dispatch as KernelOps>::conv2d_unbiased(
        rounded(x, p).into_dispatch(),
        rounded(weight, p).into_dispatch(),
        options,
    ));
    rounded(with_bias(y, bias.map(|b| rounded(b, p))), p)
}

/// [`conv2d`] of a twin batch x [2N, C_in, H, W] ([`twin`]): the same
/// values, computed once for the two copies; the weight's and the bias'
/// gradients from the first copies only, the input's for both.
pub fn conv2d_twin(x: Tensor<4>, weight: Tensor<4>, bias: Option<Tensor<1>>, options: ConvOptions<2>) -> Tensor<4> {
    let p = precision::current();
    let pairs = x.dims()[0] / 2;
    let y = Tensor::from_dispatch(<Dispatch as KernelOps>::conv2d_twin_unbiased(
        rounded(x, p).into_dispatch(),
        rounded(weight, p).into_dispatch(),
        options,
    ));
    let Some(bias) = bias.map(|b| rounded(b, p)) else {
        return rounded(y, p);
    };
    // The bias of each copy: the trained one for the first, a frozen one
    // for the second, pair after pair.
    let channels = bias.dims()[0];
    let per_copy: Tensor<2> = Tensor::stack(vec![bias.clone(), bias.detach()], 0);
    let per_sample = per_copy.repeat_dim(0, pairs).reshape([2 * pairs, channels, 1, 1]);
    rounded(y + per_sample, p)
}

/// burn's `conv_transpose2d(x, weight, bias, options)`, with the weight
/// gradient of [`conv2d`].
pub fn conv_transpose2d(
    x: Tensor<4>,
    weight: Tensor<4>,
    bias: Option<Tensor<1>>,
    options: ConvTransposeOptions<2>,
) -> Tensor<4> {
    let p = precision::current();
    let y = Tensor::from_dispatch(<Dispatch as KernelOps>::conv_transpose2d_unbiased(
        rounded(x, p).into_dispatch(),
        rounded(weight, p).into_dispatch(),
        options,
    ));
    rounded(with_bias(y, bias.map(|b| rounded(b, p))), p)
}

/// `y` [N, C, H, W] plus `bias` [C] on every pixel.
fn with_bias(y: Tensor<4>, bias: Option<Tensor<1>>) -> Tensor<4> {
    match bias {
        Some(bias) => {
            let channels = bias.dims()[0];
            y + bias.reshape([1, channels, 1, 1])
        }
        None => y,
    }
}
