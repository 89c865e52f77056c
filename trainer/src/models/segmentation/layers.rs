//! The building blocks both segmentation networks share: convolutions with
//! "same" padding, batch normalisation over groups of samples, and the
//! per-step context a training forward pass carries (dropout masks, the
//! normalisation group).

use crate::kernels::relu;
use burn::nn::conv::{Conv2d, Conv2dConfig, ConvTranspose2d, ConvTranspose2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, PaddingConfig2d};
use burn::tensor::ops::{ConvOptions, ConvTransposeOptions};
use burn::tensor::{Device, Tensor};

use crate::engine::{Cuts, StepContext};
use crate::kernels;
use crate::models::dropout::DropoutMasks;

/// Runs a convolution layer through [`kernels::conv2d`] and
/// [`kernels::conv_transpose2d`]: burn's forward pass, and a weight
/// gradient that is fast for the small batches of these networks (burn's
/// own `forward` computes the same values).
pub trait Apply {
    /// The layer applied to x [N, C, H, W].
    fn apply(&self, x: Tensor<4>) -> Tensor<4>;
}

impl Apply for Conv2d {
    fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        // `conv` builds every layer with explicit padding; the others
        // ("same" computed from the input, "valid") are burn's to work out.
        let PaddingConfig2d::Explicit(top, left, bottom, right) = self.padding else {
            return self.forward(x);
        };
        let options =
            ConvOptions::new_with_padding(self.stride, [(top, bottom), (left, right)], self.dilation, self.groups);
        kernels::conv2d(x, self.weight.val(), self.bias.as_ref().map(|b| b.val()), options)
    }
}

impl Apply for ConvTranspose2d {
    fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        let options =
            ConvTransposeOptions::new(self.stride, self.padding, self.padding_out, self.dilation, self.groups);
        kernels::conv_transpose2d(x, self.weight.val(), self.bias.as_ref().map(|b| b.val()), options)
    }
}

/// What a training forward pass needs beyond its input; inference passes
/// [`Pass::inference`].
pub struct Pass {
    /// Dropout masks (training) or none (inference: no dropout).
    pub masks: Option<DropoutMasks>,
    /// Samples per batch-normalisation group (0: the whole batch).
    pub norm_group: usize,
    /// Where the forward pass is cut for `--reduce-during-backward`
    /// (off unless the engine asks, [`Pass::with_cuts`]).
    pub cuts: Cuts,
}

impl Pass {
    /// An inference pass: no dropout; BatchNorm uses its running
    /// statistics because the network is in inference mode.
    pub fn inference() -> Self {
        Pass { masks: None, norm_group: 0, cuts: Cuts::off() }
    }

    /// A training pass of step `step`: its dropout masks, BatchNorm groups
    /// of `norm_group` samples, no cuts.
    pub fn training(step: &StepContext, norm_group: usize) -> Self {
        Pass { masks: Some(DropoutMasks::for_step(step.seed, step.step, step.rank)), norm_group, cuts: Cuts::off() }
    }

    /// Run `forward` with the engine's `cuts` in this pass, and hand them
    /// back filled.
    pub fn with_cuts<T>(&mut self, cuts: &mut Cuts, forward: impl FnOnce(&mut Self) -> T) -> T {
        std::mem::swap(&mut self.cuts, cuts);
        let out = forward(self);
        std::mem::swap(&mut self.cuts, cuts);
        out
    }

    /// `x` cut from the graph that made it when the engine asks
    /// ([`Cuts::cut`]).
    pub fn cut<const D: usize>(&mut self, x: Tensor<D>) -> Tensor<D> {
        self.cuts.cut(x)
    }

    /// `x` with dropout `p` in training, unchanged in inference.
    pub fn dropout(&mut self, x: Tensor<4>, p: f32) -> Tensor<4> {
        match &mut self.masks {
            Some(masks) => masks.apply(x, p),
            None => x,
        }
    }

    /// Batch normalisation then ReLU.
    pub fn norm_relu(&self, norm: &BatchNorm, x: Tensor<4>) -> Tensor<4> {
        relu(self.norm(norm, x))
    }

    /// Batch normalisation of `x` [N, C, H, W]. In training, the statistics
    /// are those of each group of `norm_group` samples ("ghost" batch
    /// normalisation, Hoffer et al. 2017); the running statistics move by
    /// the mean of the groups' statistics. Group g holds samples g, g + G,
    /// g + 2G, … of the N / `norm_group` = G groups: the samples the
    /// distributed sampler (`loader::sampler`, which deals a global batch
    /// out to the ranks in turn) would give rank g, so one rank with a batch
    /// of 2b in groups of b normalises exactly as two ranks with batches of
    /// b do. With one group this is burn's `BatchNorm::forward`, computed
    /// by [`kernels::batch_norm_training`].
    pub fn norm(&self, norm: &BatchNorm, x: Tensor<4>) -> Tensor<4> {
        let training = x.device().is_autodiff() && norm.training.is_enabled();
        if !training {
            return norm.forward(x);
        }
        let (y, mean, variance) =
            normalise_in_groups(x, (norm.gamma.val(), norm.beta.val()), norm.epsilon, self.norm_group);
        moved_by(norm, mean, variance);
        y
    }

    /// [`norm`](Self::norm) in training of a twin batch x [2N, C, H, W]
    /// ([`kernels::twin`]): each copy normalised as [`norm`](Self::norm)
    /// normalises N samples, γ and β trained by the first copies, the
    /// running statistics moved once.
    pub fn norm_twin(&self, norm: &BatchNorm, x: Tensor<4>) -> Tensor<4> {
        let groups = groups_of(x.dims()[0] / 2, self.norm_group);
        let (y, mean, variance) =
            kernels::batch_norm_training_twin(x, (norm.gamma.val(), norm.beta.val()), norm.epsilon, groups);
        moved_by(norm, mean, variance);
        y
    }
}

/// The running statistics of `norm` moved by a batch's `mean` and
/// `variance` (burn's momentum: running · (1 − m) + batch · m).
fn moved_by(norm: &BatchNorm, mean: Tensor<1>, variance: Tensor<1>) {
    let keep = 1.0 - norm.momentum;
    let device = mean.device();
    let running_mean = norm.running_mean.value_sync().to_device(&device);
    let running_var = norm.running_var.value_sync().to_device(&device);
    norm.running_mean.update((running_mean.mul_scalar(keep) + mean.mul_scalar(norm.momentum)).detach());
    norm.running_var.update((running_var.mul_scalar(keep) + variance.mul_scalar(norm.momentum)).detach());
}

/// Groups of `group` samples a batch of `n` is normalised in: one (the
/// whole batch) when `group` is 0 or does not divide `n`.
fn groups_of(n: usize, group: usize) -> usize {
    if group == 0 || group >= n || !n.is_multiple_of(group) { 1 } else { n / group }
}

/// `x` [N, C, H, W] normalised by the statistics of each group of `group`
/// samples (the whole batch when `group` is 0 or does not divide N),
/// scaled by `gamma` and shifted by `beta`; with the groups' mean
/// statistics (mean, biased variance per channel, detached), which
/// [`Pass::norm`] moves the running statistics by. Group g holds samples
/// g, g + G, g + 2G, … (see [`Pass::norm`]).
pub fn normalise_in_groups(
    x: Tensor<4>,
    affine: (Tensor<1>, Tensor<1>),
    epsilon: f64,
    group: usize,
) -> (Tensor<4>, Tensor<1>, Tensor<1>) {
    let groups = groups_of(x.dims()[0], group);
    kernels::batch_norm_training(x, affine, epsilon, groups)
}

/// A `k`×`k` convolution from `from` to `to` channels with "same" padding
/// (the output is the input's size divided by `stride`), dilated by
/// `dilation`, with or without a bias.
pub fn conv(
    [from, to]: [usize; 2],
    k: usize,
    (stride, dilation): (usize, usize),
    bias: bool,
    device: &Device,
) -> Conv2d {
    let pad = dilation * (k - 1) / 2;
    Conv2dConfig::new([from, to], [k, k])
        .with_stride([stride; 2])
        .with_dilation([dilation; 2])
        .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
        .with_bias(bias)
        .init(device)
}

/// A 3×3 transposed convolution with stride 2 that doubles height and
/// width exactly (padding 1, output padding 1), as the Tiramisu's
/// transition up (Jégou et al. 2017, Table 1) and the full-resolution
/// decoder use.
pub fn upsample2(from: usize, to: usize, device: &Device) -> ConvTranspose2d {
    ConvTranspose2dConfig::new([from, to], [3, 3])
        .with_stride([2, 2])
        .with_padding([1, 1])
        .with_padding_out([1, 1])
        .init(device)
}

/// Batch normalisation of `features` channels (burn's defaults: momentum
/// 0.1, epsilon 1e-5, as PyTorch's).
pub fn norm(features: usize, device: &Device) -> BatchNorm {
    BatchNormConfig::new(features).init(device)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::{Int, TensorData};

    use super::*;

    fn values(t: Tensor<4>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    /// Groups of b samples, dealt out in turn, normalise as separate
    /// batches of b would, and the running statistics move by the groups'
    /// mean statistics.
    #[test]
    fn grouped_normalisation_equals_normalising_each_group_alone() {
        let device = Device::flex().autodiff();
        let x: Vec<f32> = (0..4 * 3 * 2 * 2).map(|i| ((i * 37 % 23) as f32 - 11.0) / 5.0).collect();
        let x = Tensor::<4>::from_data(TensorData::new(x, [4, 3, 2, 2]), &device);
        let grouped = norm(3, &device);
        let pass = Pass { norm_group: 2, ..Pass::inference() };
        let together = values(pass.norm(&grouped, x.clone()));
        // Group 0 is samples 0 and 2, group 1 samples 1 and 3 (as ranks 0
        // and 1 would get them).
        let (alone_a, alone_b) = (norm(3, &device), norm(3, &device));
        let pick = |a: usize, b: usize| {
            let index = Tensor::<1, Int>::from_data(TensorData::new(vec![a as i64, b as i64], [2]), &device);
            x.clone().select(0, index)
        };
        let (a, b) = (values(alone_a.forward(pick(0, 2))), values(alone_b.forward(pick(1, 3))));
        let per_sample = 3 * 2 * 2;
        let apart: Vec<f32> = [&a[..per_sample], &b[..per_sample], &a[per_sample..], &b[per_sample..]].concat();
        for (a, b) in together.iter().zip(&apart) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        let running = |n: &BatchNorm| n.running_mean.value().into_data().try_to_vec::<f32>().unwrap();
        let (a, b) = (running(&alone_a), running(&alone_b));
        for (g, (a, b)) in running(&grouped).iter().zip(a.iter().zip(&b)) {
            assert!((g - (a + b) / 2.0).abs() < 1e-6, "{g} vs mean of {a} and {b}");
        }
        // One group is burn's own BatchNorm, in values, gradients and
        // running statistics.
        let whole = Pass::inference();
        let (mine, burns) = (norm(3, &device), norm(3, &device));
        let leaf = || x.clone().detach().require_grad();
        let (x_mine, x_burns) = (leaf(), leaf());
        let (y_mine, y_burns) = (whole.norm(&mine, x_mine.clone()), burns.forward(x_burns.clone()));
        let close = |a: Vec<f32>, b: Vec<f32>, what: &str| {
            for (a, b) in a.iter().zip(&b) {
                assert!((a - b).abs() < 1e-5, "{what}: {a} vs {b}");
            }
        };
        close(values(y_mine.clone()), values(y_burns.clone()), "y");
        let up: Vec<f32> = (0..4 * 3 * 2 * 2).map(|i| ((i * 13 % 17) as f32 - 8.0) / 3.0).collect();
        let up = Tensor::<4>::from_data(TensorData::new(up, [4, 3, 2, 2]), &device);
        let (g_mine, g_burns) = ((y_mine * up.clone()).sum().backward(), (y_burns * up).sum().backward());
        close(values(x_mine.grad(&g_mine).unwrap()), values(x_burns.grad(&g_burns).unwrap()), "dx");
        let vec1 = |t: Tensor<1>| t.into_data().try_to_vec::<f32>().unwrap();
        close(vec1(mine.gamma.grad(&g_mine).unwrap()), vec1(burns.gamma.grad(&g_burns).unwrap()), "dγ");
        close(vec1(mine.beta.grad(&g_mine).unwrap()), vec1(burns.beta.grad(&g_burns).unwrap()), "dβ");
        close(running(&mine), running(&burns), "running mean");
    }

    #[test]
    fn same_padding_keeps_the_size_and_the_transposed_convolution_doubles_it() {
        let device = Device::flex();
        let x = Tensor::<4>::ones([1, 2, 6, 10], &device);
        for (k, dilation) in [(3, 1), (5, 1), (3, 2), (3, 6)] {
            assert_eq!(conv([2, 4], k, (1, dilation), true, &device).forward(x.clone()).dims(), [1, 4, 6, 10]);
        }
        assert_eq!(conv([2, 4], 3, (2, 1), true, &device).forward(x.clone()).dims(), [1, 4, 3, 5]);
        assert_eq!(upsample2(2, 3, &device).forward(x).dims(), [1, 3, 12, 20]);
    }

    /// The gradients burn's autodiff gives a dilated convolution (the
    /// ASPP's) and a stride-2 transposed convolution (the transitions up
    /// and the decoder) against central finite differences of
    /// f = Σ r · layer(x), for the input and the weights.
    #[test]
    fn dilated_and_transposed_convolution_gradients_match_finite_differences() {
        let device = Device::flex().autodiff();
        let wave = |n: usize, k: usize| -> Vec<f32> { (0..n).map(|i| ((i * k % 17) as f32 - 8.0) / 8.0).collect() };
        let dims_x = [1, 2, 7, 6];
        let x0 = wave(dims_x.iter().product(), 7);
        type Layer = Box<dyn Fn(Tensor<4>, Tensor<4>) -> Tensor<4>>;
        let cases: Vec<(&str, Layer, [usize; 4])> = vec![
            (
                "dilated 3x3, rate 2",
                Box::new(|x, w| {
                    let options = burn::tensor::ops::ConvOptions::new([1, 1], [2, 2], [2, 2], 1);
                    burn::tensor::module::conv2d(x, w, None, options)
                }),
                [3, 2, 3, 3],
            ),
            (
                "transposed 3x3, stride 2",
                Box::new(|x, w| {
                    let options = burn::tensor::ops::ConvTransposeOptions::new([2, 2], [1, 1], [1, 1], [1, 1], 1);
                    burn::tensor::module::conv_transpose2d(x, w, None, options)
                }),
                [2, 3, 3, 3],
            ),
        ];
        for (name, layer, dims_w) in cases {
            let w0 = wave(dims_w.iter().product(), 5);
            let f = |x: &[f32], w: &[f32]| -> (Tensor<1>, Tensor<4>, Tensor<4>) {
                let x = Tensor::<4>::from_data(TensorData::new(x.to_vec(), dims_x), &device).require_grad();
                let w = Tensor::<4>::from_data(TensorData::new(w.to_vec(), dims_w), &device).require_grad();
                let y = layer(x.clone(), w.clone());
                let r = Tensor::<4>::from_data(TensorData::new(wave(y.dims().iter().product(), 3), y.dims()), &device);
                ((y * r).sum(), x, w)
            };
            let value = |x: &[f32], w: &[f32]| f64::from(f(x, w).0.into_data().try_to_vec::<f32>().unwrap()[0]);
            let (total, x, w) = f(&x0, &w0);
            let grads = total.backward();
            let analytic_x = x.grad(&grads).unwrap().into_data().try_to_vec::<f32>().unwrap();
            let analytic_w = w.grad(&grads).unwrap().into_data().try_to_vec::<f32>().unwrap();
            let eps = 1e-2f32;
            for (which, analytic, len) in [("input", &analytic_x, x0.len()), ("weights", &analytic_w, w0.len())] {
                for i in (0..len).step_by(3) {
                    let shifted = |d: f32| {
                        let (mut x, mut w) = (x0.clone(), w0.clone());
                        if which == "input" {
                            x[i] += d
                        } else {
                            w[i] += d
                        }
                        value(&x, &w)
                    };
                    let numeric = (shifted(eps) - shifted(-eps)) / (2.0 * f64::from(eps));
                    let got = f64::from(analytic[i]);
                    assert!(
                        (got - numeric).abs() <= 2e-3 * (1.0 + numeric.abs()),
                        "{name}, {which} {i}: {got} vs {numeric}"
                    );
                }
            }
        }
    }
}
