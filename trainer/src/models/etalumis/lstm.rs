//! A stacked LSTM (Hochreiter & Schmidhuber 1997, with the forget gate of
//! Gers et al. 2000) in PyTorch's form (`torch.nn.LSTM`): gates i, f, g, o
//! from one input and one hidden product, c' = f·c + i·g, h' = o·tanh(c').
//!
//! Written here rather than taken from `burn::nn::Lstm`, which computes
//! each gate with its own two products at every time step (eight small
//! matrix products a step). Here the input products of every step are one
//! product over the whole sequence before the loop, and each step does
//! one hidden product for all four gates: what cuDNN and PyTorch's CPU
//! LSTM do.

use crate::kernels;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

/// One LSTM layer.
#[derive(Module, Debug)]
pub struct LstmLayer {
    /// Input to the four gates (with the bias).
    input: Linear,
    /// Hidden state to the four gates.
    hidden: Linear,
}

impl LstmLayer {
    /// A layer from `inputs` values to `units` hidden units.
    pub fn new(inputs: usize, units: usize, device: &Device) -> Self {
        LstmLayer {
            input: LinearConfig::new(inputs, 4 * units).init(device),
            hidden: LinearConfig::new(units, 4 * units).with_bias(false).init(device),
        }
    }

    fn units(&self) -> usize {
        self.hidden.weight.dims()[0]
    }

    /// Run over `x` [batch, steps, inputs] from zero states: [batch, steps, units].
    /// One node for the whole sequence (its backward pass linear in the
    /// sequence's length), its hidden product in this thread's precision
    /// as [`kernels::linear`] would make it; the weight and bias rounded
    /// here, once for the sequence.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let units = self.units();
        let gates_in = kernels::linear(&self.input, x);
        let device = gates_in.device();
        let precision = kernels::precision::current();
        let bias = self.hidden.bias.as_ref().map_or_else(|| Tensor::zeros([4 * units], &device), |b| b.val());
        let weight = kernels::rounded(self.hidden.weight.val(), precision);
        kernels::lstm_sequence(gates_in, weight, kernels::rounded(bias, precision))
    }

    /// One step over `x` [batch, inputs] from `state` (zeros when `None`):
    /// the next state, whose hidden part is the step's output. What
    /// inference runs, one choice at a time.
    pub fn step(&self, x: Tensor<2>, state: Option<State>) -> State {
        let [batch, _] = x.dims();
        let units = self.units();
        let device = x.device();
        let (h, c) =
            state.unwrap_or_else(|| (Tensor::zeros([batch, units], &device), Tensor::zeros([batch, units], &device)));
        Self::cell(kernels::linear(&self.input, x) + kernels::linear(&self.hidden, h), c)
    }

    /// c' = f·c + i·g, h' = o·tanh(c') from the summed gate inputs, as
    /// two operations ([`kernels::lstm_cell_state`],
    /// [`kernels::lstm_cell_output`]) rather than thirteen.
    fn cell(gates: Tensor<2>, c: Tensor<2>) -> State {
        let c = kernels::lstm_cell_state(gates.clone(), c);
        (kernels::lstm_cell_output(gates, c.clone()), c)
    }
}

/// A layer's hidden and cell state, each [batch, units].
pub type State = (Tensor<2>, Tensor<2>);

/// Layers of LSTM, each running over the previous one's outputs.
#[derive(Module, Debug)]
pub struct Lstm {
    layers: Vec<LstmLayer>,
}

impl Lstm {
    /// A loss of 0 that back-propagation can still run from (every weight
    /// of the first layer's hidden-state gates gets a zero gradient): what
    /// a batch with no trace to score contributes.
    pub fn tracked_zero(&self) -> Option<Tensor<1>> {
        self.layers.first().map(|l| l.hidden.weight.val().sum().mul_scalar(0.0))
    }

    /// `depth` layers of `units`, the first taking `inputs` values.
    pub fn new(inputs: usize, units: usize, depth: usize, device: &Device) -> Self {
        let layers = (0..depth).map(|l| LstmLayer::new(if l == 0 { inputs } else { units }, units, device)).collect();
        Lstm { layers }
    }

    /// The last layer's outputs over `x` [batch, steps, inputs].
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.layers.iter().fold(x, |x, layer| layer.forward(x))
    }

    /// One step over `x` [batch, inputs]: the last layer's output. `states`
    /// holds one state per layer, empty before the first step.
    pub fn step(&self, x: Tensor<2>, states: &mut Vec<State>) -> Tensor<2> {
        let mut x = x;
        let mut next = Vec::with_capacity(self.layers.len());
        for (l, layer) in self.layers.iter().enumerate() {
            let state = layer.step(x, states.get(l).cloned());
            x = state.0.clone();
            next.push(state);
        }
        *states = next;
        x
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use burn::tensor::TensorData;

    use super::*;

    fn values(t: Tensor<2>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    /// Stepping one input at a time gives the outputs of the whole
    /// sequence at once (what inference and training run).
    #[test]
    fn stepping_equals_the_sequence() {
        let device = Device::flex();
        let lstm = Lstm::new(3, 5, 2, &device);
        let x = Tensor::<3>::random([2, 4, 3], burn::tensor::Distribution::Default, &device);
        let whole = lstm.forward(x.clone());
        let mut states = Vec::new();
        for t in 0..4 {
            let out = lstm.step(x.clone().narrow(1, t, 1).reshape([2, 3]), &mut states);
            let want = whole.clone().narrow(1, t, 1).reshape([2, 5]);
            let diff: f32 = (out - want).abs().max().into_scalar();
            assert!(diff < 1e-6, "step {t}: {diff}");
        }
    }

    /// One step from zero states, computed by hand from the weights.
    #[test]
    fn one_step_follows_the_lstm_equations() {
        let device = Device::flex();
        let layer = LstmLayer::new(2, 3, &device);
        let x = [0.5f32, -1.0];
        let out = layer.forward(Tensor::from_data(TensorData::new(x.to_vec(), [1, 1, 2]), &device));
        let w = values(layer.input.weight.val()); // [2, 12]
        let b = layer.input.bias.as_ref().map(|b| b.val().into_data().try_to_vec::<f32>().unwrap()).unwrap();
        let pre = |j: usize| x[0] * w[j] + x[1] * w[12 + j] + b[j];
        let s = |v: f32| 1.0 / (1.0 + (-v).exp());
        let got = values(out.reshape([1, 3]));
        for (u, got) in got.iter().enumerate() {
            let (i, g, o) = (s(pre(u)), pre(6 + u).tanh(), s(pre(9 + u)));
            let h = o * (i * g).tanh();
            assert!((got - h).abs() < 1e-6, "unit {u}: {got} vs {h}");
        }
    }

    /// The layer's steps unrolled into the graph, each hidden product a
    /// [`kernels::linear`] in this thread's precision: what the layer ran
    /// in bf16 before its sequence node rounded as these do.
    fn unrolled(layer: &LstmLayer, x: Tensor<3>) -> Tensor<3> {
        let [batch, steps, _] = x.dims();
        let units = layer.units();
        let gates_in = kernels::linear(&layer.input, x);
        let device = gates_in.device();
        let (mut h, mut c) = (Tensor::<2>::zeros([batch, units], &device), Tensor::<2>::zeros([batch, units], &device));
        let mut out = Vec::with_capacity(steps);
        for t in 0..steps {
            let gates =
                gates_in.clone().narrow(1, t, 1).reshape([batch, 4 * units]) + kernels::linear(&layer.hidden, h);
            (h, c) = LstmLayer::cell(gates, c);
            out.push(h.clone().unsqueeze_dim::<3>(1));
        }
        Tensor::cat(out, 1)
    }

    fn flat<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
    }

    /// In bf16 the sequence node gives the outputs and gradients of the
    /// unrolled bf16 steps, within the bf16 rounding their different
    /// orders of summation can move (a product's last bit moving its
    /// rounding by one bf16 step; the hidden weight's gradient rounded
    /// once for the sequence, not once a step), and, but for that
    /// gradient, far closer to them than the f32 sequence is.
    #[test]
    fn a_bf16_sequence_is_the_unrolled_bf16_steps() {
        use kernels::precision::{Precision, scoped};
        let device = Device::flex().autodiff();
        let layer = LstmLayer::new(4, 8, &device);
        let x = Tensor::<3>::random([3, 6, 4], burn::tensor::Distribution::Uniform(-2.0, 2.0), &device).require_grad();
        let up = Tensor::<3>::random([3, 6, 8], burn::tensor::Distribution::Uniform(-1.0, 1.0), &device);
        let run = |precision, fused: bool| {
            scoped(precision, || {
                let y = if fused { layer.forward(x.clone()) } else { unrolled(&layer, x.clone()) };
                let grads = (y.clone() * up.clone()).sum().backward();
                let grad_of = |t: Option<Tensor<2>>| flat(t.unwrap());
                [
                    flat(y),
                    flat(x.grad(&grads).unwrap()),
                    grad_of(layer.input.weight.grad(&grads)),
                    grad_of(layer.hidden.weight.grad(&grads)),
                ]
            })
        };
        let (fused, steps, single) =
            (run(Precision::Bf16, true), run(Precision::Bf16, false), run(Precision::F32, true));
        for (k, what) in ["outputs", "x's gradient", "the input weight's gradient", "the hidden weight's gradient"]
            .iter()
            .enumerate()
        {
            let scale = steps[k].iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let (ours, f32s) = (largest_difference(&fused[k], &steps[k]), largest_difference(&single[k], &steps[k]));
            eprintln!("{what}: bf16 sequence {ours}, f32 sequence {f32s} from the unrolled bf16 steps (scale {scale})");
            assert!(ours <= 2e-2 * scale, "{what}: the bf16 sequence differs by {ours} (scale {scale})");
            // The hidden weight's gradient is the one rounded differently
            // (once, not once a step), by as much as f32 differs from it.
            if k < 3 {
                assert!(ours < f32s / 4.0, "{what}: {ours} from the unrolled bf16 steps, the f32 sequence {f32s}");
            }
        }
    }

    #[test]
    fn stacked_layers_map_a_sequence_to_one_output_per_step() {
        let device = Device::flex();
        let lstm = Lstm::new(5, 4, 2, &device);
        assert_eq!(lstm.forward(Tensor::ones([3, 7, 5], &device)).dims(), [3, 7, 4]);
    }
}
