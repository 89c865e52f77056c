//! Times the direct 3-D convolution kernels at Etalumis' valid-convolution
//! shapes (batch 16): forward, input gradient, weight gradient, in G
//! multiply-adds a second.
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Instant;
use trainer::kernels::direct_conv::ConvShape;
use trainer::kernels::direct_conv::{self, PaddedInput};

fn median(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

fn main() {
    trainer::allocator::keep_freed_memory();
    trainer::kernels::on_pool(|| {
        println!("# kernels: {}", trainer::kernels::calibrate::calibrate().line());
        for (ci, co, d, h, w) in
            [(64, 64, 16, 31, 31), (64, 128, 6, 13, 13), (128, 128, 4, 11, 11), (128, 128, 2, 9, 9)]
        {
            let shape = ConvShape { batch: 16, c_in: ci, c_out: co, volume: [d, h, w], kernel: 3 };
            let x: Vec<f32> =
                (0..16 * ci * (d + 2) * (h + 2) * (w + 2)).map(|i| ((i * 37) % 23) as f32 / 11.0 - 1.0).collect();
            let wt: Vec<f32> = (0..shape.weight_len()).map(|i| ((i * 13) % 17) as f32 / 50.0 - 0.15).collect();
            let g: Vec<f32> = (0..shape.output_len()).map(|i| ((i * 7) % 19) as f32 / 9.0 - 1.0).collect();
            let macs = (16 * ci * co * 27 * d * h * w) as f64 / 1e9;
            let fwd = median(|| drop(direct_conv::forward_valid(&shape, &x, &wt, None)));
            let igrad = median(|| drop(direct_conv::input_grad_valid(&shape, &wt, &g)));
            let padded = PaddedInput::valid(&shape, x.clone());
            let wgrad = median(|| drop(direct_conv::weight_grad_from_padded(&padded, &g)));
            println!(
                "{ci}->{co} out {d}x{h}x{w}: fwd {:.1} ms ({:.0} G/s), igrad {:.1} ms ({:.0} G/s), wgrad {:.1} ms ({:.0} G/s)",
                fwd * 1e3,
                macs / fwd,
                igrad * 1e3,
                macs / igrad,
                wgrad * 1e3,
                macs / wgrad
            );
        }
    });
}
