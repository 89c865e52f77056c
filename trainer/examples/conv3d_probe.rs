//! Times the direct 3-D convolution kernels at a model's shapes: forward,
//! input gradient, weight gradient, in G multiply-adds a second.
//! `conv3d_probe` takes Etalumis' valid convolutions (batch 16);
//! `conv3d_probe cosmoflow` CosmoFlow `mlperf-small`'s "same" ones (batch 8).
#![allow(missing_docs, clippy::unwrap_used)]
use std::time::Instant;
use trainer::kernels::direct_conv::{self, ConvShape, PaddedInput};

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

fn values(n: usize, a: usize, b: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * a) % b) as f32 / (b as f32 / 2.0) - 1.0).collect()
}

fn main() {
    trainer::allocator::keep_freed_memory();
    let cosmoflow = std::env::args().nth(1).as_deref() == Some("cosmoflow");
    trainer::kernels::on_pool(|| {
        println!("# kernels: {}", trainer::kernels::calibrate::calibrate().line());
        let shapes: Vec<(usize, usize, usize, usize)> = if cosmoflow {
            vec![(4, 8, 32, 8), (8, 16, 16, 8), (16, 32, 8, 8), (32, 64, 4, 8), (64, 128, 2, 8)]
        } else {
            vec![(64, 64, 0, 16), (64, 128, 1, 16), (128, 128, 2, 16), (128, 128, 3, 16)]
        };
        let etalumis = [[16, 31, 31], [6, 13, 13], [4, 11, 11], [2, 9, 9]];
        for (ci, co, edge, batch) in shapes {
            let volume = if cosmoflow { [edge; 3] } else { etalumis[edge] };
            let shape = ConvShape { batch, c_in: ci, c_out: co, volume, kernel: 3 };
            let [d, h, w] = volume;
            let wt = values(shape.weight_len(), 13, 17);
            let g = values(shape.output_len(), 7, 19);
            let macs = (batch * ci * co * 27 * d * h * w) as f64 / 1e9;
            let (fwd, igrad, wgrad) = if cosmoflow {
                let x = values(shape.input_len(), 37, 23);
                let padded = PaddedInput::new(&shape, &x);
                (
                    median(|| drop(direct_conv::forward(&shape, &x, &wt, None))),
                    median(|| drop(direct_conv::input_grad(&shape, &wt, &g))),
                    median(|| drop(direct_conv::weight_grad_from_padded(&padded, &g))),
                )
            } else {
                let x = values(batch * ci * (d + 2) * (h + 2) * (w + 2), 37, 23);
                let padded = PaddedInput::valid(&shape, x.clone());
                (
                    median(|| drop(direct_conv::forward_valid(&shape, &x, &wt, None))),
                    median(|| drop(direct_conv::input_grad_valid(&shape, &wt, &g))),
                    median(|| drop(direct_conv::weight_grad_from_padded(&padded, &g))),
                )
            };
            println!(
                "{ci}->{co} out {d}x{h}x{w}: fwd {:.2} ms ({:.0} G/s), igrad {:.2} ms ({:.0} G/s), wgrad {:.2} ms ({:.0} G/s)",
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
