//! [`conv3d_same`]: a 3-D convolution with stride 1 and "same" padding that
//! runs the [`direct_conv`](super::direct_conv) kernels, with their own
//! backward pass, when the tensors live on burn's Flex CPU backend and the
//! volume is wide enough for them to beat burn's im2col + GEMM. Anything
//! else (other backends such as a GPU, narrow volumes, no bias) goes to
//! burn's `conv3d`, so model code stays backend-agnostic.

use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::flex::FlexTensor;
use burn::backend::{Autodiff, Flex, TensorMetadata};
use burn::tensor::module::conv3d;
use burn::tensor::ops::ConvOptions;
use burn::tensor::{Shape, Tensor};

use super::direct_conv::{self, ConvShape};
use super::flex::{AutodiffTensor, OnFlex, flex, on_flex, values};

/// Narrowest volume (in voxels along `w`) given to the direct kernels:
/// below it burn's GEMM wins (`cargo bench -p stagehand-trainer --bench ops`).
pub const MIN_DIRECT_WIDTH: usize = 8;

/// `conv3d(x, weight, bias)` with stride 1, dilation 1, one group and
/// `k / 2` zeros of padding: x [N, C_in, D, H, W], weight [C_out, C_in, k,
/// k, k] with odd `k`.
pub fn conv3d_same(x: Tensor<5>, weight: Tensor<5>, bias: Option<Tensor<1>>) -> Tensor<5> {
    if let Some(y) = direct(&x, &weight, bias.as_ref()) {
        return y;
    }
    let p = weight.dims()[2] / 2;
    conv3d(x, weight, bias, ConvOptions::new([1; 3], [p; 3], [1; 3], 1))
}

/// The convolution through the direct kernels, if they apply.
fn direct(x: &Tensor<5>, weight: &Tensor<5>, bias: Option<&Tensor<1>>) -> Option<Tensor<5>> {
    let [batch, c_in, d, h, w] = x.dims();
    let [c_out, weight_c_in, k, k_h, k_w] = weight.dims();
    let shape = ConvShape { batch, c_in, c_out, volume: [d, h, w], kernel: k };
    let bias = bias?;
    // Anything the kernels do not cover, or shapes that do not fit together
    // (burn's conv3d then reports them), goes to burn.
    if k % 2 == 0 || k_h != k || k_w != k || weight_c_in != c_in || bias.dims() != [c_out] || w < MIN_DIRECT_WIDTH {
        return None;
    }
    let (xp, wp, bp) = (on_flex(x)?, on_flex(weight)?, on_flex(bias)?);
    let y = match (xp, wp, bp) {
        (OnFlex::Plain(xp), OnFlex::Plain(wp), OnFlex::Plain(bp)) => {
            Tensor::from_primitive::<Flex>(forward(&shape, &xp, &wp, &bp))
        }
        // Autodiff on any input: the plain ones join as constants, as burn's
        // dispatch treats them.
        (xp, wp, bp) => Tensor::from_primitive::<Autodiff<Flex>>(tracked(shape, xp.lift(), wp.lift(), bp.lift())),
    };
    Some(y)
}

fn forward(shape: &ConvShape, x: &FlexTensor, weight: &FlexTensor, bias: &FlexTensor) -> FlexTensor {
    let [d, h, w] = shape.volume;
    let y = direct_conv::forward(shape, &values(x), &values(weight), Some(&values(bias)));
    flex(y, Shape::new([shape.batch, shape.c_out, d, h, w]))
}

#[derive(Debug)]
struct DirectConvBackward;

impl Backward<Flex, 3> for DirectConvBackward {
    type State = (NodeId, NodeId, ConvShape);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_weight, node_bias] = ops.parents;
        let out_grad = grads.consume::<Flex>(&ops.node);
        let out_grad = values(&out_grad);
        let (x_state, weight_state, shape) = ops.state;
        let x: FlexTensor = checkpointer.retrieve_node_output(x_state);
        let weight: FlexTensor = checkpointer.retrieve_node_output(weight_state);
        if let Some(node) = node_x {
            let grad = direct_conv::input_grad(&shape, &values(&weight), &out_grad);
            grads.register::<Flex>(node.id, flex(grad, x.shape()));
        }
        if let Some(node) = node_weight {
            let grad = direct_conv::weight_grad(&shape, &values(&x), &out_grad);
            grads.register::<Flex>(node.id, flex(grad, weight.shape()));
        }
        if let Some(node) = node_bias {
            grads.register::<Flex>(node.id, flex(direct_conv::bias_grad(&shape, &out_grad), Shape::new([shape.c_out])));
        }
    }
}

/// The forward pass on autodiff tensors, registering [`DirectConvBackward`]
/// when any input is tracked.
fn tracked(shape: ConvShape, x: AutodiffTensor, weight: AutodiffTensor, bias: AutodiffTensor) -> AutodiffTensor {
    match DirectConvBackward
        .prepare::<NoCheckpointing>([x.node(), weight.node(), bias.node()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let x_state = prep.checkpoint(&x);
            let weight_state = prep.checkpoint(&weight);
            let y = forward(&shape, x.primitive(), weight.primitive(), bias.primitive());
            prep.finish((x_state, weight_state, shape), y)
        }
        OpsKind::UnTracked(prep) => prep.finish(forward(&shape, x.primitive(), weight.primitive(), bias.primitive())),
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, TensorData};

    use super::*;

    fn filled<const D: usize>(shape: [usize; D], seed: usize, device: &Device) -> Tensor<D> {
        let n: usize = shape.iter().product();
        let values: Vec<f32> = (0..n).map(|i| ((i * 37 + seed * 11) % 23) as f32 / 11.0 - 1.0).collect();
        Tensor::from_data(TensorData::new(values, shape), device)
    }

    fn max_diff<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
        let (a, b): (Vec<f32>, Vec<f32>) =
            (a.into_data().try_into_vec_as().unwrap(), b.into_data().try_into_vec_as().unwrap());
        assert_eq!(a.len(), b.len());
        a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    /// Values and all three gradients equal burn's `conv3d` (to float
    /// tolerance) on the autodiff Flex device, where the direct kernels run.
    #[test]
    fn direct_convolution_matches_burn_conv3d_in_values_and_gradients() {
        let device = Device::flex().autodiff();
        let x = filled([2, 3, 4, 5, MIN_DIRECT_WIDTH], 1, &device).require_grad();
        let weight = filled([4, 3, 3, 3, 3], 2, &device).require_grad();
        let bias = filled([4], 3, &device).require_grad();
        let up = filled([2, 4, 4, 5, MIN_DIRECT_WIDTH], 4, &device);
        let ours = direct(&x, &weight, Some(&bias)).expect("the direct kernels apply");
        let options = ConvOptions::new([1; 3], [1; 3], [1; 3], 1);
        let theirs = conv3d(x.clone(), weight.clone(), Some(bias.clone()), options);
        assert!(max_diff(ours.clone(), theirs.clone()) < 1e-4);
        let g_ours = (ours * up.clone()).sum().backward();
        let g_theirs = (theirs * up).sum().backward();
        for (what, a, b) in
            [("x", x.grad(&g_ours), x.grad(&g_theirs)), ("weight", weight.grad(&g_ours), weight.grad(&g_theirs))]
        {
            let diff = max_diff(a.unwrap(), b.unwrap());
            assert!(diff < 1e-3, "{what} gradient differs by {diff}");
        }
        assert!(max_diff(bias.grad(&g_ours).unwrap(), bias.grad(&g_theirs).unwrap()) < 1e-3);
    }

    /// As in evaluation: data on the autodiff device, parameters of
    /// `model.valid()` on the plain one.
    #[test]
    fn mixed_plain_and_autodiff_inputs_take_the_direct_path() {
        let (plain, autodiff) = (Device::flex(), Device::flex().autodiff());
        let x = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH], 5, &autodiff);
        let weight = filled([2, 2, 3, 3, 3], 6, &plain);
        let bias = filled([2], 7, &plain);
        let ours = direct(&x, &weight, Some(&bias)).expect("the direct kernels apply");
        let theirs = conv3d(x, weight, Some(bias), ConvOptions::new([1; 3], [1; 3], [1; 3], 1));
        assert!(max_diff(ours, theirs) < 1e-4);
    }

    #[test]
    fn untracked_and_plain_flex_tensors_take_the_direct_path_too() {
        for device in [Device::flex(), Device::flex().autodiff()] {
            let x = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH], 5, &device);
            let weight = filled([2, 2, 3, 3, 3], 6, &device);
            let bias = filled([2], 7, &device);
            let ours = direct(&x, &weight, Some(&bias)).expect("the direct kernels apply");
            let theirs = conv3d(x, weight, Some(bias), ConvOptions::new([1; 3], [1; 3], [1; 3], 1));
            assert!(max_diff(ours, theirs) < 1e-4);
        }
    }

    #[test]
    fn narrow_volumes_even_kernels_and_no_bias_go_to_burn() {
        let device = Device::flex().autodiff();
        let bias = filled([2], 7, &device);
        let x = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH], 5, &device);
        let flat = filled([2, 2, 3, 3, 1], 6, &device);
        let wrong_inputs = filled([2, 3, 3, 3, 3], 6, &device);
        let cubic = filled([2, 2, 3, 3, 3], 6, &device);
        assert!(direct(&x, &flat, Some(&bias)).is_none());
        assert!(direct(&x, &wrong_inputs, Some(&bias)).is_none());
        assert!(direct(&x, &cubic, Some(&filled([3], 7, &device))).is_none());
        let narrow = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH / 2], 5, &device);
        let wide = filled([1, 2, 3, 3, MIN_DIRECT_WIDTH], 5, &device);
        let (odd, even) = (filled([2, 2, 3, 3, 3], 6, &device), filled([2, 2, 2, 2, 2], 6, &device));
        assert!(direct(&narrow, &odd, Some(&bias)).is_none());
        assert!(direct(&wide, &even, Some(&bias)).is_none());
        assert!(direct(&wide, &odd, None).is_none());
        let y = conv3d_same(narrow.clone(), odd.clone(), Some(bias.clone()));
        assert_eq!(y.dims(), [1, 2, 3, 3, MIN_DIRECT_WIDTH / 2]);
    }
}
