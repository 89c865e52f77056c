//! 3-D pooling with non-overlapping cubic windows of 2 (burn 0.22 has no
//! 3-D pooling). On burn's Flex CPU backend it runs the
//! [`direct_pool`](super::direct_pool) kernels with their own backward
//! pass; elsewhere it is built from burn's 2-D pools: pool H and W with the
//! 2-D kernel, then pairs along D by a reshape and a reduction (exact,
//! forward and backward, because the windows do not overlap).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::{Autodiff, Flex};
use burn::tensor::module::{avg_pool2d, max_pool2d};
use burn::tensor::ops::{AvgPoolOptions, MaxPoolOptions};
use burn::tensor::{Shape, Tensor};

use super::direct_pool;
use super::flex::{AutodiffTensor, OnFlex, flex, on_flex, values};

/// Which reduction a pooling layer applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Maximum of each 2×2×2 window (MLPerf HPC CosmoFlow).
    Max,
    /// Mean of each 2×2×2 window (CosmoFlow SC18).
    Avg,
}

/// Pool `x` of shape [N, C, D, H, W] (D, H, W even) by 2 in every spatial
/// dimension.
pub fn pool3d(x: Tensor<5>, pooling: Pooling) -> Tensor<5> {
    match direct(&x, pooling) {
        Some(y) => y,
        None => composed(x, pooling),
    }
}

/// The pool from burn's 2-D pools, for any backend.
fn composed(x: Tensor<5>, pooling: Pooling) -> Tensor<5> {
    let [n, c, d, h, w] = x.dims();
    let planes = x.reshape([n * c, d, h, w]);
    let halved = match pooling {
        Pooling::Max => max_pool2d(planes, MaxPoolOptions::new([2, 2])),
        Pooling::Avg => avg_pool2d(planes, AvgPoolOptions::new([2, 2])),
    };
    let pairs = halved.reshape([n * c, d / 2, 2, (h / 2) * (w / 2)]);
    let reduced = match pooling {
        Pooling::Max => pairs.max_dim(2),
        Pooling::Avg => pairs.mean_dim(2),
    };
    reduced.reshape([n, c, d / 2, h / 2, w / 2])
}

/// The pool through the direct kernels, if `x` lives on the Flex backend.
fn direct(x: &Tensor<5>, pooling: Pooling) -> Option<Tensor<5>> {
    let [n, c, d, h, w] = x.dims();
    if [d, h, w].iter().any(|e| e % 2 == 1) {
        return None;
    }
    let volume = [d, h, w];
    let out_shape = Shape::new([n, c, d / 2, h / 2, w / 2]);
    let y = match on_flex(x)? {
        OnFlex::Plain(t) => {
            let pooled = match pooling {
                Pooling::Max => direct_pool::max_forward(volume, &values(&t)).0,
                Pooling::Avg => direct_pool::avg_forward(volume, &values(&t)),
            };
            Tensor::from_primitive::<Flex>(flex(pooled, out_shape))
        }
        OnFlex::Autodiff(t) => Tensor::from_primitive::<Autodiff<Flex>>(tracked(t, volume, out_shape, pooling)),
    };
    Some(y)
}

#[derive(Debug)]
struct MaxPoolBackward;

impl Backward<Flex, 1> for MaxPoolBackward {
    /// Which voxel of each window held its maximum; the input's shape.
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

fn tracked(x: AutodiffTensor, volume: [usize; 3], out_shape: Shape, pooling: Pooling) -> AutodiffTensor {
    let input = values(x.primitive());
    let in_shape = Shape::new([out_shape[0], out_shape[1], volume[0], volume[1], volume[2]]);
    match pooling {
        Pooling::Max => {
            let (y, arg) = direct_pool::max_forward(volume, &input);
            match MaxPoolBackward.prepare::<NoCheckpointing>([x.node()]).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish((arg, volume, in_shape), flex(y, out_shape)),
                OpsKind::UnTracked(prep) => prep.finish(flex(y, out_shape)),
            }
        }
        Pooling::Avg => {
            let y = direct_pool::avg_forward(volume, &input);
            match AvgPoolBackward.prepare::<NoCheckpointing>([x.node()]).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish((volume, in_shape), flex(y, out_shape)),
                OpsKind::UnTracked(prep) => prep.finish(flex(y, out_shape)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

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
    fn pooling_equals_the_definition_on_every_window() {
        let dims = [2, 3, 4, 6, 8];
        let len: usize = dims.iter().product();
        let x: Vec<f32> = (0..len).map(|i| ((i * 7919) % 101) as f32 - 50.0).collect();
        let device = Device::flex();
        for pooling in [Pooling::Max, Pooling::Avg] {
            let t = Tensor::<5>::from_data(TensorData::new(x.clone(), dims), &device);
            let want = naive(&x, dims, pooling);
            for (path, pooled) in [("direct", pool3d(t.clone(), pooling)), ("composed", composed(t, pooling))] {
                assert_eq!(pooled.dims(), [2, 3, 2, 3, 4]);
                let got = pooled.into_data().try_into_vec_as::<f32>().unwrap_or_default();
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
            let run = |f: fn(Tensor<5>, Pooling) -> Tensor<5>| {
                let t = Tensor::<5>::from_data(TensorData::new(x.clone(), dims), &device).require_grad();
                let y = f(t.clone(), pooling);
                let grads = (y.clone() * up.clone()).sum().backward();
                let grad = t.grad(&grads).map(|g| g.into_data().try_into_vec_as::<f32>().unwrap_or_default());
                (y.into_data().try_into_vec_as::<f32>().unwrap_or_default(), grad.unwrap_or_default())
            };
            let (direct, composed) = (run(pool3d), run(composed));
            assert_eq!(direct.1.len(), len, "{pooling:?}: no input gradient");
            for (a, b) in direct.0.iter().chain(&direct.1).zip(composed.0.iter().chain(&composed.1)) {
                assert!((a - b).abs() < 1e-5, "{pooling:?}: {a} != {b}");
            }
        }
    }
}
