//! `EpochLoader`: the loader's worker pool over one epoch at a time, in
//! the samplers' order. The Python `stagehand.Loader` keeps the epoch and
//! the position and starts each epoch here; this type only loads.

use std::sync::Arc;

use loader::elastic::{EpochStart, resumed_batches};
use loader::pipeline::{Loader, LoaderConfig, Metrics, Recycler};
use loader::sampler::{DistributedSampler, Remainder, Sampler};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::batch::arrays;
use crate::data_error;
use crate::dataset::Dataset;

/// One rank's batches, an epoch at a time, decoded ahead by worker threads.
#[pyclass(module = "stagehand._stagehand")]
pub struct EpochLoader {
    dataset: Py<Dataset>,
    /// This rank's order of the dataset's samples (global ids for a staged
    /// dataset).
    sampler: Box<dyn Sampler>,
    /// The same sampler where the dataset is not staged: the one an epoch
    /// can be resumed from at another world size.
    plain: Option<DistributedSampler>,
    config: LoaderConfig,
    current: Option<Loader>,
    /// The epoch `current` loads.
    epoch: u64,
    /// The next epoch, started when the current one has a prefetch window
    /// of batches left to deliver: its first batches decode while the
    /// consumer works on the last ones, so an epoch boundary costs no wait.
    ahead: Option<(u64, Loader)>,
    buffers: Recycler,
    /// Metrics of the epochs that ended or were stopped.
    before: Metrics,
}

fn add(total: &mut Metrics, epoch: &Metrics) {
    total.samples += epoch.samples;
    total.bytes += epoch.bytes;
    total.consumer_wait += epoch.consumer_wait;
    total.worker_busy += epoch.worker_busy;
    total.max_ready = total.max_ready.max(epoch.max_ready);
    total.skipped += epoch.skipped;
    total.elapsed += epoch.elapsed;
}

#[pymethods]
impl EpochLoader {
    /// Batches of `batch_size` from `dataset` for `rank` of `world_size`.
    /// `drop_last` leaves out the samples that do not make equal shares
    /// and the last short batch; otherwise shares are padded with samples
    /// from the start of the epoch and the last batch may be short. Every
    /// rank gets the same number of batches either way.
    #[new]
    #[pyo3(signature = (dataset, *, batch_size, workers, prefetch, shuffle, seed, drop_last, rank, world_size, skip_corrupt, check_finite=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        dataset: Bound<'_, Dataset>,
        batch_size: usize,
        workers: usize,
        prefetch: usize,
        shuffle: bool,
        seed: u64,
        drop_last: bool,
        rank: usize,
        world_size: usize,
        skip_corrupt: bool,
        check_finite: bool,
    ) -> PyResult<Self> {
        if batch_size == 0 || workers == 0 || prefetch == 0 {
            return Err(PyValueError::new_err(format!(
                "batch_size {batch_size}, workers {workers}, prefetch {prefetch}: each must be at least 1"
            )));
        }
        if world_size == 0 || rank >= world_size {
            return Err(PyValueError::new_err(format!("rank {rank} of world_size {world_size}")));
        }
        let held = dataset.get();
        let remainder = if drop_last { Remainder::Drop } else { Remainder::Pad };
        let distributed =
            DistributedSampler { len: held.opened.dataset.len(), world: world_size, rank, seed, shuffle, remainder };
        let plain = held.placement.is_none().then_some(distributed);
        let sampler: Box<dyn Sampler> = match &held.placement {
            Some(placement) => {
                if placement.rank_world() != (rank, world_size) {
                    let (r, w) = placement.rank_world();
                    return Err(PyValueError::new_err(format!(
                        "the staged dataset was opened for rank {r} of {w}, the loader is for rank {rank} of {world_size}"
                    )));
                }
                if !shuffle {
                    return Err(PyValueError::new_err(
                        "a staged dataset is read in the node-local shuffled order the trainer uses; shuffle=False is not available",
                    ));
                }
                Box::new(placement.sampler(remainder)?)
            }
            None => Box::new(distributed),
        };
        Ok(EpochLoader {
            dataset: dataset.unbind(),
            sampler,
            plain,
            config: LoaderConfig { batch: batch_size, workers, prefetch, skip_corrupt, check_finite, drop_last },
            current: None,
            epoch: 0,
            ahead: None,
            buffers: Recycler::default(),
            before: Metrics::default(),
        })
    }

    /// This rank's sample ids for `epoch`, in order (for a staged dataset,
    /// the source dataset's ids).
    fn order(&self, epoch: u64) -> Vec<usize> {
        self.config.order(&*self.sampler, epoch)
    }

    /// Batches per epoch (the same on every rank).
    fn batches(&self) -> usize {
        self.config.steps(&*self.sampler)
    }

    /// Stop the epoch in progress (if any) and start `epoch` at batch
    /// `position`.
    fn start(&mut self, py: Python<'_>, epoch: u64, position: usize) -> PyResult<()> {
        if position > self.batches() {
            return Err(PyValueError::new_err(format!(
                "batch position {position} is past the epoch's {} batches",
                self.batches()
            )));
        }
        self.stop(py);
        if let Some((next, loader)) = self.ahead.take() {
            if (next, position) == (epoch, 0) {
                self.current = Some(loader);
                self.epoch = epoch;
                return Ok(());
            }
            py.detach(move || drop(loader));
        }
        self.current = Some(self.loader_of(epoch, position));
        self.epoch = epoch;
        Ok(())
    }

    /// Start the rest of `epoch` as an epoch begun on `from_world` ranks
    /// left it, `taken` positions of its sequence taken by all ranks: this
    /// rank's share of the rest ([`loader::elastic`]), from its batch
    /// `position`. Returns this rank's batches in the resumed epoch (the
    /// same on every rank).
    fn start_resumed(
        &mut self,
        py: Python<'_>,
        epoch: u64,
        taken: usize,
        from_world: usize,
        position: usize,
    ) -> PyResult<usize> {
        let Some(plain) = self.plain else {
            return Err(PyValueError::new_err(
                "a staged dataset is placed for its world size: resume it at the world size it was opened for",
            ));
        };
        let start = EpochStart { world: from_world, taken };
        let batches =
            resumed_batches(&plain, &self.config, epoch, start).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let count = batches.len();
        if position > count {
            return Err(PyValueError::new_err(format!(
                "batch position {position} is past the resumed epoch's {count} batches"
            )));
        }
        self.stop(py);
        if let Some((_, ahead)) = self.ahead.take() {
            py.detach(move || drop(ahead));
        }
        let dataset = self.dataset.get().opened.dataset.clone();
        self.current = Some(Loader::of_batches(dataset, batches, self.config, position, self.buffers.clone()));
        self.epoch = epoch;
        Ok(count)
    }

    /// The next batch of the epoch, or `None` at its end: `(x, y, offsets,
    /// indices)`. `x` and `y` are NumPy arrays over the loader's buffers;
    /// `offsets` is `None` unless targets are ragged (traces); `indices`
    /// are the samples' ids. The GIL is released while waiting.
    #[allow(clippy::type_complexity)]
    fn next<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>, Vec<usize>)>> {
        let Some(current) = self.current.as_mut() else {
            return Err(PyRuntimeError::new_err("no epoch started: call start(epoch, position) first"));
        };
        let Some(item) = py.detach(|| current.next()) else {
            return Ok(None);
        };
        // The next epoch's loader shares this one's prefetch window: started
        // with a window's worth of batches left, its workers take up its
        // first batches as this one's run out of work.
        let near_end = Loader::position(current) + self.config.prefetch.max(1) >= current.batches();
        let batch = item.map_err(data_error)?;
        if near_end && self.ahead.is_none() {
            let next = self.epoch + 1;
            let order = self.config.order(&*self.sampler, next);
            self.ahead = Some((next, current.start_next_epoch(order)));
        }
        let dataset = self.dataset.get();
        // The ids the sampler gave: a staged dataset's are the source dataset's.
        let indices = batch.indices.clone();
        let opened = &dataset.opened;
        let records = opened.dataset.holds_records();
        let made = arrays(py, batch, self.buffers.clone(), &opened.x_shape, opened.y_shape.as_deref(), records)?;
        Ok(Some((made.x, made.y.into_any(), made.offsets.map(Bound::into_any), indices)))
    }

    /// Batches of the current epoch delivered so far.
    fn position(&self) -> usize {
        self.current.as_ref().map_or(0, Loader::position)
    }

    /// What the loader did over every epoch so far: samples, bytes read,
    /// seconds the consumer waited, seconds workers were busy, corrupt
    /// samples skipped, wall seconds, and the consumer's share of waiting.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut total = self.before;
        if let Some(current) = &self.current {
            add(&mut total, &current.metrics());
        }
        let summary = total.summary();
        let out = PyDict::new(py);
        out.set_item("samples", total.samples)?;
        out.set_item("bytes", total.bytes)?;
        out.set_item("seconds", total.elapsed.as_secs_f64())?;
        out.set_item("consumer_wait_seconds", total.consumer_wait.as_secs_f64())?;
        out.set_item("consumer_wait_fraction", summary.consumer_wait_fraction)?;
        out.set_item("worker_busy_seconds", total.worker_busy.as_secs_f64())?;
        out.set_item("samples_per_second", summary.samples_per_sec)?;
        out.set_item("skipped", total.skipped)?;
        out.set_item("max_ready", total.max_ready)?;
        Ok(out)
    }

    /// Make the buffers of the batches in flight now, their pages in
    /// place (datasets of records whose lengths are known); the bytes made.
    fn stock_buffers(&self, py: Python<'_>) -> usize {
        let dataset = self.dataset.get().opened.dataset.clone();
        let (buffers, batch) = (self.buffers.clone(), self.config.batch);
        // The batches in flight, the one the consumer holds and the one
        // before (a Python loop holds it until `next` returns); never more
        // than an epoch has (its workers stop with the epoch).
        let count = (self.config.prefetch.max(1) + 2).min(self.batches());
        py.detach(move || buffers.stock(&*dataset, batch, count))
    }

    /// Stop the workers of the epoch in progress.
    fn close(&mut self, py: Python<'_>) {
        self.stop(py);
        if let Some((_, ahead)) = self.ahead.take() {
            py.detach(move || drop(ahead));
        }
    }
}

impl EpochLoader {
    /// A loader of `epoch` from batch `position`, on this loader's buffers.
    fn loader_of(&self, epoch: u64, position: usize) -> Loader {
        let held = self.dataset.get();
        let dataset: Arc<dyn loader::dataset::Dataset> = match &held.placement {
            Some(placement) => placement.by_global_id.clone(),
            None => held.opened.dataset.clone(),
        };
        Loader::resume_with_buffers(dataset, self.order(epoch), self.config, position, self.buffers.clone())
    }

    fn stop(&mut self, py: Python<'_>) {
        if let Some(current) = self.current.take() {
            add(&mut self.before, &current.metrics());
            // Joining the workers waits for their batch in progress.
            py.detach(move || drop(current));
        }
    }
}
