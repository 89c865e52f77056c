//! `stager stage`: the MPI execution of a [`Plan`].
//!
//! On every rank: T reader threads read the rank's files in chunks (hashing
//! as they read, into buffers drawn from a byte budget of `max_inflight`),
//! and one sender thread sends each chunk point-to-point to the writer rank
//! (the lowest rank) of every node that needs the file. On writer ranks a
//! receiver thread writes chunks at their offsets into temporary files,
//! checks each file's xxh3 on arrival, renames it into place and journals it.
//! Reading, sending, receiving and writing overlap.
//!
//! A failure on any rank (missing or corrupt source file, failed write)
//! prints one line naming the file and the rank, tells every writer to
//! remove its temporary files, and ends the job with `MPI_Abort`. A re-run
//! skips journaled files, so it re-reads only what was not finished.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster::progress::{Counters, Progress};
use cluster::{ThreadComm, World};
use formats::checksum::StreamingChecksum;
use formats::manifest::Manifest;
use formats::placement::{Policy, files_per_node};
use mpi::traits::*;

use crate::files::{AlignedBuffer, RateLimiter, free_bytes, is_complete, prepare_destination, read_chunks};
use crate::journal::{self, Entry, Journal};
use crate::plan::Plan;

const TAG_DATA: i32 = 10;
const TAG_ABORT: i32 = 11;
/// Bytes of the trailer after each chunk's data: file, offset, length, flags.
/// A trailer, not a header: data then starts at the (page-aligned) start of
/// the buffer, and the kernel copies aligned pages into the destination. A
/// 32-byte header made `pwrite` ~10x slower on this AMD machine (perf:
/// `copy_folio_from_iter_atomic`), as `rep movsb` is slow on misaligned sources.
const TRAILER: usize = 32;
const LAST: u64 = 1;
/// MPI counts are C ints: keep every message well under 2^31 bytes.
pub const MAX_CHUNK: usize = 1 << 30;

/// How to stage.
#[derive(Debug, Clone)]
pub struct StageConfig {
    /// Dataset root on the source file system.
    pub source: PathBuf,
    /// Node-local destination template.
    pub dest: String,
    /// What each node needs.
    pub policy: Policy,
    /// Seed of the per-node choice.
    pub seed: u64,
    /// Read threads per rank.
    pub threads: usize,
    /// Bytes per message.
    pub chunk_size: usize,
    /// Cap on a rank's bytes read but not yet sent.
    pub max_inflight: u64,
    /// Run the baseline: every node reads what it needs from the source.
    pub naive: bool,
    /// Emulated aggregate source bandwidth (bytes/s), split evenly over ranks.
    pub source_bandwidth: Option<f64>,
}

/// A failure before any data moved, agreed on by every rank.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// This rank's own problem.
    #[error("{0}")]
    Local(String),
    /// Another rank failed and said why in its own message.
    #[error("rank {0} could not start staging (see its message)")]
    Remote(usize),
}

/// What one rank did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RankStats {
    /// Bytes read from the source.
    pub read_bytes: u64,
    /// Seconds its read threads were busy (wall time of the read phase).
    pub read_secs: f64,
    /// Bytes sent to ranks on other nodes.
    pub moved_bytes: u64,
    /// Bytes written to node-local storage.
    pub written_bytes: u64,
    /// Wall time of the write phase (first to last chunk written).
    pub write_secs: f64,
    /// Seconds from start to this rank's end.
    pub total_secs: f64,
    /// Files completed on this rank's node by this rank.
    pub files_written: u64,
    /// Peak resident memory of this rank's process (VmHWM), bytes.
    pub peak_rss_bytes: u64,
}

const FIELDS: usize = 8;

/// Peak resident set size of this process, from `/proc/self/status` (0 if unknown).
fn peak_rss_bytes() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

impl RankStats {
    fn pack(&self) -> [f64; FIELDS] {
        [
            self.read_bytes as f64,
            self.read_secs,
            self.moved_bytes as f64,
            self.written_bytes as f64,
            self.write_secs,
            self.total_secs,
            self.files_written as f64,
            self.peak_rss_bytes as f64,
        ]
    }
    fn unpack(v: &[f64]) -> RankStats {
        RankStats {
            read_bytes: v[0] as u64,
            read_secs: v[1],
            moved_bytes: v[2] as u64,
            written_bytes: v[3] as u64,
            write_secs: v[4],
            total_secs: v[5],
            files_written: v[6] as u64,
            peak_rss_bytes: v[7] as u64,
        }
    }
}

/// The outcome on rank 0: every rank's stats and the plan's figures.
#[derive(Debug, Clone)]
pub struct StageOutcome {
    /// Per rank, indexed by rank (only this rank's on ranks other than 0).
    pub ranks: Vec<RankStats>,
    /// Files some node still needed when this run started.
    pub files_needed: usize,
    /// Bytes of those distinct files.
    pub unique_bytes: u64,
    /// Files skipped because the journal had them.
    pub files_skipped: usize,
}

/// Stage `manifest` as configured. Returns `Err` (on every rank alike) for
/// problems found before data moves; failures while moving end the job.
pub fn stage(world: &World, manifest: &Manifest, config: &StageConfig) -> Result<StageOutcome, StageError> {
    let started = Instant::now();
    let t = *world.topology();
    let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
    let prepared = (|| -> Result<_, String> {
        if config.chunk_size == 0 || config.chunk_size > MAX_CHUNK {
            return Err(format!("--chunk-size must be between 1 byte and {MAX_CHUNK} bytes"));
        }
        let dest = cluster::paths::expand(&config.dest, &t.path_vars()).map_err(|e| e.to_string())?;
        let needs = files_per_node(&sizes, t.nodes, config.policy, config.seed).map_err(|e| e.to_string())?;
        Ok((dest, needs))
    })();
    let (dest, needs) = agree(world, prepared)?;

    // Writers (and every rank in the naive copy) look at the journal.
    let is_writer = t.local_rank == 0;
    let mut remaining_mask = vec![0u8; sizes.len()];
    let local = (|| -> Result<(), String> {
        if is_writer {
            fs::create_dir_all(&dest).map_err(|e| format!("creating {}: {e}", dest.display()))?;
            journal::clear_temp(&dest).map_err(|e| format!("clearing {}: {e}", journal::temp_dir(&dest).display()))?;
            let done = journal::load(&dest).map_err(|e| format!("reading the journal in {}: {e}", dest.display()))?;
            let mut needed_bytes = 0u64;
            for &f in &needs[t.node] {
                let entry = &manifest.files[f];
                let complete =
                    done.get(&entry.path) == Some(&entry.xxh3) && is_complete(&dest.join(&entry.path), entry.bytes);
                if !complete {
                    remaining_mask[f] = 1;
                    needed_bytes += entry.bytes;
                }
            }
            let free = free_bytes(&dest).map_err(|e| format!("checking free space of {}: {e}", dest.display()))?;
            // Temporary files and final files never coexist for one file,
            // but leave 1 % for the journal and the file system's own needs.
            if needed_bytes > free.saturating_sub(free / 100) {
                return Err(format!(
                    "{} has {free} bytes free but node {} needs {needed_bytes} more bytes for {} files; nothing was copied",
                    dest.display(),
                    t.node,
                    remaining_mask.iter().filter(|&&m| m == 1).count()
                ));
            }
        }
        Ok(())
    })();
    agree(world, local)?;

    let mut all_masks = vec![0u8; sizes.len() * t.size];
    world.comm().all_gather_into(&remaining_mask[..], &mut all_masks[..]);
    let writer_of_node: Vec<usize> = (0..t.nodes).map(|n| world.ranks_of_node(n)[0]).collect();
    let remaining: Vec<Vec<usize>> = (0..t.nodes)
        .map(|n| {
            let mask = &all_masks[writer_of_node[n] * sizes.len()..(writer_of_node[n] + 1) * sizes.len()];
            needs[n].iter().copied().filter(|&f| mask[f] == 1).collect()
        })
        .collect();
    let files_skipped = needs.iter().map(Vec::len).sum::<usize>() - remaining.iter().map(Vec::len).sum::<usize>();
    let plan = Plan::build(&sizes, &remaining, world.node_of_rank()).map_err(|e| StageError::Local(e.to_string()))?;
    let files_needed = (0..sizes.len()).filter(|&f| !plan.destinations(f).is_empty()).count();
    let to_write: u64 = remaining.iter().flatten().map(|&f| sizes[f]).sum();
    let files_to_write = remaining.iter().map(Vec::len).sum::<usize>() as u64;

    let comm = world.thread_comm();
    if !config.naive && comm.is_none() {
        return Err(StageError::Local("MPI did not grant MPI_THREAD_MULTIPLE; rerun with --naive".into()));
    }
    let limiter = config.source_bandwidth.map(|rate| RateLimiter::new(rate / t.size as f64));
    let progress =
        Progress::start(world, if config.naive { "naive copy" } else { "staging" }, to_write, files_to_write);
    let ctx = Context {
        rank: t.rank,
        node: t.node,
        local_rank: t.local_rank,
        local_size: t.local_size,
        manifest,
        config,
        plan: &plan,
        dest: &dest,
        limiter: limiter.as_ref(),
        counters: progress.counters(),
        comm: comm.as_ref(),
        failing: AtomicBool::new(false),
        temp_lock: Mutex::new(()),
    };
    let mut stats = match &comm {
        Some(comm) if !config.naive => ctx.staged(comm, &remaining[t.node]),
        _ => ctx.naive(&remaining[t.node]),
    };
    progress.finish();
    world.barrier();
    stats.total_secs = started.elapsed().as_secs_f64();
    stats.peak_rss_bytes = peak_rss_bytes();

    let mine = stats.pack();
    let root = world.comm().process_at_rank(0);
    let ranks = if world.is_root() {
        let mut all = vec![0f64; FIELDS * t.size];
        root.gather_into_root(&mine[..], &mut all[..]);
        all.chunks_exact(FIELDS).map(RankStats::unpack).collect()
    } else {
        root.gather_into(&mine[..]);
        vec![stats]
    };
    Ok(StageOutcome { ranks, files_needed, unique_bytes: plan.unique_bytes(), files_skipped })
}

/// Agree across ranks on a per-rank result: every rank gets `Ok` only if
/// all did; the failing rank keeps its own message.
fn agree<T>(world: &World, result: Result<T, String>) -> Result<T, StageError> {
    let mine = if result.is_err() { world.rank() as i64 } else { i64::MAX };
    let mut first = i64::MAX;
    world.comm().all_reduce_into(&mine, &mut first, mpi::collective::SystemOperation::min());
    match result {
        Err(message) => Err(StageError::Local(message)),
        Ok(_) if first != i64::MAX => Err(StageError::Remote(first as usize)),
        Ok(value) => Ok(value),
    }
}

struct Context<'a> {
    rank: usize,
    node: usize,
    local_rank: usize,
    local_size: usize,
    manifest: &'a Manifest,
    config: &'a StageConfig,
    plan: &'a Plan,
    dest: &'a Path,
    limiter: Option<&'a RateLimiter>,
    counters: &'a Arc<Counters>,
    comm: Option<&'a ThreadComm>,
    /// Set when this rank is failing: its receiver stops creating files.
    failing: AtomicBool,
    /// Held while a chunk is written, and by a failing rank from clearing its
    /// temporary files until the end.
    temp_lock: Mutex<()>,
}

/// The in-flight buffers: at most `max_inflight / (chunk + header)` of them
/// (at least one), allocated on first use and recycled by the sender, so
/// memory stays bounded and no chunk pays for fresh pages.
struct Pool {
    free_tx: crossbeam_channel::Sender<AlignedBuffer>,
    free_rx: crossbeam_channel::Receiver<AlignedBuffer>,
    allocated: AtomicUsize,
    capacity: usize,
    buffer_len: usize,
}

impl Pool {
    fn new(max_inflight: u64, buffer_len: usize) -> Self {
        let capacity = usize::try_from(max_inflight / buffer_len as u64).unwrap_or(usize::MAX).max(1);
        let (free_tx, free_rx) = crossbeam_channel::unbounded();
        Pool { free_tx, free_rx, allocated: AtomicUsize::new(0), capacity, buffer_len }
    }

    fn take(&self) -> AlignedBuffer {
        if let Ok(buffer) = self.free_rx.try_recv() {
            return buffer;
        }
        if self.allocated.fetch_add(1, Ordering::SeqCst) < self.capacity {
            return AlignedBuffer::new(self.buffer_len);
        }
        self.allocated.fetch_sub(1, Ordering::SeqCst);
        // Every buffer is in flight: wait for the sender to return one. The
        // pool holds a sender itself, so this cannot fail.
        self.free_rx.recv().unwrap_or_else(|_| AlignedBuffer::new(self.buffer_len))
    }

    fn give(&self, buffer: AlignedBuffer) {
        let _ = self.free_tx.send(buffer);
    }
}

struct Chunk {
    file: usize,
    /// Data and trailer; only the first `len` bytes are the message.
    message: AlignedBuffer,
    len: usize,
}

impl Context<'_> {
    /// Report a failure of this rank: print it first (the job may be torn
    /// down at any moment after), tell every writer to drop its temporary
    /// files, give them a moment, then end the job.
    fn fail(&self, message: String) -> ! {
        self.failing.store(true, Ordering::SeqCst);
        eprintln!("error: rank {} (node {}): {message}", self.rank, self.node);
        // Clear our own temporary files first (other ranks may end the job
        // as soon as they hear of the failure), holding the temp lock so the
        // receiver creates none afterwards.
        let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        let _ = journal::clear_temp(self.dest);
        if let Some(comm) = self.comm {
            for node in 0..self.plan.nodes() {
                match self.plan.writer(node) {
                    Some(writer) if writer != self.rank => {
                        comm.comm().process_at_rank(writer as i32).send_with_tag(&[0u8; 0][..], TAG_ABORT);
                    }
                    _ => {}
                }
            }
        }
        // Give every writer time to see the notice and clean up; a writer
        // that sees it ends the job itself, usually well before this.
        std::thread::sleep(Duration::from_secs(2));
        self.abort()
    }

    /// Another rank failed: remove this node's temporary files, end the job.
    fn stop_for(&self, failed_rank: i32) -> ! {
        let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        let _ = journal::clear_temp(self.dest);
        eprintln!(
            "error: rank {} (node {}): stopping because rank {failed_rank} failed; temporary files removed",
            self.rank, self.node
        );
        self.abort()
    }

    /// End every rank of the job.
    fn abort(&self) -> ! {
        match self.comm {
            Some(comm) => comm.comm().abort(1),
            // Without a shared communicator, mpirun ends the job when a rank
            // exits without finalising MPI.
            None => std::process::exit(1),
        }
    }

    fn rank_label(&self) -> String {
        format!("rank {}", self.rank)
    }

    /// The baseline: this node's ranks split its files and copy them straight from the source.
    fn naive(&self, node_files: &[usize]) -> RankStats {
        let mine: Vec<usize> = node_files.iter().copied().skip(self.local_rank).step_by(self.local_size).collect();
        let next = AtomicUsize::new(0);
        let stats = Mutex::new(RankStats::default());
        let name = format!("journal.r{}.jsonl", self.rank);
        let journal = match Journal::open(self.dest, &name) {
            Ok(j) => Mutex::new(j),
            Err(e) => self.fail(format!("opening the journal in {}: {e}", self.dest.display())),
        };
        let begin = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..self.config.threads.max(1) {
                s.spawn(|| {
                    let mut buffer = Vec::new();
                    while let Some(&f) = mine.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if let Err(message) = self.copy_directly(f, &journal, &mut buffer) {
                            self.fail(message);
                        }
                        let mut st = stats.lock().unwrap_or_else(|p| p.into_inner());
                        st.read_bytes += self.manifest.files[f].bytes;
                        st.written_bytes += self.manifest.files[f].bytes;
                        st.files_written += 1;
                    }
                });
            }
        });
        let mut st = stats.into_inner().unwrap_or_else(|p| p.into_inner());
        st.read_secs = begin.elapsed().as_secs_f64();
        st.write_secs = st.read_secs;
        st
    }

    fn copy_directly(&self, f: usize, journal: &Mutex<Journal>, buffer: &mut Vec<u8>) -> Result<(), String> {
        let entry = &self.manifest.files[f];
        let source = self.config.source.join(&entry.path);
        let temp = journal::temp_dir(self.dest).join(format!("{f}.r{}.part", self.rank));
        let fail = |what: &str, e: io::Error| format!("{}: {what} {}: {e}", self.rank_label(), entry.path);
        fs::create_dir_all(journal::temp_dir(self.dest)).map_err(|e| fail("creating temp dir for", e))?;
        let out = File::create(&temp).map_err(|e| fail("creating temp file for", e))?;
        let (bytes, sum) = read_chunks(&source, self.config.chunk_size, self.limiter, buffer, |offset, data| {
            out.write_all_at(data, offset)?;
            self.counters.add_bytes(data.len() as u64);
            Ok(())
        })
        .map_err(|e| fail("copying", e))?;
        if bytes != entry.bytes || sum != entry.xxh3 {
            let _ = fs::remove_file(&temp);
            return Err(format!(
                "{}: source file {} has {bytes} bytes and xxh3 {sum}, the manifest says {} bytes and {}",
                self.rank_label(),
                source.display(),
                entry.bytes,
                entry.xxh3
            ));
        }
        out.sync_all().map_err(|e| fail("syncing", e))?;
        self.finish_file(&temp, f, journal)?;
        self.counters.add_item();
        Ok(())
    }

    /// Rename a checked temporary file into place and journal it.
    fn finish_file(&self, temp: &Path, f: usize, journal: &Mutex<Journal>) -> Result<(), String> {
        let entry = &self.manifest.files[f];
        let target = prepare_destination(self.dest, &entry.path)
            .map_err(|e| format!("{}: placing {}: {e}", self.rank_label(), entry.path))?;
        fs::rename(temp, &target)
            .map_err(|e| format!("{}: renaming into {}: {e}", self.rank_label(), target.display()))?;
        journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .append(&Entry { path: entry.path.clone(), xxh3: entry.xxh3 })
            .map_err(|e| format!("{}: journaling {}: {e}", self.rank_label(), entry.path))
    }

    /// The stager proper: read once, send to every node that needs it.
    fn staged(&self, comm: &ThreadComm, node_files: &[usize]) -> RankStats {
        let rank = self.rank;
        let reads = self.plan.reads(rank);
        let budget = Pool::new(self.config.max_inflight, TRAILER + self.config.chunk_size);
        let (tx, rx) = crossbeam_channel::unbounded::<Chunk>();
        let is_writer = self.plan.writer(self.plan.node_of(rank)) == Some(rank);
        let next = AtomicUsize::new(0);
        let read_stats = Mutex::new((0u64, 0f64));
        let mut stats = RankStats::default();
        let receives = is_writer && !node_files.is_empty();
        let (local_tx, local_rx) = crossbeam_channel::unbounded::<Chunk>();
        std::thread::scope(|s| {
            let (rx_ref, budget_ref, local_rx) = (&rx, &budget, &local_rx);
            let receiver = receives.then(|| s.spawn(move || self.receive(comm, node_files, local_rx, budget_ref)));
            let sender = s.spawn(move || {
                let moved = self.send(comm, rx_ref, budget_ref, receives.then_some(&local_tx));
                drop(local_tx);
                moved
            });
            let (next, budget, read_stats, reads) = (&next, &budget, &read_stats, &reads);
            let readers: Vec<_> = (0..self.config.threads.max(1))
                .map(|_| {
                    let tx = tx.clone();
                    s.spawn(move || {
                        let begin = Instant::now();
                        let mut bytes = 0u64;
                        while let Some(&f) = reads.get(next.fetch_add(1, Ordering::Relaxed)) {
                            bytes += self.read_file(f, &tx, budget);
                        }
                        let mut st = read_stats.lock().unwrap_or_else(|p| p.into_inner());
                        st.0 += bytes;
                        st.1 = st.1.max(begin.elapsed().as_secs_f64());
                    })
                })
                .collect();
            drop(tx);
            for r in readers {
                let _ = r.join();
            }
            stats.moved_bytes = sender.join().unwrap_or(0);
            if let Some(receiver) = receiver {
                let (written, secs, files) = receiver.join().unwrap_or((0, 0.0, 0));
                stats.written_bytes = written;
                stats.write_secs = secs;
                stats.files_written = files;
            }
        });
        let (read_bytes, read_secs) = read_stats.into_inner().unwrap_or_else(|p| p.into_inner());
        stats.read_bytes = read_bytes;
        stats.read_secs = read_secs;
        stats
    }

    /// Read file `f` into budgeted chunks for the sender; returns bytes read.
    fn read_file(&self, f: usize, tx: &crossbeam_channel::Sender<Chunk>, pool: &Pool) -> u64 {
        let entry = &self.manifest.files[f];
        let path = self.config.source.join(&entry.path);
        let fail = |e: io::Error| -> ! {
            self.fail(format!("{}: reading source file {}: {e}", self.rank_label(), path.display()))
        };
        let mut file = File::open(&path).unwrap_or_else(|e| fail(e));
        let mut hash = StreamingChecksum::new();
        let chunk = self.config.chunk_size;
        loop {
            let remaining = entry.bytes.saturating_sub(hash.bytes());
            let want = (remaining as usize).min(chunk);
            let mut buffer = pool.take();
            let message = buffer.as_mut_slice();
            let mut filled = 0;
            while filled < want {
                match file.read(&mut message[filled..want]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => fail(e),
                }
            }
            if let Some(l) = self.limiter {
                l.acquire(filled as u64);
            }
            let offset = hash.bytes();
            hash.update(&message[..filled]);
            let at_end = hash.bytes() >= entry.bytes;
            let last = if at_end || filled < want {
                // Check the whole file before its last chunk leaves this rank.
                let mut probe = [0u8; 1];
                let longer = matches!(file.read(&mut probe), Ok(n) if n > 0);
                if longer || hash.bytes() != entry.bytes || hash.finish() != entry.xxh3 {
                    self.fail(format!(
                        "{}: source file {} differs from the manifest (size or xxh3 {} != {})",
                        self.rank_label(),
                        path.display(),
                        if longer { "longer".to_owned() } else { hash.finish().to_string() },
                        entry.xxh3
                    ));
                }
                true
            } else {
                false
            };
            for (i, v) in [f as u64, offset, filled as u64, if last { LAST } else { 0 }].iter().enumerate() {
                message[filled + i * 8..filled + (i + 1) * 8].copy_from_slice(&v.to_le_bytes());
            }
            if tx.send(Chunk { file: f, message: buffer, len: filled + TRAILER }).is_err() {
                self.fail(format!("{}: the sender thread stopped", self.rank_label()));
            }
            if last {
                return hash.bytes();
            }
        }
    }

    /// Send each chunk to the writer of every destination node; a chunk for
    /// this rank's own node goes to its receiver in-process, not through MPI.
    /// Returns bytes sent off-node.
    fn send(
        &self,
        comm: &ThreadComm,
        rx: &crossbeam_channel::Receiver<Chunk>,
        pool: &Pool,
        local: Option<&crossbeam_channel::Sender<Chunk>>,
    ) -> u64 {
        let mut moved = 0u64;
        for chunk in rx {
            let mut deliver_here = false;
            for &node in self.plan.destinations(chunk.file) {
                let Some(writer) = self.plan.writer(node) else { continue };
                if writer == self.rank && local.is_some() {
                    deliver_here = true;
                    continue;
                }
                let target = comm.comm().process_at_rank(writer as i32);
                mpi::request::scope(|scope| {
                    let request =
                        target.immediate_send_with_tag(scope, &chunk.message.as_slice()[..chunk.len], TAG_DATA);
                    wait_politely(request);
                });
                if node != self.node {
                    moved += (chunk.len - TRAILER) as u64;
                }
            }
            match local {
                // The receiver returns the buffer to the pool once written.
                Some(local) if deliver_here => {
                    if let Err(returned) = local.send(chunk) {
                        pool.give(returned.0.message);
                    }
                }
                _ => pool.give(chunk.message),
            }
        }
        moved
    }

    /// Receive this node's files, from MPI and from this rank's own readers;
    /// returns (bytes written, seconds, files).
    fn receive(
        &self,
        comm: &ThreadComm,
        node_files: &[usize],
        local: &crossbeam_channel::Receiver<Chunk>,
        pool: &Pool,
    ) -> (u64, f64, u64) {
        let journal = match Journal::open(self.dest, "journal.jsonl") {
            Ok(j) => Mutex::new(j),
            Err(e) => self.fail(format!("{}: opening the journal in {}: {e}", self.rank_label(), self.dest.display())),
        };
        let temp_dir = journal::temp_dir(self.dest);
        if let Err(e) = fs::create_dir_all(&temp_dir) {
            self.fail(format!("{}: creating {}: {e}", self.rank_label(), temp_dir.display()));
        }
        let mut writer = NodeWriter {
            ctx: self,
            journal,
            temp_dir,
            open: HashMap::new(),
            expected: node_files.iter().copied().collect(),
            done: 0,
            written: 0,
            first_write: None,
        };
        let mut buffer = AlignedBuffer::new(0);
        let mut idle = 0u32;
        while writer.done < node_files.len() {
            // A failure notice jumps the queue of data waiting to be written.
            if let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_ABORT) {
                message.matched_receive_into(&mut [0u8; 0][..]);
                self.stop_for(status.source_rank());
            }
            if let Ok(chunk) = local.try_recv() {
                let handled = writer.chunk(&chunk.message.as_slice()[..chunk.len], self.rank);
                pool.give(chunk.message);
                if let Err(message) = handled {
                    self.fail(message);
                }
                idle = 0;
                continue;
            }
            let Some((message, status)) = comm.comm().any_process().immediate_matched_probe() else {
                // Nothing yet: back off gently (spin, then sleep up to 200 us).
                idle = (idle + 1).min(20);
                if idle > 4 {
                    std::thread::sleep(Duration::from_micros(10 * u64::from(idle)));
                }
                continue;
            };
            idle = 0;
            if self.failing.load(Ordering::SeqCst) {
                // Another thread of this rank is ending the job; write nothing more.
                loop {
                    std::thread::park();
                }
            }
            let count = status.count(u8::equivalent_datatype()) as usize;
            if buffer.len() < count {
                buffer = AlignedBuffer::new(count.max(TRAILER + self.config.chunk_size));
            }
            mpi::request::scope(|scope| {
                wait_politely(message.immediate_matched_receive_into(scope, &mut buffer.as_mut_slice()[..count]));
            });
            if status.tag() == TAG_ABORT {
                self.stop_for(status.source_rank());
            }
            if let Err(message) = writer.chunk(&buffer.as_slice()[..count], status.source_rank() as usize) {
                self.fail(message);
            }
        }
        (writer.written, writer.first_write.map_or(0.0, |t| t.elapsed().as_secs_f64()), writer.done as u64)
    }
}

/// Wait for a request by testing it with short sleeps in between. A blocking
/// MPI wait spins (and, oversubscribed, yields in a loop), taking the CPU
/// from the threads that read and write; sleeping leaves it to them.
fn wait_politely<'a, B: ?Sized, S: mpi::request::Scope<'a>>(mut request: mpi::request::Request<'a, B, S>) {
    let mut idle = 0u64;
    loop {
        match request.test() {
            Ok(_) => return,
            Err(pending) => request = pending,
        }
        idle = (idle + 1).min(10);
        if idle > 2 {
            std::thread::sleep(Duration::from_micros(20 * idle));
        }
    }
}

/// The writing side of a node: chunks into temporary files, checked,
/// renamed into place and journaled when their last chunk arrives.
struct NodeWriter<'c, 'a> {
    ctx: &'c Context<'a>,
    journal: Mutex<Journal>,
    temp_dir: PathBuf,
    open: HashMap<usize, OpenFile>,
    expected: std::collections::HashSet<usize>,
    done: usize,
    written: u64,
    first_write: Option<Instant>,
}

struct OpenFile {
    file: File,
    temp: PathBuf,
    hash: StreamingChecksum,
}

impl NodeWriter<'_, '_> {
    /// Handle one message (data + trailer) from rank `source`. Holds the
    /// context's temp lock throughout, so a failing rank can clear the
    /// temporary files knowing none is being created.
    fn chunk(&mut self, message: &[u8], source: usize) -> Result<(), String> {
        let ctx = self.ctx;
        let _guard = ctx.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        if ctx.failing.load(Ordering::SeqCst) {
            return Ok(());
        }
        if message.len() < TRAILER {
            return Err(format!("{}: malformed message from rank {source}", ctx.rank_label()));
        }
        let (data, trailer) = message.split_at(message.len() - TRAILER);
        let field = |i: usize| u64::from_le_bytes(trailer[i * 8..(i + 1) * 8].try_into().unwrap_or([0; 8]));
        let (f, offset, len, flags) = (field(0) as usize, field(1), field(2) as usize, field(3));
        if !self.expected.contains(&f) || len != data.len() {
            return Err(format!("{}: unexpected chunk of file {f} from rank {source}", ctx.rank_label()));
        }
        let entry = &ctx.manifest.files[f];
        self.first_write.get_or_insert_with(Instant::now);
        let state = match self.open.entry(f) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let temp = self.temp_dir.join(format!("{f}.part"));
                let file = File::create(&temp)
                    .map_err(|e| format!("{}: creating {}: {e}", ctx.rank_label(), temp.display()))?;
                v.insert(OpenFile { file, temp, hash: StreamingChecksum::new() })
            }
        };
        if let Err(e) = state.file.write_all_at(data, offset) {
            return Err(format!("{}: writing {} into {}: {e}", ctx.rank_label(), entry.path, ctx.dest.display()));
        }
        state.hash.update(data);
        self.written += data.len() as u64;
        ctx.counters.add_bytes(data.len() as u64);
        if flags & LAST == 0 {
            return Ok(());
        }
        let Some(state) = self.open.remove(&f) else { return Ok(()) };
        if state.hash.bytes() != entry.bytes || state.hash.finish() != entry.xxh3 {
            return Err(format!(
                "{}: {} arrived corrupt (xxh3 {} != {})",
                ctx.rank_label(),
                entry.path,
                state.hash.finish(),
                entry.xxh3
            ));
        }
        if let Err(e) = state.file.sync_all() {
            return Err(format!("{}: syncing {}: {e}", ctx.rank_label(), entry.path));
        }
        drop(state.file);
        ctx.finish_file(&state.temp, f, &self.journal)?;
        ctx.counters.add_item();
        self.done += 1;
        Ok(())
    }
}
