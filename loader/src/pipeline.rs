//! The prefetching worker pool: N threads decode batches into reusable
//! buffers, at most `prefetch` batches exist ahead of the consumer, batches
//! are delivered in the sampler's order, errors travel to the consumer, and
//! dropping the loader stops and joins every thread.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::dataset::{Dataset, DatasetError};
use crate::sampler::Sampler;

use crate::recycler::Turn;
pub use crate::recycler::{Recycler, buffers_to_stock};

/// How to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoaderConfig {
    /// Samples per batch.
    pub batch: usize,
    /// Decoding threads.
    pub workers: usize,
    /// Batches that may be decoded ahead of the consumer (at least 1).
    pub prefetch: usize,
    /// Skip (and count, and log) corrupt samples instead of delivering the
    /// error; a batch with a skipped sample is shorter.
    pub skip_corrupt: bool,
    /// Check every decoded sample's input and target for NaN and infinity;
    /// one that holds any is an error naming its file and position
    /// ([`DatasetError::NonFinite`]), or is skipped with `skip_corrupt`.
    /// Costs one more pass over each decoded sample's values.
    pub check_finite: bool,
    /// Deliver whole batches only, leaving out the samples past the last
    /// one: what a consumer whose every rank must take the same number of
    /// full steps wants. Otherwise the last batch may be short.
    pub drop_last: bool,
}

impl LoaderConfig {
    /// Batches an epoch of `samples` samples makes.
    pub fn batches(&self, samples: usize) -> usize {
        let batch = self.batch.max(1);
        if self.drop_last { samples / batch } else { samples.div_ceil(batch) }
    }

    /// The samples of an epoch's `order` the loader delivers, in order.
    pub fn delivered(&self, mut order: Vec<usize>) -> Vec<usize> {
        order.truncate(self.batches(order.len()).saturating_mul(self.batch.max(1)).min(order.len()));
        order
    }

    /// The samples of `sampler`'s order for `epoch` that this loader
    /// delivers, in order: where a sampler's order meets the batch size.
    pub fn order(&self, sampler: &dyn Sampler, epoch: u64) -> Vec<usize> {
        self.delivered(sampler.order(epoch, self.batch))
    }

    /// Samples `sampler` gives a rank per epoch, before batches are cut.
    pub fn per_rank(&self, sampler: &dyn Sampler) -> usize {
        sampler.per_rank(self.batch)
    }

    /// Batches (steps) per epoch from `sampler`.
    pub fn steps(&self, sampler: &dyn Sampler) -> usize {
        self.batches(self.per_rank(sampler))
    }
}

/// One batch: `x` is `len * x_len` values; sample `k`'s target is
/// `y[y_offsets[k]..y_offsets[k + 1]]` (every target has `y_len` values
/// except in datasets of variable-length targets, such as traces). A
/// dataset of byte records ([`crate::records`]) fills `records` instead:
/// sample `k` is `records[record_offsets[k]..record_offsets[k + 1]]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    /// Position of the batch in the epoch.
    pub number: usize,
    /// Sample indices, in order.
    pub indices: Vec<usize>,
    /// Inputs, sample after sample.
    pub x: Vec<f32>,
    /// Targets, sample after sample.
    pub y: Vec<f32>,
    /// Where each sample's target starts in `y`, plus `y.len()` at the end.
    pub y_offsets: Vec<usize>,
    /// Byte records, sample after sample (datasets of records only).
    pub records: Vec<u8>,
    /// Where each sample's record starts in `records`, plus
    /// `records.len()` at the end (datasets of records only).
    pub record_offsets: Vec<usize>,
}

impl Batch {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// True if the batch holds no sample (all were skipped as corrupt).
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The target of sample `k` of the batch.
    pub fn target(&self, k: usize) -> &[f32] {
        &self.y[self.y_offsets[k]..self.y_offsets[k + 1]]
    }

    /// The bytes of sample `k` of a batch of records.
    pub fn record(&self, k: usize) -> &[u8] {
        &self.records[self.record_offsets[k]..self.record_offsets[k + 1]]
    }
}

/// Counters of a loader's work so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Metrics {
    /// Samples delivered.
    pub samples: u64,
    /// Bytes read from storage.
    pub bytes: u64,
    /// Time the consumer waited for a batch.
    pub consumer_wait: Duration,
    /// Time workers spent decoding, summed over workers.
    pub worker_busy: Duration,
    /// Most batches ever decoded but not yet taken.
    pub max_ready: usize,
    /// Corrupt samples skipped (with `skip_corrupt`).
    pub skipped: u64,
    /// Wall time since the loader started.
    pub elapsed: Duration,
}

impl Metrics {
    /// Rates and shares over the run so far: what a trainer logs per epoch.
    pub fn summary(&self) -> EpochSummary {
        let secs = self.elapsed.as_secs_f64();
        let per_sec = |v: f64| if secs > 0.0 { v / secs } else { 0.0 };
        EpochSummary {
            samples: self.samples,
            seconds: secs,
            samples_per_sec: per_sec(self.samples as f64),
            bytes_per_sec: per_sec(self.bytes as f64),
            consumer_wait_fraction: if secs > 0.0 { self.consumer_wait.as_secs_f64() / secs } else { 0.0 },
            worker_busy_seconds: self.worker_busy.as_secs_f64(),
            skipped: self.skipped,
        }
    }
}

/// One epoch of a loader in numbers (see [`Metrics::summary`]); its
/// `Display` is the line the loader logs when an epoch ends.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct EpochSummary {
    /// Samples delivered.
    pub samples: u64,
    /// Wall seconds from start to the last batch.
    pub seconds: f64,
    /// Samples delivered per second.
    pub samples_per_sec: f64,
    /// Bytes read from storage per second.
    pub bytes_per_sec: f64,
    /// Share of the wall time the consumer spent waiting for a batch.
    pub consumer_wait_fraction: f64,
    /// Seconds workers spent decoding, summed over workers.
    pub worker_busy_seconds: f64,
    /// Corrupt samples skipped.
    pub skipped: u64,
}

impl std::fmt::Display for EpochSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} samples in {:.2} s: {:.1} samples/s, {:.1} MB/s read, consumer waited {:.1} % of the time, workers busy {:.2} s, {} corrupt skipped",
            self.samples,
            self.seconds,
            self.samples_per_sec,
            self.bytes_per_sec / 1e6,
            100.0 * self.consumer_wait_fraction,
            self.worker_busy_seconds,
            self.skipped
        )
    }
}

struct State {
    /// Next batch number a worker may start.
    next_to_start: usize,
    /// Next batch number the consumer takes.
    next_to_deliver: usize,
    ready: BTreeMap<usize, Result<Batch, DatasetError>>,
    max_ready: usize,
    /// Batches the loader this one follows ([`Loader::start_next_epoch`])
    /// has still to deliver: they hold as many places of the prefetch
    /// window, which the two loaders share.
    leader_owes: usize,
    /// Batches workers have started and hold no buffer for yet (a bounded
    /// recycler's buffers go to the earliest).
    unbuffered: BTreeSet<usize>,
    /// The consumer waits in [`Loader::next`] for the next batch.
    consumer_waiting: bool,
}

struct Shared {
    state: Mutex<State>,
    free: Recycler,
    /// Signalled when the prefetch window opens (workers wait on it).
    window_opened: Condvar,
    /// Signalled when a batch is ready (the consumer waits on it).
    batch_ready: Condvar,
    stop: AtomicBool,
    bytes: AtomicU64,
    busy_nanos: AtomicU64,
    skipped: AtomicU64,
    /// The next epoch's loader started from this one, told of each batch
    /// this one delivers (each opens a place of its window).
    follower: Mutex<Option<Arc<Shared>>>,
}

impl Shared {
    /// The loader this one follows delivered a batch (or stopped: `all`).
    fn leader_delivered(&self, all: bool) {
        let mut state = lock(&self.state);
        state.leader_owes = if all { 0 } else { state.leader_owes.saturating_sub(1) };
        drop(state);
        if all {
            self.window_opened.notify_all();
        } else {
            self.window_opened.notify_one();
        }
        self.free.wake();
    }

    /// What a worker holding batch `number` may do for a buffer on a
    /// bounded recycler ([`Recycler::take_or_wait`]): wait while the loader
    /// this one follows has batches to deliver (the consumer takes them
    /// first, [`Loader::start_next_epoch`], and its workers need the
    /// buffers), or while an earlier batch of this one waits for a buffer
    /// (it takes the next one that comes back: otherwise the consumer
    /// would come to it while later batches hold every buffer). It makes
    /// one only for the batch the consumer waits for: a batch delivered
    /// gives its buffer back soon after (the consumer drops the one
    /// before), and a buffer made meanwhile would be one too many.
    fn turn(&self, number: usize) -> Turn {
        let state = lock(&self.state);
        if self.stop.load(Ordering::SeqCst) {
            Turn::TakeOrMake
        } else if state.leader_owes > 0 || state.unbuffered.first().is_some_and(|&first| first < number) {
            Turn::Later
        } else if number == state.next_to_deliver && state.consumer_waiting {
            Turn::TakeOrMake
        } else {
            Turn::TakeOrWait
        }
    }
}

/// Batches of a dataset in a given order, decoded ahead by worker threads.
pub struct Loader {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    batches: usize,
    samples: u64,
    wait: Duration,
    started: Instant,
    /// Set when the last batch has been delivered (the epoch's end).
    finished: Option<Duration>,
    /// Started ahead of its epoch ([`Loader::start_next_epoch`]): its clock
    /// starts when the consumer first asks it for a batch.
    clock_waits: bool,
    dataset: Arc<dyn Dataset>,
    config: LoaderConfig,
}

impl Loader {
    /// Start loading `order` (sample indices, e.g. from a sampler) from
    /// `dataset` in batches. A last partial batch is delivered as it is,
    /// unless [`drop_last`](LoaderConfig::drop_last) leaves it out.
    pub fn new(dataset: Arc<dyn Dataset>, order: Vec<usize>, config: LoaderConfig) -> Loader {
        Self::resume(dataset, order, config, 0)
    }

    /// Like [`new`](Self::new), starting at batch `position` of the epoch:
    /// with the same sampler, seed and epoch, a restarted job continues
    /// mid-epoch in the same order (see [`position`](Self::position)).
    pub fn resume(dataset: Arc<dyn Dataset>, order: Vec<usize>, config: LoaderConfig, position: usize) -> Loader {
        Self::start(dataset, order, config, position, Recycler::default())
    }

    /// Like [`resume`](Self::resume), for a dataset whose type is erased,
    /// taking buffers from (and giving them back to) `buffers`: a consumer
    /// that starts every epoch itself keeps one pool across them.
    pub fn resume_with_buffers(
        dataset: Arc<dyn Dataset>,
        order: Vec<usize>,
        config: LoaderConfig,
        position: usize,
        buffers: Recycler,
    ) -> Loader {
        Self::start(dataset, order, config, position, buffers)
    }

    /// Stop this epoch and start the next, in `order`, with the same
    /// dataset and configuration, reusing this loader's batch buffers:
    /// the new epoch's first batches do not wait for fresh memory.
    pub fn next_epoch(self, order: Vec<usize>) -> Loader {
        self.next_epoch_at(order, 0)
    }

    /// The next epoch's loader in `order`, started now, before the
    /// consumer is done with this epoch, with the same dataset and
    /// configuration and this loader's batch buffers. The two share one
    /// prefetch window: the new one's workers start a batch only where
    /// this one's undelivered batches leave a place, so they take up the
    /// new epoch's first batches as soon as this one's workers have
    /// nothing left to start, and the consumer never finds the window
    /// drained at the boundary. Started once `prefetch` or fewer of this
    /// epoch's batches are left to deliver, the new one's workers do not
    /// wait long; started earlier they wait idle. Take this loader's
    /// batches to its end (or drop it: that gives the new one the whole
    /// window), then the new one's.
    pub fn start_next_epoch(&self, order: Vec<usize>) -> Loader {
        let owes = self.batches.saturating_sub(self.position());
        let mut next =
            Self::start_behind(self.dataset.clone(), order, self.config, (0, owes), self.shared.free.clone());
        next.clock_waits = true;
        *lock(&self.shared.follower) = Some(next.shared.clone());
        next
    }

    /// [`next_epoch`](Self::next_epoch) starting at batch `position` of
    /// the new epoch, as [`resume`](Self::resume) does.
    pub fn next_epoch_at(mut self, order: Vec<usize>, position: usize) -> Loader {
        self.stop();
        Self::start(self.dataset.clone(), order, self.config, position, self.shared.free.clone())
    }

    /// Like [`resume_with_buffers`](Self::resume_with_buffers), delivering
    /// exactly `batches` (sample indices each; a batch may be shorter than
    /// the configured size, or empty): an epoch resumed at another world
    /// size ([`crate::elastic`]), where ranks take the same number of steps
    /// with shares that differ by a sample.
    pub fn of_batches(
        dataset: Arc<dyn Dataset>,
        batches: Vec<Vec<usize>>,
        config: LoaderConfig,
        position: usize,
        buffers: Recycler,
    ) -> Loader {
        let cuts = std::iter::once(0)
            .chain(batches.iter().scan(0, |at, b| {
                *at += b.len();
                Some(*at)
            }))
            .collect();
        Self::start_cut(dataset, batches.concat(), cuts, config, (position, 0), buffers)
    }

    fn start(
        dataset: Arc<dyn Dataset>,
        order: Vec<usize>,
        config: LoaderConfig,
        position: usize,
        free: Recycler,
    ) -> Loader {
        Self::start_behind(dataset, order, config, (position, 0), free)
    }

    /// [`start`](Self::start) behind a loader that has `leader_owes`
    /// batches left to deliver.
    fn start_behind(
        dataset: Arc<dyn Dataset>,
        order: Vec<usize>,
        config: LoaderConfig,
        (position, leader_owes): (usize, usize),
        free: Recycler,
    ) -> Loader {
        let batch = config.batch.max(1);
        let order = config.delivered(order);
        let cuts = (0..order.len().div_ceil(batch)).map(|k| k * batch).chain([order.len()]).collect();
        Self::start_cut(dataset, order, cuts, config, (position, leader_owes), free)
    }

    /// Batch `k` is `order[cuts[k]..cuts[k + 1]]`; the first batch taken is
    /// `position`, behind a loader that owes `leader_owes` batches.
    fn start_cut(
        dataset: Arc<dyn Dataset>,
        order: Vec<usize>,
        cuts: Vec<usize>,
        config: LoaderConfig,
        (position, leader_owes): (usize, usize),
        free: Recycler,
    ) -> Loader {
        let order = Arc::new(order);
        let cuts: Arc<[usize]> = cuts.into();
        let batches = cuts.len().saturating_sub(1);
        let prefetch = config.prefetch.max(1);
        let record_room = largest_batch_of_records(&*dataset, config.batch.max(1));
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next_to_start: position,
                next_to_deliver: position,
                ready: BTreeMap::new(),
                max_ready: 0,
                leader_owes,
                unbuffered: BTreeSet::new(),
                consumer_waiting: false,
            }),
            free,
            window_opened: Condvar::new(),
            batch_ready: Condvar::new(),
            stop: AtomicBool::new(false),
            bytes: AtomicU64::new(0),
            busy_nanos: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            follower: Mutex::new(None),
        });
        let workers = (0..config.workers.max(1))
            .map(|_| {
                let (shared, dataset, order, cuts) = (shared.clone(), dataset.clone(), order.clone(), cuts.clone());
                let checks = Checks { skip_corrupt: config.skip_corrupt, check_finite: config.check_finite };
                let batch = config.batch.max(1);
                std::thread::spawn(move || {
                    crate::background::mark_this_thread();
                    work(&shared, &*dataset, (&order, &cuts), (batch, prefetch), checks, record_room)
                })
            })
            .collect();
        Loader {
            shared,
            workers,
            batches,
            samples: 0,
            wait: Duration::ZERO,
            started: Instant::now(),
            finished: None,
            clock_waits: false,
            dataset,
            config,
        }
    }

    /// Number of batches in the epoch.
    pub fn batches(&self) -> usize {
        self.batches
    }

    /// The next batch this loader will deliver: save it with the epoch to
    /// resume there.
    pub fn position(&self) -> usize {
        lock(&self.shared.state).next_to_deliver
    }

    /// Give a consumed batch's buffers back for reuse.
    pub fn recycle(&self, batch: Batch) {
        self.shared.free.recycle(batch);
    }

    /// A handle that gives batches back to this loader's buffers, and to
    /// those of the epochs [`next_epoch`](Self::next_epoch) starts from it.
    pub fn recycler(&self) -> Recycler {
        self.shared.free.clone()
    }

    /// What the loader did so far.
    pub fn metrics(&self) -> Metrics {
        Metrics {
            samples: self.samples,
            bytes: self.shared.bytes.load(Ordering::Relaxed),
            consumer_wait: self.wait,
            worker_busy: Duration::from_nanos(self.shared.busy_nanos.load(Ordering::Relaxed)),
            max_ready: lock(&self.shared.state).max_ready,
            skipped: self.shared.skipped.load(Ordering::Relaxed),
            elapsed: self.finished.unwrap_or_else(|| self.started.elapsed()),
        }
    }
}

impl Iterator for Loader {
    type Item = Result<Batch, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        let started = Instant::now();
        if std::mem::take(&mut self.clock_waits) {
            self.started = started;
        }
        let mut state = lock(&self.shared.state);
        if state.next_to_deliver >= self.batches {
            return None;
        }
        loop {
            let number = state.next_to_deliver;
            if let Some(item) = state.ready.remove(&number) {
                state.next_to_deliver += 1;
                state.consumer_waiting = false;
                drop(state);
                // One batch taken opens one slot of the window: one worker,
                // of this loader or of the next epoch's.
                self.shared.window_opened.notify_one();
                if let Some(follower) = lock(&self.shared.follower).as_ref() {
                    follower.leader_delivered(false);
                }
                // The next batch's worker no longer waits for a buffer.
                self.shared.free.wake();
                self.wait += started.elapsed();
                if let Ok(batch) = &item {
                    self.samples += batch.indices.len() as u64;
                }
                if number + 1 == self.batches {
                    self.finished = Some(self.started.elapsed());
                    tracing::info!("loader epoch done: {}", self.metrics().summary());
                }
                return Some(item);
            }
            if !state.consumer_waiting {
                // The batch's worker, if it waits for a buffer, makes one
                // now (tell it without the state lock: workers take the
                // free list's lock, then the state's).
                state.consumer_waiting = true;
                drop(state);
                self.shared.free.wake();
                state = lock(&self.shared.state);
                continue;
            }
            state = self.shared.batch_ready.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Loader {
    fn stop(&mut self) {
        // What this loader still owed the next epoch's window is free now.
        if let Some(follower) = lock(&self.shared.follower).take() {
            follower.leader_delivered(true);
        }
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            // Under the lock, so no worker is between its check and its wait.
            let _state = lock(&self.shared.state);
            self.shared.window_opened.notify_all();
        }
        self.shared.free.wake();
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
        // Batches decoded but not delivered give their buffers back, for the
        // next loader on them (the next epoch, a Python `close` then a new
        // iteration, a restart mid-epoch) instead of to the allocator.
        let ready = std::mem::take(&mut lock(&self.shared.state).ready);
        for batch in ready.into_values().filter_map(Result::ok) {
            self.shared.free.recycle(batch);
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One sample read by `read`, with a panic turned into
/// [`DatasetError::WorkerPanicked`]: a worker that died would leave its
/// batch undelivered and the consumer waiting for it forever.
fn catching_panics(index: usize, read: impl FnOnce() -> Result<u64, DatasetError>) -> Result<u64, DatasetError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        Err(DatasetError::WorkerPanicked { index, message })
    })
}

/// `dataset.read_ragged`, panics caught; whatever a panicking read
/// appended to `y` is not a target and is cut off.
fn read_catching_panics(
    dataset: &dyn Dataset,
    index: usize,
    x: &mut [f32],
    y: &mut Vec<f32>,
) -> Result<u64, DatasetError> {
    let start = y.len();
    let read = catching_panics(index, || dataset.read_ragged(index, x, &mut *y));
    if matches!(read, Err(DatasetError::WorkerPanicked { .. })) {
        y.truncate(start);
    }
    read
}

/// What a worker checks, and what it does with a sample that fails.
#[derive(Clone, Copy)]
struct Checks {
    skip_corrupt: bool,
    check_finite: bool,
}

/// The bytes of the largest batch of `batch` records `dataset` can make
/// (its `batch` longest), when it knows every record's length: every batch
/// buffer is made that large once, so a buffer recycled into a batch of
/// longer records never grows, moving its pages (UNet3D's samples are
/// 50-300 MB, its batches 0.5-1.6 GB).
pub(crate) fn largest_batch_of_records(dataset: &dyn Dataset, batch: usize) -> Option<usize> {
    if !dataset.holds_records() {
        return None;
    }
    let mut lengths: Vec<usize> = (0..dataset.len()).map(|index| dataset.record_len(index)).collect::<Option<_>>()?;
    if lengths.len() > batch {
        lengths.select_nth_unstable_by(batch - 1, |a, b| b.cmp(a));
        lengths.truncate(batch);
    }
    Some(lengths.iter().sum())
}

/// Read sample `index` into `x` and append its target to `y`, then (if
/// asked) check both for values that are not finite.
fn read_checked(
    dataset: &dyn Dataset,
    index: usize,
    x: &mut [f32],
    y: &mut Vec<f32>,
    check_finite: bool,
) -> Result<u64, DatasetError> {
    let target_start = y.len();
    let bytes = read_catching_panics(dataset, index, x, y)?;
    if check_finite {
        for (part, values) in [("input", &x[..]), ("target", &y[target_start..])] {
            if let Some((position, value)) = crate::finite::first_non_finite(values) {
                return Err(DatasetError::NonFinite { sample: dataset.locate(index), part, position, value });
            }
        }
    }
    Ok(bytes)
}

fn work(
    shared: &Shared,
    dataset: &dyn Dataset,
    (order, cuts): (&[usize], &[usize]),
    (batch, prefetch): (usize, usize),
    Checks { skip_corrupt, check_finite }: Checks,
    record_room: Option<usize>,
) {
    let x_len = dataset.x_len();
    let records = dataset.holds_records();
    let batches = cuts.len().saturating_sub(1);
    loop {
        // Take the next batch number once it is within the prefetch window.
        let (number, mut buffers) = {
            let mut state = lock(&shared.state);
            loop {
                if shared.stop.load(Ordering::SeqCst) || state.next_to_start >= batches {
                    return;
                }
                if state.next_to_start + state.leader_owes < state.next_to_deliver + prefetch {
                    break;
                }
                state = shared.window_opened.wait(state).unwrap_or_else(|p| p.into_inner());
            }
            let number = state.next_to_start;
            state.next_to_start += 1;
            // Only a bounded recycler's workers wait for buffers, in the
            // order of their batches; others take one or make one.
            let bounded = shared.free.bounded();
            if bounded {
                state.unbuffered.insert(number);
            }
            drop(state);
            let buffers = shared.free.take_or_wait(|| shared.turn(number));
            if bounded {
                lock(&shared.state).unbuffered.remove(&number);
                // The next batch waiting for a buffer may take one now.
                shared.free.wake();
            }
            if shared.stop.load(Ordering::SeqCst) {
                if let Some(buffers) = buffers {
                    shared.free.recycle(buffers);
                }
                return;
            }
            (number, buffers)
        };
        let started = Instant::now();
        let indices: Vec<usize> = order[cuts[number]..cuts[number + 1]].to_vec();
        // Room for a full batch from the start: a buffer first used for a
        // short last batch keeps its place when it is reused for a full one.
        let mut out = buffers.take().unwrap_or_else(|| Batch {
            number,
            indices: Vec::new(),
            x: {
                let mut x = Vec::new();
                crate::buffer::reserve(&mut x, batch * x_len);
                x
            },
            y: Vec::new(),
            y_offsets: Vec::new(),
            records: Vec::new(),
            record_offsets: Vec::new(),
        });
        out.number = number;
        out.x.resize(indices.len() * x_len, 0.0);
        out.y.clear();
        out.y_offsets.clear();
        out.y_offsets.push(0);
        out.records.clear();
        out.record_offsets.clear();
        out.record_offsets.push(0);
        if let Some(bytes) = record_room {
            crate::buffer::reserve(&mut out.records, bytes);
        }
        let mut result = Ok(());
        let mut kept = Vec::with_capacity(indices.len());
        for &index in &indices {
            let k = kept.len();
            let read = if records {
                catching_panics(index, || dataset.read_record(index, &mut out.records))
            } else {
                let x = &mut out.x[k * x_len..(k + 1) * x_len];
                read_checked(dataset, index, x, &mut out.y, check_finite)
            };
            match read {
                Ok(bytes) => {
                    shared.bytes.fetch_add(bytes, Ordering::Relaxed);
                    kept.push(index);
                    out.y_offsets.push(out.y.len());
                    out.record_offsets.push(out.records.len());
                }
                Err(e) if skip_corrupt && !matches!(e, DatasetError::WorkerPanicked { .. }) => {
                    // Whatever a failed read appended is not a target or a record.
                    out.y.truncate(out.y_offsets.last().copied().unwrap_or(0));
                    out.records.truncate(out.record_offsets.last().copied().unwrap_or(0));
                    shared.skipped.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!("skipping sample {index}: {e}");
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        out.x.truncate(kept.len() * x_len);
        let indices = kept;
        out.indices = indices;
        shared.busy_nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let mut state = lock(&shared.state);
        state.ready.insert(number, result.map(|()| out));
        state.max_ready = state.max_ready.max(state.ready.len());
        drop(state);
        shared.batch_ready.notify_one();
    }
}
