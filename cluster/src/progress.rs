//! Progress across ranks: workers bump atomic counters (never blocking), a
//! reporter thread on each rank ships them to rank 0, and rank 0 draws one
//! `indicatif` bar for the whole job, or logs a line every few seconds when
//! stderr is not a terminal (batch jobs).
//!
//! The reporter communicates on its own duplicate of the world communicator,
//! so its messages never mix with the application's. That needs
//! `MPI_THREAD_MULTIPLE`; when MPI grants less, the bar shows rank 0's own
//! counters and the totals are gathered in [`Progress::finish`].

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::World;

const TAG: i32 = 0x5348; // "SH"
const SEND_INTERVAL: Duration = Duration::from_millis(250);
const DRAW_INTERVAL: Duration = Duration::from_millis(100);
const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// How often rank 0 looks for the other ranks' last counts once it is
/// finishing: waiting a whole draw interval there added 0.1-0.2 s to every
/// job's end.
const FINISH_POLL: Duration = Duration::from_millis(1);

/// Counters a rank's workers bump as they go.
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes done.
    pub bytes: AtomicU64,
    /// Items (files, samples) done.
    pub items: AtomicU64,
}

impl Counters {
    /// Record `bytes` more bytes.
    pub fn add_bytes(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Record one more item.
    pub fn add_item(&self) {
        self.items.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> RankCounters {
        RankCounters { bytes: self.bytes.load(Ordering::Relaxed), items: self.items.load(Ordering::Relaxed) }
    }
}

/// One rank's final counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankCounters {
    /// Bytes done.
    pub bytes: u64,
    /// Items done.
    pub items: u64,
}

/// A job-wide progress display. Every rank creates one and every rank calls
/// [`finish`](Self::finish).
pub struct Progress {
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    reporter: Option<JoinHandle<Vec<RankCounters>>>,
    fallback: Option<Fallback>,
    rank: usize,
}

/// Rank 0's local-only display when MPI lacks thread support.
struct Fallback {
    comm: SimpleCommunicator,
}

impl Progress {
    /// Start the display for a job of `total_bytes` and `total_items`,
    /// labelled `label` (for example `staging`).
    pub fn start(world: &World, label: &str, total_bytes: u64, total_items: u64) -> Progress {
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let rank = world.rank();
        let display = Display::new(rank, label, total_bytes, total_items);
        let Some(comm) = world.thread_comm() else {
            let comm = world.comm().duplicate();
            return Progress { counters, stop, reporter: None, fallback: Some(Fallback { comm }), rank };
        };
        let size = world.size();
        let (c, s) = (counters.clone(), stop.clone());
        let reporter = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let comm = comm;
                if rank == 0 {
                    gather_and_draw(comm.comm(), size, &c, &s, display)
                } else {
                    send_until_stopped(comm.comm(), &c, &s)
                }
            })
            .ok();
        Progress { counters, stop, reporter, fallback: None, rank }
    }

    /// The counters this rank's workers bump; clone the `Arc` into threads.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Stop reporting. On rank 0 returns every rank's final counts (indexed
    /// by rank); elsewhere, this rank's alone. Collective: call on every rank.
    pub fn finish(mut self) -> Vec<RankCounters> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Vec<RankCounters> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.reporter.take() {
            handle.thread().unpark();
            return handle.join().unwrap_or_else(|_| vec![self.counters.snapshot()]);
        }
        if let Some(fallback) = self.fallback.take() {
            let mine = self.counters.snapshot();
            let root = fallback.comm.process_at_rank(0);
            let packed = [mine.bytes, mine.items];
            if self.rank == 0 {
                let mut all = vec![0u64; 2 * fallback.comm.size() as usize];
                root.gather_into_root(&packed[..], &mut all[..]);
                return all.chunks_exact(2).map(|c| RankCounters { bytes: c[0], items: c[1] }).collect();
            }
            root.gather_into(&packed[..]);
        }
        vec![self.counters.snapshot()]
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.reporter.is_some() || self.fallback.is_some() {
            let _ = self.stop_and_join();
        }
    }
}

fn send_until_stopped(comm: &SimpleCommunicator, counters: &Counters, stop: &AtomicBool) -> Vec<RankCounters> {
    let root = comm.process_at_rank(0);
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let now = counters.snapshot();
        root.send_with_tag(&[now.bytes, now.items, u64::from(stopping)][..], TAG);
        if stopping {
            return vec![now];
        }
        std::thread::park_timeout(SEND_INTERVAL);
    }
}

fn gather_and_draw(
    comm: &SimpleCommunicator,
    size: usize,
    counters: &Counters,
    stop: &AtomicBool,
    mut display: Display,
) -> Vec<RankCounters> {
    let mut ranks = vec![RankCounters::default(); size];
    let mut done = vec![false; size];
    done[0] = true;
    loop {
        while let Some((message, status)) = comm.any_process().immediate_matched_probe_with_tag(TAG) {
            let mut values = [0u64; 3];
            message.matched_receive_into(&mut values[..]);
            let source = status.source_rank() as usize;
            if let Some(slot) = ranks.get_mut(source) {
                *slot = RankCounters { bytes: values[0], items: values[1] };
                done[source] |= values[2] == 1;
            }
        }
        let stopping = stop.load(Ordering::Relaxed);
        ranks[0] = counters.snapshot();
        display.update(&ranks);
        if stopping && done.iter().all(|&d| d) {
            display.finish(&ranks);
            return ranks;
        }
        std::thread::park_timeout(if stopping { FINISH_POLL } else { DRAW_INTERVAL });
    }
}

/// Rank 0's bar, or periodic log lines when stderr is not a terminal.
struct Display {
    bar: Option<ProgressBar>,
    label: String,
    total_bytes: u64,
    total_items: u64,
    started: Instant,
    last_log: Instant,
}

impl Display {
    fn new(rank: usize, label: &str, total_bytes: u64, total_items: u64) -> Display {
        let bar = (rank == 0 && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr_with_hz(10));
            let style = ProgressStyle::with_template(
                "{msg} [{elapsed_precise}] {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
            );
            if let Ok(style) = style {
                bar.set_style(style);
            }
            bar
        });
        let now = Instant::now();
        Display { bar, label: label.to_owned(), total_bytes, total_items, started: now, last_log: now }
    }

    fn totals(ranks: &[RankCounters]) -> (u64, u64) {
        ranks.iter().fold((0, 0), |(b, i), r| (b + r.bytes, i + r.items))
    }

    fn update(&mut self, ranks: &[RankCounters]) {
        let (bytes, items) = Self::totals(ranks);
        match &self.bar {
            Some(bar) => {
                bar.set_position(bytes);
                bar.set_message(format!("{} {items}/{}", self.label, self.total_items));
            }
            None if self.last_log.elapsed() >= LOG_INTERVAL => {
                self.last_log = Instant::now();
                self.log(bytes, items);
            }
            None => {}
        }
    }

    fn log(&self, bytes: u64, items: u64) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-9);
        tracing::info!(
            "{}: {:.1}/{:.1} MiB, {items}/{} items, {:.1} MiB/s",
            self.label,
            bytes as f64 / 1048576.0,
            self.total_bytes as f64 / 1048576.0,
            self.total_items,
            bytes as f64 / 1048576.0 / secs
        );
    }

    fn finish(&mut self, ranks: &[RankCounters]) {
        let (bytes, items) = Self::totals(ranks);
        if let Some(bar) = self.bar.take() {
            bar.set_position(bytes);
            bar.finish();
        }
        self.log(bytes, items);
    }
}
