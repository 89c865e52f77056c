//! ReLU and LeakyReLU of the CPU backend and their gradients, element by
//! element, shared by the pool's threads.
//!
//! burn-flex 0.22 maps a tensor on the calling thread alone, and the
//! activations sit between the parallel convolutions: a profile of the
//! DeepLabv3+ `small` step had ReLU forward and backward at 3.5 % of its
//! samples, much of it with the other thread out of work
//! (`docs/benchmarks.md`, segmentation). The values are burn's to the
//! bit: ReLU lets NaN through and maps the rest to `x > 0 ? x : 0`
//! (`burn_flex::ops::activation`), its gradient keeps g where the output
//! is positive or NaN; LeakyReLU is `x ≥ 0 ? x : slope·x`.

use burn::backend::TensorMetadata;
use burn::backend::flex::FlexTensor;
use burn::tensor::DType;
use rayon::prelude::*;

use super::flex::{flex, values};

/// Values one task maps.
const CHUNK: usize = 1 << 15;

/// ReLU of `x`, NaN kept (burn's `relu`).
pub(crate) fn relu(x: FlexTensor) -> FlexTensor {
    map(x, |x| if x.is_nan() || x > 0.0 { x } else { 0.0 })
}

/// The gradient `grad` through ReLU given its output `y`: g where y is
/// positive or NaN, 0 elsewhere (burn's `relu_backward`).
pub(crate) fn relu_grad(grad: FlexTensor, y: &[f32]) -> FlexTensor {
    zip_map(grad, y, |g, y| if y.is_nan() || y > 0.0 { g } else { 0.0 })
}

/// LeakyReLU of `x` with `slope` (burn's `leaky_relu`).
pub(crate) fn leaky_relu(x: FlexTensor, slope: f32) -> FlexTensor {
    map(x, move |x| if x >= 0.0 { x } else { slope * x })
}

/// The gradient `grad` through LeakyReLU given its output `y` (whose sign
/// is its input's for a positive slope): g where y ≥ 0, slope·g elsewhere.
pub(crate) fn leaky_relu_grad(grad: FlexTensor, y: &[f32], slope: f32) -> FlexTensor {
    // A select rather than a branch: the loop vectorises.
    zip_map(grad, y, move |g, y| g * if y < 0.0 { slope } else { 1.0 })
}

/// `op` of every value of `x`: in place when `x` holds its buffer alone,
/// contiguous from its start; into a new buffer otherwise.
fn map(mut x: FlexTensor, op: impl Fn(f32) -> f32 + Sync) -> FlexTensor {
    let apply = |values: &mut [f32]| values.iter_mut().for_each(|v| *v = op(*v));
    if let Some(values) = sole_values(&mut x) {
        each_chunk(values, |_, chunk| apply(chunk));
        return x;
    }
    let shape = x.shape();
    let mut owned = values(&x).into_owned();
    each_chunk(&mut owned, |_, chunk| apply(chunk));
    flex(owned, shape)
}

/// `op(g, y)` of every value g of `grad` and its y of `y` (as long),
/// written over `grad` as [`map`] writes.
fn zip_map(mut grad: FlexTensor, y: &[f32], op: impl Fn(f32, f32) -> f32 + Sync) -> FlexTensor {
    let apply = |start: usize, values: &mut [f32]| {
        let y = &y[start..start + values.len()];
        values.iter_mut().zip(y).for_each(|(g, &y)| *g = op(*g, y));
    };
    if let Some(values) = sole_values(&mut grad) {
        assert_eq!(values.len(), y.len(), "a gradient of {} values for {} outputs", values.len(), y.len());
        each_chunk(values, apply);
        return grad;
    }
    let shape = grad.shape();
    let mut owned = values(&grad).into_owned();
    assert_eq!(owned.len(), y.len(), "a gradient of {} values for {} outputs", owned.len(), y.len());
    each_chunk(&mut owned, apply);
    flex(owned, shape)
}

/// The values of an f32 tensor that holds its buffer alone, contiguous
/// from its start, to write in place.
fn sole_values(x: &mut FlexTensor) -> Option<&mut [f32]> {
    if x.dtype() != DType::F32 || !x.is_contiguous() || x.layout().start_offset() != 0 {
        return None;
    }
    let len = x.shape().num_elements();
    x.try_storage_mut::<f32>().map(|values| &mut values[..len])
}

/// `work(start, chunk)` over `values` in chunks of [`CHUNK`], by the
/// pool's threads when there is more than one chunk.
fn each_chunk(values: &mut [f32], work: impl Fn(usize, &mut [f32]) + Sync) {
    if values.len() <= CHUNK {
        work(0, values);
    } else {
        values.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| work(k * CHUNK, chunk));
    }
}
