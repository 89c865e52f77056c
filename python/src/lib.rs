//! `stagehand._stagehand`: the compiled half of the `stagehand` Python
//! package. It opens datasets through the loader's
//! [`catalog`](loader::catalog), computes the samplers' orders, and hands
//! the loader's batches to NumPy without a copy. The Python half
//! (`python/stagehand/`) resolves ranks from the environment, keeps the
//! epoch and resume state, and wraps batches for PyTorch and TensorFlow.
//!
//! ```python
//! import stagehand
//! data = stagehand.Dataset.from_manifest("/data/cosmo")
//! for x, y in stagehand.Loader(data, batch_size=4, workers=2):
//!     ...  # x: float32 (4, 128, 128, 128, 4), y: float32 (4, 4)
//! ```

mod batch;
mod dataset;
mod loader;

use pyo3::prelude::*;

pyo3::create_exception!(
    stagehand,
    DataError,
    pyo3::exceptions::PyException,
    "A sample or dataset that cannot be read: the message names the file and the byte offset or sample."
);

/// The loader's error as a Python exception (its message names the file).
pub(crate) fn data_error(error: impl std::fmt::Display) -> PyErr {
    DataError::new_err(error.to_string())
}

/// The module `stagehand._stagehand`.
#[pymodule]
fn _stagehand(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dataset::Dataset>()?;
    m.add_class::<loader::EpochLoader>()?;
    m.add_class::<batch::BatchBuffers>()?;
    m.add("DataError", m.py().get_type::<DataError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
