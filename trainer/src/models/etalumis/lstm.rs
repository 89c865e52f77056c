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
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, steps, _] = x.dims();
        let units = self.units();
        let gates_in = kernels::linear(&self.input, x);
        let device = gates_in.device();
        if kernels::precision::current() == kernels::precision::Precision::F32 {
            // One node for the whole sequence (its backward pass linear in
            // the sequence's length); other precisions round every step's
            // products, so they stay unrolled.
            let bias = self.hidden.bias.as_ref().map_or_else(|| Tensor::zeros([4 * units], &device), |b| b.val());
            return kernels::lstm_sequence(gates_in, self.hidden.weight.val(), bias);
        }
        let mut h = Tensor::<2>::zeros([batch, units], &device);
        let mut c = Tensor::<2>::zeros([batch, units], &device);
        let mut out = Vec::with_capacity(steps);
        for t in 0..steps {
            let gates = gates_in.clone().narrow(1, t, 1).reshape([batch, 4 * units]) + kernels::linear(&self.hidden, h);
            (h, c) = Self::cell(gates, c);
            out.push(h.clone().unsqueeze_dim::<3>(1));
        }
        Tensor::cat(out, 1)
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

    #[test]
    fn stacked_layers_map_a_sequence_to_one_output_per_step() {
        let device = Device::flex();
        let lstm = Lstm::new(5, 4, 2, &device);
        assert_eq!(lstm.forward(Tensor::ones([3, 7, 5], &device)).dims(), [3, 7, 4]);
    }
}
