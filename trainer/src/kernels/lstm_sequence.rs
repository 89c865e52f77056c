//! An LSTM layer over a whole sequence as one operation (what cuDNN's and
//! PyTorch's CPU LSTM do): from the input products of every step `gates_in`
//! [B, T, 4U] (batch first, gates in the order i, f, g, o), the hidden
//! weight w [U, 4U] and bias [4U], each step's gate inputs are
//! gates_in[:, t] + (h_{t-1}·w + bias), then [`lstm_cell`]'s c_t and h_t.
//!
//! Unrolled into burn's graph, each step took its gate inputs with a slice
//! of `gates_in`, and the backward pass of a slice is a zeroed tensor of
//! the whole of `gates_in` with the step's gradient written in, added to
//! the sum of the others: per step, memory traffic of the whole sequence,
//! quadratic in its length (`docs/benchmarks.md`, Etalumis). Here the
//! backward pass writes each step's gate gradient once, and the hidden
//! weight's gradient is one product over all steps, Σ_t h_{t-1}ᵀ·dgates_t,
//! instead of one product and one sum per step.
//!
//! In a reduced [`Precision`] the hidden product is that precision's, as
//! [`kernels::linear`](super::linear) makes it on an unrolled step: h_{t-1}
//! rounded before it, h_{t-1}·w + bias rounded after it, and in the
//! backward pass the gradient reaching the product rounded, and the one
//! it sends back to h_{t-1}. The caller rounds w and the bias (and their
//! gradients, once for the sequence where the unrolled steps rounded each
//! step's share).
//!
//! ```
//! use trainer::kernels::lstm_sequence::{Sequence, forward};
//!
//! // One sample, one unit, two steps, all gate inputs and weights 0:
//! // c_1 = 0.5·0 + 0.5·tanh(0) = 0, h_1 = 0.5·tanh(0) = 0, and again.
//! let seq = Sequence { batch: 1, steps: 2, units: 1, precision: Default::default() };
//! let (out, _) = forward(seq, &[0.0; 8], &[0.0; 4], &[0.0; 4]);
//! assert_eq!(out, [0.0, 0.0]);
//! ```

use std::borrow::Cow;

use super::precision::Precision;
use super::strided_gemm::{self, View};
use super::{dense_input_grad, lstm_cell};

/// A sequence's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sequence {
    /// Samples (B).
    pub batch: usize,
    /// Steps (T).
    pub steps: usize,
    /// Hidden units (U).
    pub units: usize,
    /// What the hidden product's operands and result are rounded to.
    pub precision: Precision,
}

/// `values` rounded to `precision`, borrowed as they are in f32.
fn rounded(precision: Precision, values: &[f32]) -> Cow<'_, [f32]> {
    match precision {
        Precision::F32 => Cow::Borrowed(values),
        _ => Cow::Owned(precision.rounded(values)),
    }
}

/// What the forward pass keeps for the backward one, step-major: each
/// step's summed gate inputs [T, B, 4U], cell states c_t [T, B, U] and
/// outputs h_t [T, B, U].
#[derive(Debug)]
pub struct Kept {
    gates: Vec<f32>,
    cells: Vec<f32>,
    hidden: Vec<f32>,
}

/// The outputs h_t of every step, [B, T, U], and what the backward pass
/// needs.
///
/// # Panics
/// If a slice's length is not the shape's (callers take them from tensors
/// they have checked).
pub fn forward(seq: Sequence, gates_in: &[f32], w: &[f32], bias: &[f32]) -> (Vec<f32>, Kept) {
    let Sequence { batch: b, steps: t_len, units: u, precision } = seq;
    let g = 4 * u;
    assert!(
        gates_in.len() == b * t_len * g && w.len() == u * g && bias.len() == g,
        "lstm_sequence: {seq:?} with {}, {} and {} values",
        gates_in.len(),
        w.len(),
        bias.len()
    );
    let mut kept = Kept {
        gates: Vec::with_capacity(t_len * b * g),
        cells: Vec::with_capacity(t_len * b * u),
        hidden: Vec::with_capacity(t_len * b * u),
    };
    let zeros = vec![0.0f32; b * u];
    for t in 0..t_len {
        // The same sums as the unrolled graph's: gates_in + (h·w + bias);
        // h_0 and c_0 are zero, and so is h_0's product.
        let (product, c) = if t == 0 {
            (vec![0.0f32; b * g], &zeros[..])
        } else {
            let h = rounded(precision, &kept.hidden[(t - 1) * b * u..t * b * u]);
            let product = strided_gemm::product_of((&h, View::rows(b, u)), (w, View::rows(u, g)), true);
            (product, &kept.cells[(t - 1) * b * u..t * b * u])
        };
        let mut gates = Vec::with_capacity(b * g);
        for (row, hw) in product.chunks_exact(g).enumerate() {
            let from = &gates_in[(row * t_len + t) * g..][..g];
            gates.extend(from.iter().zip(hw.iter().zip(bias)).map(|(x, (p, bv))| x + precision.round(p + bv)));
        }
        let c_next = lstm_cell::state(&gates, c, u);
        let h_next = lstm_cell::output(&gates, &c_next, u);
        kept.gates.extend_from_slice(&gates);
        kept.cells.extend_from_slice(&c_next);
        kept.hidden.extend_from_slice(&h_next);
    }
    (batch_first(&kept.hidden, b, t_len, u), kept)
}

/// The gradients of [`forward`]'s outputs `d_out` [B, T, U] with respect
/// to `gates_in` [B, T, 4U], w [U, 4U] and the bias [4U].
///
/// # Panics
/// As [`forward`].
pub fn backward(seq: Sequence, kept: &Kept, w: &[f32], d_out: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let Sequence { batch: b, steps: t_len, units: u, precision } = seq;
    let g = 4 * u;
    assert!(d_out.len() == b * t_len * u && w.len() == u * g, "lstm_sequence: {seq:?} backward");
    // Step-major gate gradients [T, B, 4U].
    let mut d_gates = vec![0.0f32; t_len * b * g];
    let mut dh_next = vec![0.0f32; b * u];
    let mut dc_next = vec![0.0f32; b * u];
    let zeros = vec![0.0f32; b * u];
    for t in (0..t_len).rev() {
        let gates = &kept.gates[t * b * g..][..b * g];
        let c_t = &kept.cells[t * b * u..][..b * u];
        let c_prev = if t == 0 { &zeros[..] } else { &kept.cells[(t - 1) * b * u..][..b * u] };
        let dh: Vec<f32> = (0..b * u).map(|at| d_out[((at / u) * t_len + t) * u + at % u] + dh_next[at]).collect();
        let (d_o, dc_from_h) = lstm_cell::output_grad(gates, c_t, u, &dh);
        let dc: Vec<f32> = dc_from_h.iter().zip(&dc_next).map(|(a, b)| a + b).collect();
        let (d_ifg, dc_prev) = lstm_cell::state_grad(gates, c_prev, u, &dc);
        let step = &mut d_gates[t * b * g..][..b * g];
        // The two gradients fill disjoint quarters (o, and i, f, g).
        for ((out, o), ifg) in step.iter_mut().zip(&d_o).zip(&d_ifg) {
            *out = o + ifg;
        }
        // The gradient reaching the step's products, rounded as their
        // results were: once, here, for the hidden product's input and
        // weight gradients and the bias's, and for the input product's,
        // whose own backward pass would round it to the same bits.
        precision.round_in_place(step);
        dc_next = dc_prev;
        if t > 0 {
            // The gradient it sends back to h_{t-1}, rounded as the
            // product's operand was.
            let step = &*step;
            dh_next = if dense_input_grad::pays([b, u, g]) {
                dense_input_grad::input_grad(step, w, [b, u, g])
            } else {
                strided_gemm::product_of((step, View::rows(b, g)), (w, View::columns(g, u)), true)
            };
            precision.round_in_place(&mut dh_next);
        }
    }
    // The gradients reaching every step's hidden product (rounded in the
    // loop), and the h_{t-1} it multiplied, as the forward pass rounded it.
    let d_products = &d_gates;
    // Σ_{t ≥ 1} h_{t-1}ᵀ·dgates_t: the outputs of steps 0..T-1 against the
    // gate gradients of steps 1..T, each stacked step-major.
    let rows = (t_len.saturating_sub(1)) * b;
    let d_w = strided_gemm::product_of(
        (&rounded(precision, &kept.hidden[..rows * u]), View::columns(u, rows)),
        (d_products.get(b * g..).unwrap_or(&[]), View::rows(rows, g)),
        true,
    );
    let mut d_bias = vec![0.0f32; g];
    for row in d_products.chunks_exact(g) {
        d_bias.iter_mut().zip(row).for_each(|(s, v)| *s += v);
    }
    (batch_first(&d_gates, b, t_len, g), d_w, d_bias)
}

/// [T, B, F] step-major values as [B, T, F].
fn batch_first(step_major: &[f32], b: usize, t_len: usize, f: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(step_major.len());
    for row in 0..b {
        for t in 0..t_len {
            out.extend_from_slice(&step_major[(t * b + row) * f..][..f]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: usize) -> Vec<f32> {
        (0..len).map(|i| ((i * 37 + seed * 11) % 23) as f32 / 23.0 - 0.5).collect()
    }

    /// The loss Σ d_out·out of a sequence, in f64.
    fn loss(seq: Sequence, gates_in: &[f32], w: &[f32], bias: &[f32], d_out: &[f32]) -> f64 {
        let (out, _) = forward(seq, gates_in, w, bias);
        out.iter().zip(d_out).map(|(y, u)| f64::from(*y) * f64::from(*u)).sum()
    }

    /// Every gradient equals the central difference of the loss, for a
    /// sample of every input's values.
    #[test]
    fn the_gradients_are_the_derivatives_of_the_sequence() {
        let seq = Sequence { batch: 2, steps: 4, units: 3, precision: Precision::F32 };
        let (b, t, u) = (seq.batch, seq.steps, seq.units);
        let gates_in = values(b * t * 4 * u, 1);
        let w = values(u * 4 * u, 2);
        let bias = values(4 * u, 3);
        let d_out = values(b * t * u, 4);
        let (_, kept) = forward(seq, &gates_in, &w, &bias);
        let (d_in, d_w, d_bias) = backward(seq, &kept, &w, &d_out);
        let h = 1e-2f32;
        let check = |name: &str, got: &[f32], which: usize| {
            for k in 0..got.len() {
                let mut inputs = [gates_in.clone(), w.clone(), bias.clone()];
                inputs[which][k] += h;
                let plus = loss(seq, &inputs[0], &inputs[1], &inputs[2], &d_out);
                inputs[which][k] -= 2.0 * h;
                let minus = loss(seq, &inputs[0], &inputs[1], &inputs[2], &d_out);
                let numeric = (plus - minus) / f64::from(2.0 * h);
                let got = f64::from(got[k]);
                assert!((got - numeric).abs() <= 2e-3 * (1.0 + numeric.abs()), "{name}[{k}]: {got} vs {numeric}");
            }
        };
        check("d gates_in", &d_in, 0);
        check("d w", &d_w, 1);
        check("d bias", &d_bias, 2);
    }

    #[test]
    fn an_empty_sequence_has_no_outputs_and_zero_weight_gradients() {
        let seq = Sequence { batch: 2, steps: 0, units: 3, precision: Precision::F32 };
        let (out, kept) = forward(seq, &[], &values(36, 1), &values(12, 2));
        assert!(out.is_empty());
        let (d_in, d_w, d_bias) = backward(seq, &kept, &values(36, 1), &[]);
        assert!(d_in.is_empty());
        assert!(d_w.iter().chain(&d_bias).all(|&v| v == 0.0));
    }
}
