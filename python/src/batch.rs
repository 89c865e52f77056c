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
use numpy::{Element, PyArray1, PyArrayDyn};
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
    /// Address of the first input value (of a batch of records, its first
    /// byte): the arrays' data pointer, for checking that no copy was made.
    #[getter]
    fn x_address(&self) -> usize {
        if self.batch.x.is_empty() && !self.batch.records.is_empty() {
            self.batch.records.as_ptr() as usize
        } else {
            self.batch.x.as_ptr() as usize
        }
    }
}

/// The arrays of one batch.
pub struct Arrays<'py> {
    /// Inputs, (n, *x_shape) float32; for records, uint8: (n, length) when
    /// every record of the batch has the same length, else all records
    /// one after the other with `offsets`.
    pub x: Bound<'py, PyAny>,
    /// Targets, (n, *y_shape); for ragged targets all choices of the
    /// batch, (choices, CHOICE_WIDTH).
    pub y: Bound<'py, PyArrayDyn<f32>>,
    /// Ragged targets: sample `k`'s choices are rows
    /// `offsets[k]..offsets[k + 1]` of `y`; records of differing lengths:
    /// sample `k` is bytes `offsets[k]..offsets[k + 1]` of `x`.
    pub offsets: Option<Bound<'py, PyArray1<i64>>>,
}

/// Wrap a batch of byte records as a uint8 array over its own memory.
fn record_arrays<'py>(py: Python<'py>, batch: Batch, recycler: Recycler) -> PyResult<Arrays<'py>> {
    let n = batch.len();
    let lengths: Vec<usize> = batch.record_offsets.windows(2).map(|w| w[1] - w[0]).collect();
    let (x_dims, offsets) = match lengths.first() {
        Some(&first) if lengths.iter().all(|&l| l == first) => (vec![n, first], None),
        None => (vec![0, 0], None),
        Some(_) => {
            let offsets: Vec<i64> = batch.record_offsets.iter().map(|&o| o as i64).collect();
            (vec![batch.records.len()], Some(PyArray1::from_vec(py, offsets)))
        }
    };
    let owner = Bound::new(py, BatchBuffers { batch, recycler })?;
    let held = &owner.get().batch;
    let bad_shape = |e: numpy::ndarray::ShapeError| PyValueError::new_err(format!("batch does not fit its shape: {e}"));
    let x_view = ArrayView::from_shape(IxDyn(&x_dims), &held.records[..]).map_err(bad_shape)?;
    let y_view = ArrayView::from_shape(IxDyn(&[n, 0]), &held.y[..0]).map_err(bad_shape)?;
    Ok(Arrays { x: borrow(&x_view, &owner).into_any(), y: borrow(&y_view, &owner), offsets })
}

/// Wrap `batch` as NumPy arrays over its own memory.
pub fn arrays<'py>(
    py: Python<'py>,
    batch: Batch,
    recycler: Recycler,
    x_shape: &[usize],
    y_shape: Option<&[usize]>,
    records: bool,
) -> PyResult<Arrays<'py>> {
    if records {
        return record_arrays(py, batch, recycler);
    }
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
    Ok(Arrays { x: borrow(&x_view, &owner).into_any(), y: borrow(&y_view, &owner), offsets })
}

/// An array over `view`, which lies in `owner`'s batch.
#[allow(unsafe_code)]
fn borrow<'py, T: Element>(
    view: &ArrayView<'_, T, IxDyn>,
    owner: &Bound<'py, BatchBuffers>,
) -> Bound<'py, PyArrayDyn<T>> {
    // SAFETY: `view` lies in the vectors of `owner`'s batch. The array
    // keeps `owner` alive (it is the array's base), and a `BatchBuffers` is
    // frozen: its vectors are neither written nor reallocated until it is
    // dropped, which gives them back to the pool only after every array
    // over them is gone. numpy-rs has no safe constructor for an array
    // whose memory another object owns.
    unsafe { PyArrayDyn::borrow_from_array(view, owner.clone().into_any()) }
}
