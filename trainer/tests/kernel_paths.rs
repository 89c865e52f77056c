//! Every compiled path of the convolution and pooling kernels (portable, AVX2, AVX-512)
//! gives the same bits, forced one after the other on this machine. One
//! test in its own binary: the path is process-wide, so no other test may
//! switch it meanwhile.

use std::io::Write as _;

use burn::backend::flex::FlexTensor;
use burn::tensor::{Shape, TensorData};
use trainer::kernels::calibrate::{self, Candidate, values};
use trainer::kernels::columns::Window;
use trainer::kernels::conv_transpose2d::{self, Geometry};
use trainer::kernels::cpu::{self, KernelPath};
use trainer::kernels::direct_conv::{self, ConvShape};
use trainer::kernels::direct_pool;
use trainer::kernels::{conv2d_forward, conv2d_grad};

/// Forward, input gradient, weight gradient and bias gradient of `shape`.
fn all_four(shape: &ConvShape) -> [Vec<f32>; 4] {
    let x = values(shape.input_len(), 1);
    let weight = values(shape.weight_len(), 2);
    let bias = values(shape.c_out, 3);
    let g = values(shape.output_len(), 4);
    [
        direct_conv::forward(shape, &x, &weight, Some(&bias)),
        direct_conv::input_grad(shape, &weight, &g),
        direct_conv::weight_grad(shape, &x, &g),
        direct_conv::bias_grad(shape, &g),
    ]
}

/// Max pooling forward (maxima and which voxel held them) and backward on
/// 3 planes of 4 × 6 × 10, values on a coarse grid so that windows hold
/// ties (the first voxel wins on every path).
fn max_pool() -> (Vec<f32>, Vec<u8>, Vec<f32>) {
    let x: Vec<f32> = values(3 * 240, 7).iter().map(|v| (v * 4.0).round()).collect();
    let (y, arg) = direct_pool::max_forward([4, 6, 10], &x);
    let x_grad = direct_pool::max_backward([4, 6, 10], &arg, &y);
    (y, arg, x_grad)
}

/// The same for the 2-D pool, on 5 planes of 6 × 22 (rows of 11 windows).
fn max_pool_2d() -> (Vec<f32>, Vec<u8>, Vec<f32>) {
    let x: Vec<f32> = values(5 * 132, 8).iter().map(|v| (v * 4.0).round()).collect();
    let (y, arg) = direct_pool::max2_forward([6, 22], &x);
    let x_grad = direct_pool::max2_backward([6, 22], &arg, &y);
    (y, arg, x_grad)
}

/// The 2-D forward convolutions and weight gradients the direct kernels
/// take (8 or 16 output channels, rows of at least 16), forward then
/// weight gradient of each: rows of 61 end on a 16-wide tile overlapping
/// the one before, the 7 × 7 stride-2 stem reads regrouped columns and
/// the dilated kernel's gradient is the row-wise direct sums' (rows of at
/// least 48, padded to 64); stride-1 3 × 3 and 1 × 1 and stride-2 5 × 5
/// and 3 × 3 gradients are the lane sums'. Last, a transposed convolution
/// with its 32 output channels in the lanes.
fn two_dimensional() -> Vec<Vec<f32>> {
    let cases = [
        ([2, 3, 5, 61], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }, [5, 61]),
        // The lane sums' blocks: 3 × 3 over 5 input channels (a partial
        // block on every path) and 1 × 1 over 10, 24 output channels.
        ([2, 5, 8, 32], 16, Window { kernel: [3, 3], stride: [1, 1], padding: [1, 1], dilation: [1, 1] }, [8, 32]),
        ([2, 10, 8, 16], 24, Window { kernel: [1, 1], stride: [1, 1], padding: [0, 0], dilation: [1, 1] }, [8, 16]),
        ([1, 2, 9, 101], 16, Window { kernel: [7, 7], stride: [2, 2], padding: [3, 3], dilation: [1, 1] }, [5, 51]),
        ([1, 2, 6, 53], 8, Window { kernel: [3, 3], stride: [1, 1], padding: [2, 2], dilation: [2, 2] }, [6, 53]),
        // CosmoGAN's discriminator layers (5 × 5, stride 2) and a strided
        // 3 × 3 over an odd side, 3 and 5 input channels.
        ([2, 3, 32, 32], 16, Window { kernel: [5, 5], stride: [2, 2], padding: [2, 2], dilation: [1, 1] }, [16, 16]),
        ([2, 5, 17, 33], 24, Window { kernel: [3, 3], stride: [2, 2], padding: [1, 1], dilation: [1, 1] }, [9, 17]),
    ];
    cases
        .iter()
        .flat_map(|&(dims, c_out, window, out)| {
            let [n, c_in, h, w] = dims;
            let [kh, kw] = window.kernel;
            let x = FlexTensor::from_data(TensorData::new(values(n * c_in * h * w, 5), Shape::new(dims)));
            let weight = FlexTensor::from_data(TensorData::new(
                values(c_out * c_in * kh * kw, 6),
                Shape::new([c_out, c_in, kh, kw]),
            ));
            let g = FlexTensor::from_data(TensorData::new(
                values(n * c_out * out[0] * out[1], 9),
                Shape::new([n, c_out, out[0], out[1]]),
            ));
            let y = conv2d_forward::forward(&x, &weight, &window, out);
            let dw = conv2d_grad::weight_grad(&x, &g, &window);
            [y, dw].map(|t| t.into_data().try_to_vec::<f32>().unwrap_or_else(|e| panic!("{e:?}")))
        })
        .chain(std::iter::once({
            let (dims, c_out) = ([3, 6, 8, 8], 32);
            let geometry = Geometry { kernel: [5, 5], stride: [2, 2], padding: [2, 2] };
            let weight = values(dims[1] * c_out * 25, 4);
            conv_transpose2d::forward(&values(dims.iter().product(), 8), dims, &weight, c_out, &geometry, [16, 16])
        }))
        .collect()
}

#[test]
fn every_kernel_path_this_cpu_runs_gives_the_portable_paths_bits() {
    // Widths that leave 32-, 16-, 8- and 1-voxel tiles; 4 and 8 output
    // channels (blocked), 3 (per plane); a 5³ kernel (the generic loops);
    // narrow volumes with output channels in the vector lanes (all three
    // passes; 8-voxel tiles and single voxels).
    let shapes = [
        ConvShape { batch: 2, c_in: 3, c_out: 8, volume: [3, 4, 61], kernel: 3 },
        ConvShape { batch: 1, c_in: 4, c_out: 4, volume: [4, 3, 21], kernel: 3 },
        ConvShape { batch: 2, c_in: 2, c_out: 3, volume: [2, 3, 17], kernel: 3 },
        ConvShape { batch: 1, c_in: 2, c_out: 4, volume: [5, 5, 9], kernel: 5 },
        ConvShape { batch: 2, c_in: 16, c_out: 32, volume: [3, 2, 5], kernel: 3 },
    ];
    assert!(direct_conv::channels_in_lanes(&shapes[4]));
    cpu::force(KernelPath::Portable).unwrap_or_else(|e| panic!("{e}"));
    let portable: Vec<[Vec<f32>; 4]> = shapes.iter().map(all_four).collect();
    let portable_2d = two_dimensional();
    let portable_pool = max_pool();
    let portable_pool_2d = max_pool_2d();
    let mut compared = vec!["portable".to_string()];
    for path in [KernelPath::Avx2, KernelPath::Avx512] {
        if !path.supported() {
            e2e::skip(&format!("kernel_paths ({} path)", path.name()), "this CPU cannot run it");
        }
    }
    // Every version calibration may choose: each path, and the AVX-512
    // path with the AVX2 3-D weight gradient.
    for candidate in calibrate::candidates().into_iter().filter(|c| c.path != KernelPath::Portable) {
        candidate.force().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(Candidate::current(), candidate);
        let name = candidate.name();
        for (shape, want) in shapes.iter().zip(&portable) {
            let got = all_four(shape);
            for (what, (a, b)) in ["forward", "input_grad", "weight_grad", "bias_grad"].iter().zip(got.iter().zip(want))
            {
                assert!(!a.is_empty());
                let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same && a.len() == b.len(), "{name}: {what} of {shape:?} differs from the portable path");
            }
        }
        for (k, (a, b)) in two_dimensional().iter().zip(&portable_2d).enumerate() {
            assert!(!a.is_empty() && a.len() == b.len());
            let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{name}: 2-D case {k} (forward, weight gradient) differs from the portable path");
        }
        let (y, arg, x_grad) = max_pool();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&y), bits(&portable_pool.0), "{name}: max pool maxima");
        assert_eq!(arg, portable_pool.1, "{name}: max pool argmax");
        assert_eq!(bits(&x_grad), bits(&portable_pool.2), "{name}: max pool gradient");
        let (y, arg, x_grad) = max_pool_2d();
        assert_eq!(bits(&y), bits(&portable_pool_2d.0), "{name}: 2-D max pool maxima");
        assert_eq!(arg, portable_pool_2d.1, "{name}: 2-D max pool argmax");
        assert_eq!(bits(&x_grad), bits(&portable_pool_2d.2), "{name}: 2-D max pool gradient");
        compared.push(name);
    }
    let _ = writeln!(std::io::stderr(), "kernel_paths: compared bit for bit: {}", compared.join(", "));
    cpu::force(cpu::best()).unwrap_or_else(|e| panic!("{e}"));
}
