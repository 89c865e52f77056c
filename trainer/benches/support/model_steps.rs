//! What the model benches share: timing training steps of a network as the
//! engine takes them (loss, backward, gradients read out, the optimiser on
//! plain vectors, parameters written back) and timing forward passes, the
//! first two of each left out as warm-up.

use std::time::Instant;

/// The `trainer` binary's allocator, so that the benches time the steps
/// it takes (see `src/bin/trainer/main.rs`).
#[global_allocator]
static ALLOCATOR: trainer::allocator::Allocator = mimalloc::MiMalloc;

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use trainer::optim::{Optimizer, Rule};
use trainer::params::{self, Init};

/// Steps left out of the timings while caches and pools warm up.
#[allow(dead_code, reason = "the `step` and `etalumis` benches use only `as_one_rank`")]
const WARM_UP: usize = 2;

/// `steps_of` run as `trainer train` runs a step on one rank: in
/// `precision`, the pool's threads waiting as [`WaitPolicy::auto_here`]
/// picks for one rank ([`trainer::kernels::wait`]).
///
/// [`WaitPolicy::auto_here`]: trainer::kernels::wait::WaitPolicy::auto_here
pub fn as_one_rank<T>(precision: trainer::kernels::Precision, steps_of: impl FnOnce() -> T) -> T {
    use trainer::kernels::wait::{WaitPolicy, busy};
    busy(WaitPolicy::auto_here(1), || trainer::kernels::precision::scoped(precision, steps_of))
}

/// `steps` timed training steps (after the warm-up) of `net` on `device`,
/// its weights first drawn by `init`: `loss(net, k)` is step k's loss.
/// Returns each step's seconds, the trained network and its parameters.
#[allow(dead_code, reason = "the `step` and `etalumis` benches use only `as_one_rank`")]
pub fn time_training_steps<N: Module>(
    net: N,
    (init, rule, lr): (Init, Rule, f32),
    steps: usize,
    device: &Device,
    loss: impl Fn(&N, usize) -> Tensor<1>,
) -> (Vec<f64>, N, usize) {
    let tensors = params::inventory(&net).unwrap();
    let (mut values, state) = params::initial(&tensors, init, 1);
    let mut net = params::with_state(params::with_values(net, &values, device), &state, device);
    let lengths: Vec<usize> = values.iter().map(Vec::len).collect();
    let mut optimizer = Optimizer::new(rule, None, &lengths);
    let mut grads: Vec<Vec<f32>> = lengths.iter().map(|&n| vec![0.0; n]).collect();
    let mut times = Vec::new();
    for k in 0..steps + WARM_UP {
        let t = Instant::now();
        let g = loss(&net, k).backward();
        params::gradients(&net, &g, |i, v| grads[i].copy_from_slice(v));
        let views: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
        optimizer.step(lr, &mut values.iter_mut().map(Vec::as_mut_slice).collect::<Vec<_>>(), &views);
        net = params::with_values(net, &values, device);
        if k >= WARM_UP {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    (times, net, lengths.iter().sum())
}

/// `steps` timed calls of `forward` (after the warm-up).
#[allow(dead_code, reason = "the `step` and `etalumis` benches use only `as_one_rank`")]
pub fn time_forward(steps: usize, mut forward: impl FnMut()) -> Vec<f64> {
    let mut times = Vec::new();
    for k in 0..steps + WARM_UP {
        let t = Instant::now();
        forward();
        if k >= WARM_UP {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    times
}
