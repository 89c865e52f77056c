//! Glue between burn's dispatch tensors and our kernels on its Flex CPU
//! backend: find out whether a tensor lives there (with or without
//! autodiff), read its values, build tensors from ours.

use std::borrow::Cow;

use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Autodiff, Flex};
use burn::tensor::{DType, Shape, Tensor, TensorData};

/// A float tensor of the autodiff Flex backend.
pub(crate) type AutodiffTensor = FloatTensor<Autodiff<Flex>>;

/// A tensor on burn's Flex backend, with or without autodiff.
pub(crate) enum OnFlex {
    Plain(FlexTensor),
    Autodiff(AutodiffTensor),
}

impl OnFlex {
    /// The tensor on the autodiff backend (a plain one joins untracked).
    pub(crate) fn lift(self) -> AutodiffTensor {
        match self {
            OnFlex::Plain(t) => AutodiffTensor::new(t),
            OnFlex::Autodiff(t) => t,
        }
    }
}

/// The tensor if it holds f32 values on the Flex backend (what our kernels
/// take), `None` if it lives elsewhere or holds another type.
pub(crate) fn on_flex<const D: usize>(t: &Tensor<D>) -> Option<OnFlex> {
    if t.dtype() != DType::F32 {
        return None;
    }
    if let Ok(p) = t.clone().try_into_primitive::<Autodiff<Flex>>() {
        return Some(OnFlex::Autodiff(p));
    }
    t.clone().try_into_primitive::<Flex>().ok().map(OnFlex::Plain)
}

/// The values of a Flex tensor, in row-major order: borrowed when it is
/// contiguous (no copy), copied otherwise.
pub(crate) fn values(t: &FlexTensor) -> Cow<'_, [f32]> {
    match t.as_slice::<f32>() {
        Some(v) => Cow::Borrowed(v),
        // One copy (the gather into order), whose buffer we then keep.
        None => Cow::Owned(t.to_contiguous().into_data().try_into_vec::<f32>().unwrap_or_default()),
    }
}

/// A Flex tensor of `shape` holding `values`.
pub(crate) fn flex(values: Vec<f32>, shape: Shape) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape))
}
