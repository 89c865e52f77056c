#![allow(clippy::unwrap_used)]

use burn::backend::{Autodiff, Flex};
use burn::tensor::module::conv3d;
use burn::tensor::{Device, Tensor, TensorData};

use super::super::{Pooling, conv3d_same, pool3d};
use super::flex_ops::{Padding, direct_conv_shape, direct_conv_shape_padded};
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
        let routed = direct_conv_shape_padded(&plain(x.clone()), &plain(weight.clone()), &plain_bias, Padding::Valid);
        assert_eq!(routed.is_some(), direct, "{x_shape:?} -> {c_out}: direct kernels or not");
        let [n, _, d, h, w] = x_shape;
        let up = filled([n, c_out, d - 2, h - 2, w - 2], 4, &device);
        let ours = super::super::conv3d_valid(x.clone(), weight.clone(), Some(bias.clone()));
        let theirs = conv3d(x.clone(), weight.clone(), Some(bias.clone()), ConvOptions::new([1; 3], [0; 3], [1; 3], 1));
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
    let cases: [(&str, Activation, Activation); 2] =
        [("relu", super::super::relu, relu), ("leaky", |x| super::super::leaky_relu(x, 0.2), |x| leaky_relu(x, 0.2))];
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
                    let window: Vec<f32> =
                        (0..8).map(|k| x[(((plane * d + z + k / 4) * h) + y + (k / 2) % 2) * w + v + k % 2]).collect();
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

/// A dense layer through `kernels::linear` equals burn's `Linear::forward`
/// in values and in the gradients of its input, weight and bias: for
/// shapes whose input gradient is `dense_input_grad`'s and shapes whose is
/// burn's, a 3-D input folded into rows, and an input that is a
/// transposed view.
#[test]
fn dense_products_equal_burns_linear_in_values_and_gradients() {
    use burn::nn::LinearConfig;
    let device = Device::flex().autodiff();
    for (rows, inputs, outputs) in [(1, 3, 5), (2, 64, 1030), (37, 24, 16), (16, 512, 300), (16, 40, 2048)] {
        let layer = LinearConfig::new(inputs, outputs).init(&device);
        let x = filled([rows, inputs], 1, &device).require_grad();
        let up = filled([rows, outputs], 2, &device);
        let run = |ours: bool| {
            let y = if ours { super::super::linear(&layer, x.clone()) } else { layer.forward(x.clone()) };
            let grads = (y.clone() * up.clone()).sum().backward();
            let weight = layer.weight.val().grad(&grads).unwrap();
            let bias = layer.bias.as_ref().unwrap().val().grad(&grads).unwrap();
            [to_vec(y), to_vec(x.grad(&grads).unwrap()), to_vec(weight), to_vec(bias)]
        };
        let (ours, theirs) = (run(true), run(false));
        for (name, (a, b)) in
            ["value", "input gradient", "weight gradient", "bias gradient"].iter().zip(ours.iter().zip(&theirs))
        {
            assert_eq!(a.len(), b.len(), "{rows}×{inputs}×{outputs} {name}");
            for (a, b) in a.iter().zip(b) {
                assert!((a - b).abs() < 1e-4 * (1.0 + b.abs()), "{rows}×{inputs}×{outputs} {name}: {a} against {b}");
            }
        }
    }
    // [2, 3, 8] folded into 6 rows, read from a transposed [8, 3, 2].
    let layer = LinearConfig::new(8, 4).init(&device);
    let x = filled([8, 3, 2], 3, &device).require_grad();
    let y = super::super::linear(&layer, x.clone().permute([2, 1, 0]));
    let theirs = layer.forward(x.clone().permute([2, 1, 0]));
    assert!(max_diff(y.clone(), theirs.clone()) < 1e-5);
    let (ours, theirs) = (y.sum().backward(), theirs.sum().backward());
    assert!(max_diff(x.grad(&ours).unwrap(), x.grad(&theirs).unwrap()) < 1e-5);
}

/// The CPU's LSTM sequence operation equals the same steps unrolled into
/// burn's operations (what other backends run) in its outputs and in the
/// gradients of the input products, the hidden weight and the bias: one
/// sample and several, one step and several, and units enough (256) for
/// the hidden product's input gradient to be `dense_input_grad`'s.
#[test]
fn the_lstm_sequence_equals_its_unrolled_steps() {
    type Ad = Autodiff<Flex>;
    let device = Device::flex().autodiff();
    let prim3 = |t: &Tensor<3>| t.clone().try_into_primitive::<Ad>().unwrap();
    let prim2 = |t: &Tensor<2>| t.clone().try_into_primitive::<Ad>().unwrap();
    let prim1 = |t: &Tensor<1>| t.clone().try_into_primitive::<Ad>().unwrap();
    for [b, steps, u] in [[1, 5, 3], [3, 1, 2], [2, 4, 256], [4, 6, 8]] {
        let run = |ours: bool| {
            let gates_in = filled([b, steps, 4 * u], 1, &device).mul_scalar(0.3).require_grad();
            let w = filled([u, 4 * u], 2, &device).mul_scalar(0.1).require_grad();
            let bias = filled([4 * u], 3, &device).mul_scalar(0.2).require_grad();
            let out = if ours {
                super::super::lstm_sequence(gates_in.clone(), w.clone(), bias.clone())
            } else {
                let out = composed::lstm_sequence::<Ad>(prim3(&gates_in), prim2(&w), prim1(&bias));
                Tensor::<3>::from_primitive::<Ad>(out)
            };
            let up = filled([b, steps, u], 4, &device);
            let grads = (out.clone() * up).sum().backward();
            [
                to_vec(out),
                to_vec(gates_in.grad(&grads).unwrap()),
                to_vec(w.grad(&grads).unwrap()),
                to_vec(bias.grad(&grads).unwrap()),
            ]
        };
        let (ours, theirs) = (run(true), run(false));
        for (name, (a, b_)) in ["output", "d gates_in", "d w", "d bias"].iter().zip(ours.iter().zip(&theirs)) {
            assert_eq!(a.len(), b_.len(), "[{b}, {steps}, {u}] {name}");
            for (x, y) in a.iter().zip(b_) {
                assert!((x - y).abs() < 1e-4 * (1.0 + y.abs()), "[{b}, {steps}, {u}] {name}: {x} against {y}");
            }
        }
    }
}
