//! `stager stage`: the MPI execution of a [`Plan`].
//!
//! On every rank: T reader threads read the rank's files in chunks (mapped,
//! or read into pool buffers: [`ReadMethod`]), hashing each 256 KiB piece as
//! it lands, at most `max_inflight` bytes of chunks at a time, and one
//! sender thread sends each chunk point-to-point (a head, then the bytes) to
//! the writer rank (the lowest rank) of every other node that needs the
//! file. Every rank's readers write their own node's copy of what they read
//! straight from each piece while it is in cache (all ranks of a node share
//! its destination; a rank-local hop to the writer would copy every byte
//! once more and funnel all of a node's files through one thread). On writer
//! ranks a receiver thread writes arriving chunks at their offsets into
//! temporary files, checks each file's xxh3 on arrival, renames it into
//! place and journals it. Reading, sending, receiving and writing overlap.
//! Each rank that writes keeps a journal of its own, committed in batches
//! ([`Journal`]).
//!
//! A failure on any rank (missing or corrupt source file, failed write)
//! prints one line naming the file and the rank, tells every rank that
//! writes to remove its node's temporary files, waits until each says it has (at most
//! 10 s), and ends the job with `MPI_Abort`. A re-run
//! skips journaled files, so it re-reads only what was not finished.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster::progress::{Counters, Progress};
use cluster::{ThreadComm, World};
use formats::checksum::StreamingChecksum;
use formats::manifest::Manifest;
use formats::placement::Policy;
use formats::placement_record::PlacementRecord;
use mpi::traits::*;

use crate::destination::directory::is_complete;
use crate::destination::journal::{self, Entry, Journal};
use crate::destination::lock::DestLock;
use crate::destination::part::PartFile;
use crate::destination::space::free_space;
use crate::files::{AlignedBuffer, CACHE_PIECE, RateLimiter, ReadMethod, read_chunks, read_hashing};
use crate::plan::Plan;

mod fanout;
mod gather;
mod naive;
mod pool;
mod ramp;
mod setup_error;
mod wire;
mod write_error;
mod writer;

pub use setup_error::SetupError;

/// What a caller learns while a stage runs, on each node's writer (the
/// node's lowest rank): how a staging service answers its clients before
/// the stage has finished. Every method runs on a staging thread and must
/// return quickly.
pub trait StageObserver: Sync {
    /// Whether the observer can work with the node's destination `dest`
    /// (checked before the stage writes anything for clients there, such
    /// as the placement record). An error stops the stage before data moves.
    fn check(&self, _dest: &Path) -> Result<(), SetupError> {
        Ok(())
    }
    /// The node's destination is locked: `held` (manifest indices) are in
    /// place already (the journal vouches for them), `remaining` are to be
    /// staged. An error stops the stage before data moves.
    fn opened(&self, dest: &Path, held: &[usize], remaining: &[usize]) -> Result<(), SetupError>;
    /// Manifest file `file` is checked and renamed into place on this node.
    fn placed(&self, file: usize);
    /// The stage failed on this rank with `message` (the job ends next).
    fn failed(&self, message: &str);
}

/// The order in which each rank reads its share of the files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReadOrder {
    /// Largest files first (the whole stage finishes soonest).
    #[default]
    LargestFirst,
    /// By the step at which training first reads each file, earliest
    /// first ([`formats::sampling::first_needed`]; ties by size): a service
    /// staging while training runs.
    FirstNeeded(Vec<u64>),
}

use fanout::{Chunk, pack_limit};
use gather::{LocalCopy, OpenPack, Outgoing};
use pool::Pool;
use wire::{HEAD_LEN, Head, Pack};
pub use write_error::WriteError;

const TAG_HEAD: i32 = 10;
/// The bytes of the chunk announced by the sender's last head.
const TAG_BODY: i32 = 13;
/// Whole small files, several to a message ([`wire::Pack`]).
const TAG_PACK: i32 = 14;
/// A failing rank's notice to the writers: its message, in UTF-8, so each
/// node's service can tell its clients why (cut to [`NOTICE_MAX`] bytes).
const TAG_ABORT: i32 = 11;
/// Failure notices stay under the shared-memory transport's eager limit
/// (4 KiB), so a send never waits for a rank that is not listening.
const NOTICE_MAX: usize = 2048;
/// A writer's answer to `TAG_ABORT`: its temporary files are gone.
const TAG_CLEARED: i32 = 12;
/// How long a failing rank waits for every writer to clear its temporary
/// files before it ends the job anyway (a writer that already finished
/// has none and does not answer).
const CLEAR_WAIT: Duration = Duration::from_secs(10);
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
    /// How readers read the source (the naive copy always uses `read`).
    pub read_method: ReadMethod,
    /// Re-hash journaled files instead of trusting the journal and their
    /// size: a same-size file corrupted after staging is staged again.
    pub recheck: bool,
    /// The order each rank reads its files in.
    pub order: ReadOrder,
    /// The files each node keeps, when not all that `policy` gives it: a
    /// global shuffle's shards cut to a node's capacity
    /// ([`crate::traffic::kept_shards`]). `None`: what the policy gives.
    pub kept: Option<Vec<Vec<usize>>>,
}

/// A failure before any data moved, agreed on by every rank.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// This rank's own problem.
    #[error(transparent)]
    Local(#[from] SetupError),
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
/// Every phase is collective, in this order on every rank.
pub fn stage(world: &World, manifest: &Manifest, config: &StageConfig) -> Result<StageOutcome, StageError> {
    stage_observed(world, manifest, config, None)
}

/// [`stage`], telling `observer` on each node's writer what is in place as
/// it happens; the placement record is written before data moves (and
/// again at the end), so a client can open the destination while it fills.
pub fn stage_observed(
    world: &World,
    manifest: &Manifest,
    config: &StageConfig,
    observer: Option<&dyn StageObserver>,
) -> Result<StageOutcome, StageError> {
    let started = Instant::now();
    let t = *world.topology();
    let sizes: Vec<u64> = manifest.files.iter().map(|f| f.bytes).collect();
    let (dest, needs) = agree(world, prepare(world, manifest, config))?;
    check_destinations(world, config, &dest)?;
    let (_lock, remaining_mask) = open_destination(world, manifest, config, &dest, &needs[t.node])?;
    let remaining = remaining_per_node(world, &needs, &remaining_mask);
    if let Some(observer) = observer {
        let opened = (|| -> Result<(), SetupError> {
            if t.local_rank != 0 {
                return Ok(());
            }
            let held: Vec<usize> = needs[t.node].iter().copied().filter(|&f| remaining_mask[f] == 0).collect();
            observer.check(&dest)?;
            write_record(world, manifest, config, &dest, &needs[t.node])?;
            observer.opened(&dest, &held, &remaining[t.node])
        })();
        agree(world, opened)?;
    }
    let files_skipped = needs.iter().map(Vec::len).sum::<usize>() - remaining.iter().map(Vec::len).sum::<usize>();
    let plan = Plan::build(&sizes, &remaining, world.node_of_rank()).map_err(SetupError::from)?;
    let files_needed = (0..sizes.len()).filter(|&f| !plan.destinations(f).is_empty()).count();
    let mut stats = copy(world, manifest, config, (&plan, &dest, &remaining), observer)?;
    check_written(world, manifest, &dest, &remaining, stats.files_written)?;
    agree(world, write_record(world, manifest, config, &dest, &needs[t.node]))?;
    stats.total_secs = started.elapsed().as_secs_f64();
    stats.peak_rss_bytes = cluster::memory::peak_rss_bytes();
    let ranks = gather_stats(world, stats);
    Ok(StageOutcome { ranks, files_needed, unique_bytes: plan.unique_bytes(), files_skipped })
}

/// The checks of the configuration, this node's destination and which
/// files each node needs: what every rank computes before anything moves.
fn prepare(world: &World, manifest: &Manifest, config: &StageConfig) -> Result<(PathBuf, Vec<Vec<usize>>), SetupError> {
    let t = world.topology();
    if config.chunk_size == 0 || config.chunk_size > MAX_CHUNK {
        return Err(SetupError::Refused(format!("--chunk-size must be between 1 byte and {MAX_CHUNK} bytes")));
    }
    // Where the limit cannot be read, a failing map still says ENOMEM.
    if let Some(max_maps) = crate::files::max_map_count()
        && !config.naive
    {
        crate::files::check_map_budget(config.read_method, config.chunk_size, config.max_inflight, max_maps)
            .map_err(SetupError::Refused)?;
    }
    let dest = crate::destination::node_destination(world, &config.dest)?;
    // On each node's writer only: every other rank leaves the source's
    // metadata alone (thousands of ranks resolving it would load the
    // parallel file system's metadata servers for nothing).
    if t.local_rank == 0 {
        crate::destination::directory::check_dest_outside_source(&config.source, &dest).map_err(SetupError::Refused)?;
    }
    let needs = match &config.kept {
        Some(kept) => kept.clone(),
        None => manifest.files_per_node(t.nodes, config.policy, config.seed)?,
    };
    Ok((dest, needs))
}

/// Each node's writer creates its destination; every rank of a node must
/// resolve the same directory, and no two nodes one directory.
fn check_destinations(world: &World, config: &StageConfig, dest: &Path) -> Result<(), StageError> {
    let t = world.topology();
    let is_writer = t.local_rank == 0;
    let created = (|| -> Result<[u64; 3], SetupError> {
        if !is_writer {
            return Ok([0; 3]);
        }
        fs::create_dir_all(dest).map_err(SetupError::io("creating", dest))?;
        crate::destination::directory::directory_identity(dest).map_err(SetupError::io("opening", dest))
    })();
    let identity = agree(world, created)?;
    let mut gathered = vec![0u64; 3 * t.size];
    world.comm().all_gather_into(&identity[..], &mut gathered[..]);
    let identities: Vec<[u64; 3]> = gathered.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    let shared = crate::destination::directory::nodes_sharing_a_directory(&identities, world.node_of_rank());
    // The other ranks of a node write into its directory too: it must be
    // the one the writer created (an environment variable in the template
    // could differ between a node's ranks).
    let writer_identity = identities[world.ranks_of_node(t.node)[0]];
    let same_directory = if is_writer {
        Ok(())
    } else {
        match crate::destination::directory::directory_identity(dest) {
            Ok(mine) if mine == writer_identity => Ok(()),
            Ok(_) => Err(SetupError::Refused(format!(
                "rank {} resolves --dest {} to {}, another directory than the lowest rank of its node (node {}); \
                 the ranks of a node share one destination",
                t.rank,
                config.dest,
                dest.display(),
                t.node
            ))),
            Err(source) => Err(SetupError::Io { doing: "opening its node's destination", path: dest.into(), source }),
        }
    };
    agree(world, same_directory)?;
    agree(
        world,
        match shared {
            Some((a, b)) => Err(SetupError::Refused(format!(
                "nodes {a} and {b} resolve --dest {} to the same directory {}; each node needs its own \
                 (put {{node}} in the template, e.g. /tmp/bb/node{{node}}, when nodes share a file system)",
                config.dest,
                dest.display()
            ))),
            None => Ok(()),
        },
    )
}

/// On each node's writer: take the destination's lock (held by the caller
/// until it returns, past the final barrier), clear an earlier job's
/// temporary files and placement record, and find which of the node's
/// files the journal does not vouch for (a mask over the manifest), with
/// room for them. Other ranks return an empty mask.
fn open_destination(
    world: &World,
    manifest: &Manifest,
    config: &StageConfig,
    dest: &Path,
    node_needs: &[usize],
) -> Result<(Option<DestLock>, Vec<u8>), StageError> {
    let t = world.topology();
    let mut remaining_mask = vec![0u8; manifest.files.len()];
    let local = (|| -> Result<Option<DestLock>, SetupError> {
        if t.local_rank != 0 {
            return Ok(None);
        }
        fs::create_dir_all(dest).map_err(SetupError::io("creating", dest))?;
        // Before anything in the destination changes: another job's
        // temporary files are not ours to clear.
        let lock = DestLock::acquire(dest)?;
        journal::clear_temp(dest).map_err(SetupError::io("clearing", journal::temp_dir(dest)))?;
        // Until this stage has finished, the destination claims nothing.
        PlacementRecord::remove(dest)?;
        let done = journal::load(dest).map_err(SetupError::io("reading the journal in", dest))?;
        let journaled: Vec<usize> = node_needs
            .iter()
            .copied()
            .filter(|&f| {
                let entry = &manifest.files[f];
                done.holds(dest, &entry.path, entry.xxh3, entry.bytes)
            })
            .collect();
        let mut trusted = if config.recheck { recheck(dest, manifest, &journaled, config.threads) } else { journaled };
        adopt_unjournaled(dest, manifest, node_needs, &mut trusted, config.threads)?;
        let mut needed = Vec::new();
        for &f in node_needs {
            if trusted.binary_search(&f).is_err() {
                remaining_mask[f] = 1;
                needed.push(manifest.files[f].bytes);
            }
        }
        let space = free_space(dest).map_err(SetupError::io("checking free space of", dest))?;
        space.check_fits(&needed).map_err(|e| {
            SetupError::Refused(format!("{} on node {} {e}; nothing was copied", dest.display(), t.node))
        })?;
        Ok(Some(lock))
    })();
    let lock = agree(world, local)?;
    Ok((lock, remaining_mask))
}

/// The files each node still needs: every node's writer's mask, gathered.
fn remaining_per_node(world: &World, needs: &[Vec<usize>], mask: &[u8]) -> Vec<Vec<usize>> {
    let (files, t) = (mask.len(), world.topology());
    let mut all_masks = vec![0u8; files * t.size];
    world.comm().all_gather_into(mask, &mut all_masks[..]);
    (0..t.nodes)
        .map(|n| {
            let writer = world.ranks_of_node(n)[0];
            let mask = &all_masks[writer * files..(writer + 1) * files];
            needs[n].iter().copied().filter(|&f| mask[f] == 1).collect()
        })
        .collect()
}

/// Move the remaining files as planned (the fan-out, or with `--naive` each
/// rank copying its share), with progress; every rank waits for all.
fn copy(
    world: &World,
    manifest: &Manifest,
    config: &StageConfig,
    (plan, dest, remaining): (&Plan, &Path, &[Vec<usize>]),
    observer: Option<&dyn StageObserver>,
) -> Result<RankStats, StageError> {
    let t = *world.topology();
    let sizes = |files: &[usize]| files.iter().map(|&f| manifest.files[f].bytes).sum::<u64>();
    let to_write: u64 = remaining.iter().map(|files| sizes(files)).sum();
    let files_to_write = remaining.iter().map(Vec::len).sum::<usize>() as u64;
    let comm = world.thread_comm();
    if !config.naive && comm.is_none() {
        return Err(SetupError::Refused("MPI did not grant MPI_THREAD_MULTIPLE; rerun with --naive".into()).into());
    }
    let writing_ranks: Vec<usize> = (0..t.size).filter(|&r| !remaining[world.node_of_rank()[r]].is_empty()).collect();
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
        plan,
        dest,
        limiter: limiter.as_ref(),
        counters: progress.counters(),
        comm: comm.as_ref(),
        writing_ranks: &writing_ranks,
        observer,
        failing: AtomicBool::new(false),
        notices: Mutex::new(Vec::new()),
        temp_lock: Mutex::new(()),
    };
    let stats = match &comm {
        Some(comm) if !config.naive => ctx.staged(comm, &remaining[t.node]),
        _ => ctx.naive(&remaining[t.node]),
    };
    // The writer looks at files other ranks of its node renamed into
    // place: every rank must be done before it looks.
    ctx.wait_for_all(world);
    progress.finish();
    Ok(stats)
}

/// Never report success unless what was written is the plan: the files
/// counted by every rank (`written` here) add up to the files to write, and
/// each of this node's files is in place at its size.
fn check_written(
    world: &World,
    manifest: &Manifest,
    dest: &Path,
    remaining: &[Vec<usize>],
    written: u64,
) -> Result<(), StageError> {
    let t = world.topology();
    let files_to_write = remaining.iter().map(Vec::len).sum::<usize>() as u64;
    let missing = if t.local_rank == 0 {
        remaining[t.node]
            .iter()
            .filter(|&&f| !is_complete(&dest.join(&manifest.files[f].path), manifest.files[f].bytes))
            .count() as u64
    } else {
        0
    };
    let counted = [written, missing];
    let mut totals = [0u64; 2];
    world.comm().all_reduce_into(&counted[..], &mut totals[..], mpi::collective::SystemOperation::sum());
    if totals[0] != files_to_write || totals[1] > 0 {
        let message = format!(
            "the run wrote {} of the {files_to_write} files it planned and {} planned files are not in place; nothing was reported as staged (rerun to finish)",
            totals[0], totals[1]
        );
        return Err(if world.is_root() { SetupError::Refused(message).into() } else { StageError::Remote(0) });
    }
    Ok(())
}

/// On each node's writer: the placement record of what the node now holds.
fn write_record(
    world: &World,
    manifest: &Manifest,
    config: &StageConfig,
    dest: &Path,
    node_needs: &[usize],
) -> Result<(), SetupError> {
    let t = world.topology();
    if t.local_rank != 0 {
        return Ok(());
    }
    let manifest_bytes = manifest.to_compact_json();
    let source = std::path::absolute(&config.source).map_err(SetupError::io("resolving --source", &config.source))?;
    PlacementRecord::new(
        manifest,
        &manifest_bytes,
        &source,
        (config.policy, config.seed),
        (t.nodes, t.node),
        node_needs,
    )
    .write(dest, &manifest_bytes)?;
    Ok(())
}

/// Every rank's stats on rank 0 (only its own on the others).
fn gather_stats(world: &World, stats: RankStats) -> Vec<RankStats> {
    let mine = stats.pack();
    let root = world.comm().process_at_rank(0);
    if world.is_root() {
        let mut all = vec![0f64; FIELDS * world.size()];
        root.gather_into_root(&mine[..], &mut all[..]);
        all.chunks_exact(FIELDS).map(RankStats::unpack).collect()
    } else {
        root.gather_into(&mine[..]);
        vec![stats]
    }
}

/// The files of `journaled` (sorted) whose bytes under `dest` still hash to
/// the manifest's xxh3, hashed on `threads` threads; each that does not is
/// named in a warning and left out, so it is staged again.
fn recheck(dest: &Path, manifest: &Manifest, journaled: &[usize], threads: usize) -> Vec<usize> {
    let next = AtomicUsize::new(0);
    let good = Mutex::new(Vec::with_capacity(journaled.len()));
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, journaled.len().max(1)) {
            scope.spawn(|| {
                let mut buffer = Vec::new();
                while let Some(&f) = journaled.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let entry = &manifest.files[f];
                    let path = dest.join(&entry.path);
                    match formats::checksum::hash_file(&path, &mut buffer) {
                        Ok((bytes, sum)) if bytes == entry.bytes && sum == entry.xxh3 => {
                            good.lock().unwrap_or_else(|p| p.into_inner()).push(f);
                        }
                        Ok(_) => tracing::warn!("{} differs from the manifest; staging it again", path.display()),
                        Err(e) => tracing::warn!("{}: {e}; staging it again", path.display()),
                    }
                }
            });
        }
    });
    let mut good = good.into_inner().unwrap_or_else(|p| p.into_inner());
    good.sort_unstable();
    good
}

/// Keep, instead of copying again, the files of `node_needs` that an
/// earlier run placed after its journal's last commit (a stopped service,
/// a killed job): only checked files are ever renamed to a final name, so
/// one there at its size is re-hashed against the manifest and, if it
/// matches, journaled and added to `trusted` (sorted). Reads the node's
/// own storage only.
fn adopt_unjournaled(
    dest: &Path,
    manifest: &Manifest,
    node_needs: &[usize],
    trusted: &mut Vec<usize>,
    threads: usize,
) -> Result<(), SetupError> {
    // A destination holding nothing but its state has nothing to adopt;
    // looking costs a stat per file, a second at the seeds' file counts.
    let bare = fs::read_dir(dest)
        .is_ok_and(|mut entries| entries.all(|e| e.is_ok_and(|e| e.file_name() == formats::manifest::STATE_DIR)));
    if bare {
        return Ok(());
    }
    let candidates: Vec<usize> = node_needs
        .iter()
        .copied()
        .filter(|f| trusted.binary_search(f).is_err())
        .filter(|&f| {
            let entry = &manifest.files[f];
            fs::symlink_metadata(dest.join(&entry.path)).is_ok_and(|m| m.is_file() && m.len() == entry.bytes)
        })
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    let adopted = recheck(dest, manifest, &candidates, threads);
    let journal =
        Journal::open(dest, "journal.adopted.jsonl").map_err(SetupError::io("opening the journal in", dest))?;
    for &f in &adopted {
        let entry = &manifest.files[f];
        let file = journal::FileIdentity::of(&dest.join(&entry.path)).ok();
        journal
            .record(Entry { path: entry.path.clone(), xxh3: entry.xxh3, file })
            .map_err(SetupError::io("journaling in", dest))?;
    }
    journal.commit().map_err(SetupError::io("journaling in", dest))?;
    trusted.extend(adopted);
    trusted.sort_unstable();
    Ok(())
}

/// Agree across ranks on a per-rank result: every rank gets `Ok` only if
/// all did; the lowest failing rank keeps its own message and the others
/// defer to it, so a failure every rank shares (a bad option) prints once.
fn agree<T>(world: &World, result: Result<T, SetupError>) -> Result<T, StageError> {
    let mine = if result.is_err() { world.rank() as i64 } else { i64::MAX };
    let mut first = i64::MAX;
    world.comm().all_reduce_into(&mine, &mut first, mpi::collective::SystemOperation::min());
    match result {
        Err(mine) if first == world.rank() as i64 => Err(StageError::Local(mine)),
        Err(_) => Err(StageError::Remote(first as usize)),
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
    /// The ranks that write into their node's destination in this run (all
    /// ranks of the nodes that still need files): a failing rank tells each.
    writing_ranks: &'a [usize],
    /// Told of every file this rank places, and of its failure.
    observer: Option<&'a dyn StageObserver>,
    /// Set when this rank is failing: its receiver stops creating files.
    failing: AtomicBool,
    /// Failure notices of other ranks heard by a thread of this rank other
    /// than the one failing: they count as answers to its own notice.
    notices: Mutex<Vec<usize>>,
    /// Held while a chunk is written or a temporary file created, and while
    /// a failing rank clears its temporary files.
    temp_lock: Mutex<()>,
}

/// Receive a probed message of bytes, whatever its length.
fn receive_bytes(message: mpi::point_to_point::Message, status: &mpi::point_to_point::Status) -> Vec<u8> {
    let mut bytes = vec![0u8; status.count(u8::equivalent_datatype()).max(0) as usize];
    message.matched_receive_into(&mut bytes[..]);
    bytes
}

/// Another rank's failure, as its notice told it.
struct FailureNotice {
    rank: i32,
    message: String,
}

impl Context<'_> {
    /// Report a failure of this rank: print it first (the job may be torn
    /// down at any moment after), tell every rank that writes to drop its
    /// node's temporary files, wait until they say they have (or
    /// [`CLEAR_WAIT`]), then end
    /// the job. Only the failing rank ends it: a writer that ended it on
    /// hearing the notice could kill the others before they cleaned up.
    fn fail(&self, message: String) -> ! {
        self.failing.store(true, Ordering::SeqCst);
        cluster::logging::print_error(format_args!("rank {} (node {}): {message}", self.rank, self.node));
        // Clear our own temporary files first: other ranks may end the job
        // as soon as they hear of the failure.
        self.clear_temp();
        let told: Vec<usize> = self.writing_ranks.iter().copied().filter(|&r| r != self.rank).collect();
        if let Some(comm) = self.comm {
            let notice = &message.as_bytes()[..message.len().min(NOTICE_MAX)];
            for &rank in &told {
                comm.comm().process_at_rank(rank as i32).send_with_tag(notice, TAG_ABORT);
            }
        }
        // After the notices: a service answers its clients before returning.
        if let Some(observer) = self.observer {
            observer.failed(&message);
        }
        if let Some(comm) = self.comm {
            // A rank that is failing too cleared its files before its own
            // notice, which therefore counts as its answer (it does not
            // listen any more).
            let mut waiting: std::collections::BTreeSet<usize> = told.into_iter().collect();
            let deadline = Instant::now() + CLEAR_WAIT;
            while !waiting.is_empty() && Instant::now() < deadline {
                let mut heard = false;
                for tag in [TAG_CLEARED, TAG_ABORT] {
                    if let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(tag) {
                        receive_bytes(message, &status);
                        waiting.remove(&(status.source_rank() as usize));
                        heard = true;
                    }
                }
                for rank in self.notices.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
                    waiting.remove(&rank);
                }
                if !heard {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        self.abort()
    }

    /// Fail with `message`, unless the node's temporary directory is gone
    /// because another rank of the node is failing and cleared it: then its
    /// notice is on the way, and this rank stops for it instead of
    /// reporting a missing file as a failure of its own.
    fn fail_unless_stopped(&self, temp_dir: &Path, message: String) -> ! {
        if !temp_dir.exists() {
            let deadline = Instant::now() + CLEAR_WAIT;
            while Instant::now() < deadline {
                if self.failing.load(Ordering::SeqCst) {
                    loop {
                        std::thread::park();
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        self.fail(message)
    }

    /// Park for good if another thread of this rank is ending the job: it
    /// writes nothing more.
    fn stop_if_failing(&self) {
        if self.failing.load(Ordering::SeqCst) {
            loop {
                std::thread::park();
            }
        }
    }

    /// The rank whose failure notice ([`TAG_ABORT`]) has arrived, if one
    /// has (received, so it is heard once), and its message.
    fn failure_notice(&self) -> Option<FailureNotice> {
        let comm = self.comm?;
        let (message, status) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_ABORT)?;
        let text = receive_bytes(message, &status);
        Some(FailureNotice { rank: status.source_rank(), message: String::from_utf8_lossy(&text).into_owned() })
    }

    /// Wait until every rank is done with its share, answering failure
    /// notices meanwhile: this rank has placed all it wrote, so it has no
    /// temporary files to clear and says so at once, instead of leaving
    /// the failing rank to wait [`CLEAR_WAIT`] for it. Sleeps between
    /// polls, leaving the cores to ranks still working.
    fn wait_for_all(&self, world: &World) {
        let mut request = world.comm().immediate_barrier();
        let mut sleep_us = 10;
        loop {
            match request.test() {
                Ok(_) => return,
                Err(pending) => request = pending,
            }
            if let Some(comm) = self.comm
                && let Some(failed) = self.failure_notice()
            {
                comm.comm().process_at_rank(failed.rank).send_with_tag(&[0u8; 0][..], TAG_CLEARED);
            }
            std::thread::sleep(Duration::from_micros(sleep_us));
            sleep_us = (sleep_us * 2).min(1000);
        }
    }

    /// Another rank failed: remove this node's temporary files, tell the
    /// failing rank, and wait for it to end the job.
    fn stop_for(&self, failed: FailureNotice) -> ! {
        let failed_rank = failed.rank;
        if self.failing.swap(true, Ordering::SeqCst) {
            // This rank is failing itself: its failing thread counts the
            // notice as that rank's answer, and ends the job.
            self.notices.lock().unwrap_or_else(|p| p.into_inner()).push(failed_rank as usize);
            loop {
                std::thread::park();
            }
        }
        self.clear_temp();
        if let Some(observer) = self.observer {
            observer.failed(&format!("rank {failed_rank}: {}", failed.message));
        }
        eprintln!(
            "error: rank {} (node {}): stopping because rank {failed_rank} failed; temporary files removed",
            self.rank, self.node
        );
        let Some(comm) = self.comm else { self.abort() };
        comm.comm().process_at_rank(failed_rank).send_with_tag(&[0u8; 0][..], TAG_CLEARED);
        // The failing rank ends the job within CLEAR_WAIT; should it not
        // (it died too), end it from here. Until then answer every other
        // rank that fails too (several often fail at once, over the same
        // cause): unanswered, each would wait CLEAR_WAIT for this rank.
        // Their notices also count as their answers should this rank's
        // main thread fail in turn.
        let deadline = Instant::now() + CLEAR_WAIT + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.failure_notice() {
                Some(other) => {
                    comm.comm().process_at_rank(other.rank).send_with_tag(&[0u8; 0][..], TAG_CLEARED);
                    self.notices.lock().unwrap_or_else(|p| p.into_inner()).push(other.rank as usize);
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        self.abort()
    }

    /// Remove the node's temporary files. Holds the temp lock only while
    /// removing: `failing` is already set, and the writers check it under
    /// the lock, so none creates a file afterwards. (Holding it to the end
    /// would block this rank's other failing thread before it tells
    /// anyone.)
    fn clear_temp(&self) {
        debug_assert!(self.failing.load(Ordering::SeqCst));
        let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        let _ = journal::clear_temp(self.dest);
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

    /// Start a thread named `name` in `scope` (names show in `top -H` and in
    /// profiles).
    fn spawn<'s, T: Send + 's>(
        &self,
        scope: &'s std::thread::Scope<'s, '_>,
        name: &str,
        body: impl FnOnce() -> T + Send + 's,
    ) -> std::thread::ScopedJoinHandle<'s, T> {
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn_scoped(scope, body)
            .unwrap_or_else(|e| self.fail(format!("starting thread {name}: {e}")))
    }

    /// Place `part`, the checked temporary file of manifest file `f`;
    /// returns the record that [`Journal::record`] takes (outside any lock:
    /// it may commit).
    fn place_file(&self, part: PartFile, f: usize) -> Result<Entry, WriteError> {
        let entry = &self.manifest.files[f];
        let placed = part.place(self.dest, &entry.path, entry.bytes)?;
        if let Some(observer) = self.observer {
            observer.placed(f);
        }
        Ok(Entry { path: entry.path.clone(), xxh3: entry.xxh3, file: Some(placed) })
    }

    /// Record a placed file in `journal`.
    fn journal_file(&self, journal: &Journal, entry: Entry) -> Result<(), WriteError> {
        let path = entry.path.clone();
        journal.record(entry).map_err(|source| WriteError::Journal { path, journal: journal.path().to_owned(), source })
    }

    /// Stop the job over `error` (see [`fail`](Self::fail)), its causes on the line.
    fn fail_writing(&self, error: &WriteError) -> ! {
        self.fail(cluster::logging::chain(error))
    }
}
