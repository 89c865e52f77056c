//! The pointwise part of an LSTM step (Hochreiter & Schmidhuber 1997,
//! with the forget gate of Gers et al. 2000, in PyTorch's `torch.nn.LSTM`
//! form): from the summed gate inputs `gates` [B, 4U], in the order i, f,
//! g, o, and the cell state c [B, U],
//!
//! - the next cell state c' = σ(f)·c + σ(i)·tanh(g) ([`state`]),
//! - the output h' = σ(o)·tanh(c') ([`output`]),
//!
//! and their gradients. Composed of burn's operations these are thirteen
//! nodes of the autodiff graph a step (four slices, five activations, three
//! products, a sum), each allocating its output and its gradient; an
//! Etalumis step unrolls its LSTM over every address of a trace, and
//! burn's per-node bookkeeping and the allocations were a fifth of it
//! (`docs/benchmarks.md`, Etalumis). Here they are two.
//!
//! The activations are recomputed from `gates` in the backward pass rather
//! than kept: a few transcendental functions per value against a tensor
//! per gate held from the forward pass to the backward one.
//!
//! ```
//! use trainer::kernels::lstm_cell::{output, state};
//!
//! // One sample, one unit: gates i, f, g, o all 0 (σ = 0.5, tanh = 0).
//! let (gates, c) = ([0.0f32; 4], [2.0f32]);
//! let c_next = state(&gates, &c, 1);
//! assert_eq!(c_next, [1.0]); // 0.5 · 2 + 0.5 · 0
//! assert_eq!(output(&gates, &c_next, 1), [0.5 * 1.0f32.tanh()]);
//! ```

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The four gates of sample row `row` of `gates` (4·`units` per row) at
/// unit `u`: (i, f, g, o) before their activations.
fn gate(gates: &[f32], units: usize, row: usize, u: usize) -> [f32; 4] {
    let at = row * 4 * units + u;
    [gates[at], gates[at + units], gates[at + 2 * units], gates[at + 3 * units]]
}

/// c' = σ(f)·c + σ(i)·tanh(g) for `c` [B, U] and `gates` [B, 4U].
pub fn state(gates: &[f32], c: &[f32], units: usize) -> Vec<f32> {
    let units = units.max(1);
    let mut out = Vec::with_capacity(c.len());
    for (at, &c) in c.iter().enumerate() {
        let [i, f, g, _] = gate(gates, units, at / units, at % units);
        out.push(sigmoid(f) * c + sigmoid(i) * g.tanh());
    }
    out
}

/// h' = σ(o)·tanh(c') for `c_next` [B, U] and `gates` [B, 4U].
pub fn output(gates: &[f32], c_next: &[f32], units: usize) -> Vec<f32> {
    let units = units.max(1);
    let mut out = Vec::with_capacity(c_next.len());
    for (at, &c) in c_next.iter().enumerate() {
        let [_, _, _, o] = gate(gates, units, at / units, at % units);
        out.push(sigmoid(o) * c.tanh());
    }
    out
}

/// The gradients of [`state`] from `dc_next` [B, U]: (d gates [B, 4U],
/// whose o quarter is zero; d c [B, U]).
pub fn state_grad(gates: &[f32], c: &[f32], units: usize, dc_next: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let units = units.max(1);
    let mut d_gates = vec![0.0f32; gates.len()];
    let mut dc = Vec::with_capacity(c.len());
    for (at, (&c, &dy)) in c.iter().zip(dc_next).enumerate() {
        let (row, u) = (at / units, at % units);
        let [i, f, g, _] = gate(gates, units, row, u);
        let (si, sf, tg) = (sigmoid(i), sigmoid(f), g.tanh());
        let base = row * 4 * units + u;
        d_gates[base] = dy * tg * si * (1.0 - si);
        d_gates[base + units] = dy * c * sf * (1.0 - sf);
        d_gates[base + 2 * units] = dy * si * (1.0 - tg * tg);
        dc.push(dy * sf);
    }
    (d_gates, dc)
}

/// The gradients of [`output`] from `dh` [B, U]: (d gates [B, 4U], only
/// the o quarter non-zero; d c' [B, U]).
pub fn output_grad(gates: &[f32], c_next: &[f32], units: usize, dh: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let units = units.max(1);
    let mut d_gates = vec![0.0f32; gates.len()];
    let mut dc = Vec::with_capacity(c_next.len());
    for (at, (&c, &dy)) in c_next.iter().zip(dh).enumerate() {
        let (row, u) = (at / units, at % units);
        let [_, _, _, o] = gate(gates, units, row, u);
        let (so, tc) = (sigmoid(o), c.tanh());
        d_gates[row * 4 * units + 3 * units + u] = dy * tc * so * (1.0 - so);
        dc.push(dy * so * (1.0 - tc * tc));
    }
    (d_gates, dc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| ((i * 37 + seed * 11) % 23) as f32 / 6.0 - 1.9).collect()
    }

    /// Each gradient equals the central difference of the function it
    /// differentiates, for every input value (f64 differences of f32
    /// functions: within 1e-2 relative).
    #[test]
    fn the_gradients_are_the_derivatives_of_state_and_output() {
        let (batch, units) = (2, 3);
        let gates = values(batch * 4 * units, 1);
        let c = values(batch * units, 2);
        let up = values(batch * units, 3);
        type Function = fn(&[f32], &[f32], usize) -> Vec<f32>;
        let loss = |f: Function, g: &[f32], c: &[f32]| -> f64 {
            f(g, c, units).iter().zip(&up).map(|(y, u)| f64::from(y * u)).sum()
        };
        type Gradient = fn(&[f32], &[f32], usize, &[f32]) -> (Vec<f32>, Vec<f32>);
        let pairs: [(&str, Function, Gradient); 2] = [("state", state, state_grad), ("output", output, output_grad)];
        for (name, function, gradient) in pairs {
            let (d_gates, dc) = gradient(&gates, &c, units, &up);
            let h = 1e-2f32;
            for k in 0..gates.len() {
                let (mut plus, mut minus) = (gates.clone(), gates.clone());
                plus[k] += h;
                minus[k] -= h;
                let numeric = (loss(function, &plus, &c) - loss(function, &minus, &c)) / f64::from(2.0 * h);
                let got = f64::from(d_gates[k]);
                assert!(
                    (got - numeric).abs() <= 1e-2 * (1.0 + numeric.abs()),
                    "{name} d gates[{k}]: {got} vs {numeric}"
                );
            }
            for k in 0..c.len() {
                let (mut plus, mut minus) = (c.clone(), c.clone());
                plus[k] += h;
                minus[k] -= h;
                let numeric = (loss(function, &gates, &plus) - loss(function, &gates, &minus)) / f64::from(2.0 * h);
                let got = f64::from(dc[k]);
                assert!((got - numeric).abs() <= 1e-2 * (1.0 + numeric.abs()), "{name} dc[{k}]: {got} vs {numeric}");
            }
        }
    }
}
