//! Where a CosmoFlow training step spends its time, op by op: if burn's
//! kernels are the limit, which op.
//!
//! Times burn's ops at the shapes of the reduced MLPerf model
//! (`mlperf-small`, batch 8, on burn's flex CPU backend with autodiff), each
//! forward alone and forward + backward, median of 5:
//! - `Conv3d` 3³ "same" per layer, burn's `conv3d` and our `conv3d_same`
//!   (direct kernels where the volume is wide enough), backward with and without the input
//!   gradient (the first layer needs only the weight gradient);
//! - the 2³ max pool of [`pool3d`] and LeakyReLU after it (on the pooled
//!   volume, as the model applies it);
//! - `--augment`'s turn of a batch of input volumes by the cube's
//!   symmetries (on the compute thread, before the forward pass).
//!
//! ```sh
//! cargo bench -p stagehand-trainer --bench ops
//! ```

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use burn::tensor::activation::leaky_relu;
use burn::tensor::module::conv3d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Device, Tensor, TensorData};
use trainer::kernels::{Pooling, conv3d_same, pool3d};
use trainer::models::cosmoflow::CosmoflowConfig;
use trainer::models::cosmoflow::augment::augment_batch;

fn filled<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    let n: usize = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|i| ((i * 37) % 23) as f32 / 11.0 - 1.0).collect();
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// Median milliseconds of 5 runs after one warm-up.
fn millis(mut f: impl FnMut()) -> f64 {
    f();
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn main() {
    trainer::allocator::keep_freed_memory();
    let device = Device::flex().autodiff();
    let config = CosmoflowConfig::mlperf_small();
    let batch = std::env::var("STAGEHAND_BENCH_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    println!("# mlperf-small, batch {batch}: median ms of 5");
    println!(
        "{:<20} {:>9} {:>13} {:>9} {:>12} {:>13} {:>13}",
        "layer", "burn fwd", "burn fwd+bwd", "ours fwd", "ours fwd+bwd", "pool fwd+bwd", "leaky fwd+bwd"
    );
    let (mut total_burn, mut total_ours, mut edge, mut c_in) = (0.0, 0.0, config.input, config.channels);
    for (i, layer) in config.convs.iter().enumerate() {
        let c_out = layer.filters;
        let x = filled([batch, c_in, edge, edge, edge], &device);
        let weight = filled([c_out, c_in, 3, 3, 3], &device).require_grad();
        let bias = filled([c_out], &device).require_grad();
        let options = ConvOptions::new([1; 3], [1; 3], [1; 3], 1);
        let conv = |x: Tensor<5>| conv3d(x, weight.clone(), Some(bias.clone()), options.clone());
        let forward = millis(|| drop(conv(x.clone()).into_data()));
        // Layer 0's input is data: autodiff computes no input gradient there.
        let input = if i == 0 { x.clone() } else { x.clone().require_grad() };
        let backward = millis(|| drop(conv(input.clone()).sum().backward()));
        let ours = |x: Tensor<5>| conv3d_same(x, weight.clone(), Some(bias.clone()));
        let our_forward = millis(|| drop(ours(x.clone()).into_data()));
        let our_backward = millis(|| drop(ours(input.clone()).sum().backward()));
        let activations = filled([batch, c_out, edge, edge, edge], &device).require_grad();
        let pool = millis(|| drop(pool3d(activations.clone(), Pooling::Max).sum().backward()));
        // The model applies LeakyReLU after the max pool (they commute).
        let pooled = filled([batch, c_out, edge / 2, edge / 2, edge / 2], &device).require_grad();
        let leaky = millis(|| drop(leaky_relu(pooled.clone(), 0.3).sum().backward()));
        println!(
            "{:<20} {forward:>9.1} {backward:>13.1} {our_forward:>9.1} {our_backward:>12.1} {pool:>13.1} {leaky:>13.1}",
            format!("{i}: {c_in}->{c_out} at {edge}^3")
        );
        total_burn += backward + pool + leaky;
        total_ours += our_backward + pool + leaky;
        c_in = c_out;
        edge /= 2;
    }
    println!("sum of the layers' fwd+bwd: {total_burn:.1} ms with burn's conv3d, {total_ours:.1} ms with conv3d_same");
    let (d, c) = (config.input, config.channels);
    let volumes: Vec<f32> = (0..batch * d * d * d * c).map(|i| (i % 7) as f32).collect();
    let mut epoch = 0;
    let ids: Vec<usize> = (0..batch).collect();
    let augment = millis(|| {
        epoch += 1;
        drop(std::hint::black_box(augment_batch(&volumes, d, c, (0, epoch), &ids)));
    });
    println!("--augment, a batch of {batch} volumes {d}^3 x {c}: {augment:.2} ms");
}
