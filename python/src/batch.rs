//! A batch's buffers handed to NumPy without a copy.
//!
//! The arrays NumPy gets point into the loader's own buffers; their base
//! object is a [`BatchBuffers`], which owns the batch and gives its buffers
//! back to the loader's pool when the last array over them is freed. A
//! consumer that keeps arrays just keeps their memory; the loader then
//! decodes into new buffers.

use loader::pipeline::{Batch, Recycler};
use loader::traces::CHOICE_WIDTH;
use numpy::ndarray::{ArrayView, IxDyn};
use numpy::{PyArray1, PyArrayDyn};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// The owner of one batch's memory: the base object of its NumPy arrays.
#[pyclass(frozen, module = "stagehand._stagehand")]
pub struct BatchBuffers {
    batch: Batch,
    recycler: Recycler,
}

impl Drop for BatchBuffers {
    fn drop(&mut self) {
        self.recycler.recycle(std::mem::take(&mut self.batch));
    }
}

#[pymethods]
impl BatchBuffers {
    /// Address of the first input value: the arrays' data pointer, for
    /// checking that no copy was made.
    #[getter]
    fn x_address(&self) -> usize {
        self.batch.x.as_ptr() as usize
    }
}

/// The arrays of one batch.
pub struct Arrays<'py> {
    /// Inputs, (n, *x_shape).
    pub x: Bound<'py, PyArrayDyn<f32>>,
    /// Targets, (n, *y_shape); for ragged targets all choices of the
    /// batch, (choices, CHOICE_WIDTH).
    pub y: Bound<'py, PyArrayDyn<f32>>,
    /// Ragged targets: sample `k`'s choices are rows
    /// `offsets[k]..offsets[k + 1]` of `y`.
    pub offsets: Option<Bound<'py, PyArray1<i64>>>,
}

/// Wrap `batch` as NumPy arrays over its own memory.
pub fn arrays<'py>(
    py: Python<'py>,
    batch: Batch,
    recycler: Recycler,
    x_shape: &[usize],
    y_shape: Option<&[usize]>,
) -> PyResult<Arrays<'py>> {
    let n = batch.len();
    let shaped = |sample: &[usize]| -> Vec<usize> { std::iter::once(n).chain(sample.iter().copied()).collect() };
    let x_dims = shaped(x_shape);
    let (y_dims, offsets) = match y_shape {
        Some(shape) => (shaped(shape), None),
        None => {
            let rows: Vec<i64> = batch.y_offsets.iter().map(|&o| (o / CHOICE_WIDTH) as i64).collect();
            (vec![batch.y.len() / CHOICE_WIDTH, CHOICE_WIDTH], Some(PyArray1::from_vec(py, rows)))
        }
    };
    let owner = Bound::new(py, BatchBuffers { batch, recycler })?;
    let held = &owner.get().batch;
    let bad_shape = |e: numpy::ndarray::ShapeError| PyValueError::new_err(format!("batch does not fit its shape: {e}"));
    let x_view = ArrayView::from_shape(IxDyn(&x_dims), &held.x[..]).map_err(bad_shape)?;
    let y_view = ArrayView::from_shape(IxDyn(&y_dims), &held.y[..]).map_err(bad_shape)?;
    Ok(Arrays { x: borrow(&x_view, &owner), y: borrow(&y_view, &owner), offsets })
}

/// An array over `view`, which lies in `owner`'s batch.
#[allow(unsafe_code)]
fn borrow<'py>(view: &ArrayView<'_, f32, IxDyn>, owner: &Bound<'py, BatchBuffers>) -> Bound<'py, PyArrayDyn<f32>> {
    // SAFETY: `view` lies in the vectors of `owner`'s batch. The array
    // keeps `owner` alive (it is the array's base), and a `BatchBuffers` is
    // frozen: its vectors are neither written nor reallocated until it is
    // dropped, which gives them back to the pool only after every array
    // over them is gone. numpy-rs has no safe constructor for an array
    // whose memory another object owns.
    unsafe { PyArrayDyn::borrow_from_array(view, owner.clone().into_any()) }
}
