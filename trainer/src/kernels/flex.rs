//! Reading and building tensors of burn's Flex CPU backend for our kernels.

use std::borrow::Cow;

use burn::backend::flex::FlexTensor;
use burn::tensor::{Shape, TensorData};

/// The values of an f32 Flex tensor in row-major order: borrowed when it is
/// contiguous (no copy), copied otherwise. The kernels are only handed f32
/// tensors (`ops` checks the dtype first), so another type is a bug.
pub(crate) fn values(t: &FlexTensor) -> Cow<'_, [f32]> {
    if let Some(v) = t.as_slice::<f32>() {
        return Cow::Borrowed(v);
    }
    // One copy (the gather into order), whose buffer we then keep.
    match t.to_contiguous().into_data().try_into_vec::<f32>() {
        Ok(v) => Cow::Owned(v),
        Err(e) => panic!("a kernel was handed a {:?} tensor where it takes f32: {e:?}", t.dtype()),
    }
}

/// A Flex tensor of `shape` holding `values`.
pub(crate) fn flex(values: Vec<f32>, shape: Shape) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape))
}
