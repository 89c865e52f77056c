//! Files other nodes hold, fetched over MPI ahead of need into a bounded
//! cache: the data path of a global shuffle over a dataset sharded across
//! the nodes (each file on one node, [`crate::traffic`] models what it
//! reads). One rank per node. Its training reads files in an order known
//! in advance; a fetcher walks that order a window ahead of the consumer,
//! asks each file it lacks of the node that holds it (or reads it from the
//! source when no node does), checks it against the manifest's xxh3 as
//! staging does, and renames it into the cache directory, making room by
//! evicting the file read again last ([`cache`]). A responder thread
//! answers the other nodes' asks from this node's copies.
//!
//! Point-to-point messages on a private communicator (MPI_THREAD_MULTIPLE):
//!
//! ```text
//! asker -> holder   TAG_ASK   u64 file index (DONE: this node will ask no more)
//! holder -> asker   TAG_LEN   u64 byte count (UNREADABLE: it could not read it)
//! holder -> asker   TAG_CHUNK the bytes, in chunks of at most 16 MiB
//! ```
//!
//! The responder sends and the fetcher receives on threads of their own,
//! so two nodes fetching from each other never wait on each other's sends.

pub mod cache;

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use cluster::{ThreadComm, World};
use formats::checksum::StreamingChecksum;
use formats::manifest::Manifest;
use mpi::traits::*;

use cache::{Cache, Room};

const TAG_ASK: i32 = 40;
const TAG_LEN: i32 = 41;
const TAG_CHUNK: i32 = 42;
/// An ask that says the asker is done.
const DONE: u64 = u64::MAX;
/// A length that says the holder could not read the file.
const UNREADABLE: u64 = u64::MAX;
/// The largest message: well under MPI's C-int count.
const CHUNK: usize = 16 << 20;

/// Whether this node's copy of a file it holds is in place, waiting for
/// it while the stage still writes it (`Err`: it never will be, and why).
pub type HolderReady<'a> = &'a (dyn Fn(usize) -> Result<(), String> + Sync);

/// Where a node's files are.
#[derive(Clone, Copy)]
pub struct Holdings<'a> {
    /// The dataset.
    pub manifest: &'a Manifest,
    /// The node holding each file (`None`: no node, read from the source).
    pub owner: &'a [Option<usize>],
    /// This node's destination (its files at their manifest paths).
    pub dest: &'a Path,
    /// The dataset on the shared file system.
    pub source: &'a Path,
    /// Blocks until this node's copy of a file it holds is in place: the
    /// responder answers from it only then.
    pub ready: HolderReady<'a>,
}

/// How to fetch.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Where fetched files go (at their manifest paths).
    pub cache_dir: PathBuf,
    /// Bytes the cache may hold.
    pub capacity: u64,
    /// Reads the fetcher may run ahead of the consumer.
    pub window: usize,
}

/// What a node's fetcher and responder moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PeerStats {
    /// Files fetched from other nodes, and their bytes.
    pub peer_files: u64,
    /// Bytes fetched from other nodes.
    pub peer_bytes: u64,
    /// Files read from the source (no node holds them), and their bytes.
    pub source_files: u64,
    /// Bytes read from the source.
    pub source_bytes: u64,
    /// Files evicted to make room.
    pub evicted: u64,
    /// The most the cache held at once.
    pub most_held: u64,
    /// Bytes this node sent to others.
    pub served_bytes: u64,
}

/// Why fetching failed.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// MPI did not grant MPI_THREAD_MULTIPLE.
    #[error("fetching from other nodes needs MPI_THREAD_MULTIPLE, which this MPI did not grant")]
    Threading,
    /// Not one rank per node.
    #[error("fetching from other nodes runs one rank per node; node {node} has {ranks}")]
    RanksPerNode {
        /// The node.
        node: usize,
        /// Its ranks.
        ranks: usize,
    },
    /// A file or directory could not be read or written.
    #[error("{what} {}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A fetched file is not the manifest's.
    #[error("{path} from {from}: {bytes} bytes with xxh3 {got}, the manifest says {want_bytes} bytes with xxh3 {want}")]
    Differs {
        /// The file.
        path: String,
        /// Where it came from ("node 2", "the source").
        from: String,
        /// Bytes received.
        bytes: u64,
        /// Their xxh3.
        got: formats::checksum::Checksum,
        /// The manifest's size.
        want_bytes: u64,
        /// The manifest's xxh3.
        want: formats::checksum::Checksum,
    },
    /// The holder could not read the file.
    #[error("node {node} could not read its copy of {path}")]
    Unreadable {
        /// The holder.
        node: usize,
        /// The file.
        path: String,
    },
    /// A file larger than the cache.
    #[error("{path} ({bytes} bytes) is larger than the cache ({capacity} bytes); give more --capacity")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        bytes: u64,
        /// The cache's.
        capacity: u64,
    },
    /// The fetcher failed; a consumer waiting for a file learns why.
    #[error("fetching failed: {0}")]
    Failed(String),
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PeerError + use<> {
    let path = path.to_owned();
    move |source| PeerError::Io { what, path, source }
}

/// Where the consumer stands, and what the cache holds: shared by the
/// fetcher and the node's readers.
pub struct Progress {
    state: Mutex<Shared>,
    changed: Condvar,
    /// Also told of every change: a service's socket side, which cannot
    /// block on [`changed`](Self::changed).
    on_change: Option<Box<dyn Fn() + Send + Sync>>,
}

struct Shared {
    cache: Cache,
    consumed: usize,
    /// Every read before this position has been seen to by the fetcher.
    fetched: usize,
    failed: Option<String>,
}

impl Progress {
    /// Progress over `cache`, nothing consumed.
    pub fn new(cache: Cache) -> Progress {
        Progress {
            state: Mutex::new(Shared { cache, consumed: 0, fetched: 0, failed: None }),
            changed: Condvar::new(),
            on_change: None,
        }
    }

    /// This progress, calling `on_change` whenever a file is cached, the
    /// fetcher moves on or fails.
    pub fn with_on_change(self, on_change: impl Fn() + Send + Sync + 'static) -> Progress {
        Progress { on_change: Some(Box::new(on_change)), ..self }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn notify(&self) {
        self.changed.notify_all();
        if let Some(on_change) = &self.on_change {
            on_change();
        }
    }

    /// Whether the cache holds `file` for the read at `position`: `None`
    /// while the fetcher has not passed that read. Once it has, the file
    /// stays until that read is consumed (only files read after the
    /// fetcher's position are evicted), so a reader told `Ok` may open it.
    pub fn cached_for(&self, file: usize, position: usize) -> Option<Result<(), PeerError>> {
        let state = self.lock();
        if let Some(why) = &state.failed {
            return Some(Err(PeerError::Failed(why.clone())));
        }
        (state.fetched > position && state.cache.holds(file)).then_some(Ok(()))
    }

    /// Block until the cache holds `file` for the read at `position` (or
    /// the fetcher failed).
    pub fn wait_cached(&self, file: usize, position: usize) -> Result<(), PeerError> {
        let mut state = self.lock();
        loop {
            if let Some(why) = &state.failed {
                return Err(PeerError::Failed(why.clone()));
            }
            if state.fetched > position && state.cache.holds(file) {
                return Ok(());
            }
            state = self.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Every read before `position` is done.
    pub fn consumed(&self, position: usize) {
        let mut state = self.lock();
        state.consumed = state.consumed.max(position);
        drop(state);
        self.notify();
    }

    /// Tell waiting consumers the fetcher failed.
    pub fn fail(&self, why: &str) {
        self.lock().failed.get_or_insert_with(|| why.to_owned());
        self.notify();
    }

    fn fetched(&self, position: usize) {
        self.lock().fetched = position;
        self.notify();
    }
}

/// Fetch what this node reads (`reads`: file indices in read order) and
/// does not hold, as `progress` lets it, while answering the other nodes'
/// asks. Collective over the world (one rank per node); returns when this
/// node has fetched everything and every node is done asking.
pub fn exchange(
    world: &World,
    holdings: &Holdings<'_>,
    reads: &[usize],
    config: &PeerConfig,
    progress: &Progress,
) -> Result<PeerStats, PeerError> {
    let comm = world.thread_comm().ok_or(PeerError::Threading)?;
    exchange_on(&Nodes::of(world), &comm, holdings, reads, config, progress)
}

/// Where this rank and the other nodes are: plain data, so an exchange can
/// run on a thread of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    /// This rank.
    pub rank: usize,
    /// Its node.
    pub node: usize,
    /// Ranks on its node.
    pub local_size: usize,
    /// Ranks in the world.
    pub size: usize,
    /// The rank serving each node (its lowest).
    pub rank_of_node: Vec<usize>,
}

impl Nodes {
    /// `world`'s.
    pub fn of(world: &World) -> Nodes {
        let t = world.topology();
        Nodes {
            rank: t.rank,
            node: t.node,
            local_size: t.local_size,
            size: world.size(),
            rank_of_node: (0..t.nodes).map(|n| world.ranks_of_node(n)[0]).collect(),
        }
    }
}

/// [`exchange`] on `comm` (a duplicate of the world's communicator, made
/// beforehand): what runs on a thread of its own beside other collectives
/// on the world's, as a staging service's exchange runs beside its stage.
/// [`Progress::fail`] ends it early (the service stops).
pub fn exchange_on(
    nodes: &Nodes,
    comm: &ThreadComm,
    holdings: &Holdings<'_>,
    reads: &[usize],
    config: &PeerConfig,
    progress: &Progress,
) -> Result<PeerStats, PeerError> {
    if nodes.local_size != 1 {
        return Err(PeerError::RanksPerNode { node: nodes.node, ranks: nodes.local_size });
    }
    let node = nodes.node;
    let others = nodes.size - 1;
    let rank_of_node = &nodes.rank_of_node;
    let (fetched, served) = std::thread::scope(|scope| {
        let responder = scope.spawn(|| respond(comm, holdings, others));
        let fetched = fetch(comm, holdings, (node, rank_of_node, reads), config, progress);
        if let Err(e) = &fetched {
            progress.fail(&e.to_string());
        }
        // Whatever happened, this node asks no more.
        for rank in (0..nodes.size).filter(|&r| r != nodes.rank) {
            comm.comm().process_at_rank(rank as i32).send_with_tag(&DONE, TAG_ASK);
        }
        let served = responder.join().unwrap_or_else(|_| Err(PeerError::Failed("the responder panicked".into())));
        (fetched, served)
    });
    let mut stats = fetched?;
    stats.served_bytes = served?;
    Ok(stats)
}

/// Answer asks until every other node is done; returns the bytes sent.
fn respond(comm: &ThreadComm, holdings: &Holdings<'_>, others: usize) -> Result<u64, PeerError> {
    let comm = comm.comm();
    let (mut done, mut sent, mut failure) = (0, 0u64, None);
    let mut idle = std::time::Duration::ZERO;
    while done < others {
        // A blocking receive spins in Open MPI; a responder waits most of
        // its life, on cores the node's fetcher and readers need. Polled,
        // backing off to 1 ms, an ask waits at most that long.
        let Some((message, status)) = comm.any_process().immediate_matched_probe_with_tag(TAG_ASK) else {
            idle = (idle * 2).clamp(std::time::Duration::from_micros(20), std::time::Duration::from_millis(1));
            std::thread::sleep(idle);
            continue;
        };
        idle = std::time::Duration::ZERO;
        let (ask, _) = message.matched_receive::<u64>();
        if ask == DONE {
            done += 1;
            continue;
        }
        let asker = comm.process_at_rank(status.source_rank());
        let entry = usize::try_from(ask).ok().and_then(|f| holdings.manifest.files.get(f));
        let Some(entry) = entry else {
            asker.send_with_tag(&UNREADABLE, TAG_LEN);
            continue;
        };
        let path = holdings.dest.join(&entry.path);
        if let Err(why) = (holdings.ready)(ask as usize) {
            asker.send_with_tag(&UNREADABLE, TAG_LEN);
            failure.get_or_insert(PeerError::Failed(format!("{}: {why}", entry.path)));
            continue;
        }
        let mapped = fs::File::open(&path).and_then(|file| map_to_send(&file));
        let map = match mapped {
            Ok(map) => map,
            Err(e) => {
                asker.send_with_tag(&UNREADABLE, TAG_LEN);
                failure.get_or_insert(io("reading this node's copy of", &path)(e));
                continue;
            }
        };
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        asker.send_with_tag(&(bytes.len() as u64), TAG_LEN);
        for chunk in bytes.chunks(CHUNK) {
            mpi::request::scope(|scope| {
                cluster::polite::wait(asker.immediate_send_with_tag(scope, chunk, TAG_CHUNK));
            });
            sent += chunk.len() as u64;
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(sent),
    }
}

/// This node's copy of a file, mapped with its pages in place (`None`:
/// it is empty), so that its bytes go to the asker without first being
/// copied into a buffer: with Open MPI's single-copy transport the asker's
/// process reads them straight from the page cache.
#[allow(unsafe_code)]
fn map_to_send(file: &fs::File) -> std::io::Result<Option<memmap2::Mmap>> {
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    // SAFETY: the map is only read (by MPI). The file is this node's staged
    // copy, which nothing writes once it is in place (`Holdings::ready`);
    // should someone truncate it meanwhile, the transfer fails (or, without
    // a single-copy transport, the responder faults), never sending other
    // bytes unnoticed, as the asker hashes what it receives.
    unsafe { memmap2::MmapOptions::new().populate().map(file) }.map(Some)
}

/// Walk `reads`, fetching each file this node lacks into the cache, with
/// the files that travel with it (index sidecars).
fn fetch(
    comm: &ThreadComm,
    holdings: &Holdings<'_>,
    (node, rank_of_node, reads): (usize, &[usize], &[usize]),
    config: &PeerConfig,
    progress: &Progress,
) -> Result<PeerStats, PeerError> {
    let mut stats = PeerStats::default();
    // A window of none would wait for a consumer waiting for this fetcher.
    let window = config.window.max(1);
    let groups = travel_groups(holdings.manifest);
    // The maps of the cached files fetched from other nodes, kept for
    // their storage's next use.
    let mut maps: std::collections::HashMap<usize, memmap2::MmapMut> = std::collections::HashMap::new();
    fs::create_dir_all(&config.cache_dir).map_err(io("creating the cache", &config.cache_dir))?;
    for (at, &file) in reads.iter().enumerate() {
        let owner = holdings.owner.get(file).copied().flatten();
        if owner == Some(node) {
            progress.fetched(at + 1);
            continue;
        }
        let group = &groups[file];
        let bytes: u64 = group.iter().map(|&g| holdings.manifest.files[g].bytes).sum();
        // Wait until the read is within the window and there is room.
        let evicted = {
            let mut state = progress.lock();
            loop {
                if let Some(why) = &state.failed {
                    return Err(PeerError::Failed(why.clone()));
                }
                if at < state.consumed.saturating_add(window) {
                    if state.cache.holds(file) {
                        state.cache.hit(file, at);
                        break None;
                    }
                    let consumed = state.consumed;
                    match state.cache.make_room(bytes, at, consumed) {
                        Room::Evict(files) => break Some(files),
                        Room::TooLarge => {
                            return Err(PeerError::TooLarge {
                                path: holdings.manifest.files[file].path.clone(),
                                bytes,
                                capacity: config.capacity,
                            });
                        }
                        Room::Wait => {}
                    }
                }
                state = progress.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        let Some(evicted) = evicted else {
            progress.fetched(at + 1);
            continue;
        };
        // An evicted file's storage, and its map, take the next fetched
        // bytes: on tmpfs its pages are overwritten rather than freed and
        // allocated (zeroed) again, and mapped once rather than per file.
        let mut spares = Vec::new();
        for victim in evicted {
            for &member in &groups[victim] {
                let path = config.cache_dir.join(&holdings.manifest.files[member].path);
                let spare = config.cache_dir.join(format!(".spare{}", spares.len()));
                fs::rename(&path, &spare).map_err(io("evicting", &path))?;
                spares.push(Spare { path: spare, map: maps.remove(&member) });
            }
            stats.evicted += 1;
        }
        // More evicted files than the group has members: the rest go
        // before the fetch, so that the disk never holds more than the
        // cache counts.
        for spare in spares.drain(group.len().min(spares.len())..) {
            drop(spare.map);
            fs::remove_file(&spare.path).map_err(io("evicting", &spare.path))?;
        }
        for &member in group {
            let recycled = spares.pop();
            let map = fetch_one(comm, holdings, (owner, rank_of_node, member), config, recycled, &mut stats)?;
            if let Some(map) = map {
                maps.insert(member, map);
            }
        }
        let mut state = progress.lock();
        state.cache.insert(file, bytes, at);
        stats.most_held = stats.most_held.max(state.cache.used());
        drop(state);
        progress.fetched(at + 1);
    }
    Ok(stats)
}

/// Each file's travel group: itself, then the files that travel with it
/// (`X.idx` with `X`); a sidecar's own group is itself alone.
pub fn travel_groups(manifest: &Manifest) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = (0..manifest.files.len()).map(|f| vec![f]).collect();
    for (sidecar, leader) in manifest.followers().into_iter().enumerate() {
        if let Some(leader) = leader {
            groups[leader].push(sidecar);
        }
    }
    groups
}

/// An evicted file renamed out of the way, and its map where it has one.
struct Spare {
    path: PathBuf,
    map: Option<memmap2::MmapMut>,
}

/// Fetch `file` from `owner` (the source when `None`) into the cache,
/// checked against the manifest; into `recycled`'s storage when given.
/// Returns the map of the placed file (fetched from a node) for reuse.
fn fetch_one(
    comm: &ThreadComm,
    holdings: &Holdings<'_>,
    (owner, rank_of_node, file): (Option<usize>, &[usize], usize),
    config: &PeerConfig,
    recycled: Option<Spare>,
    stats: &mut PeerStats,
) -> Result<Option<memmap2::MmapMut>, PeerError> {
    let entry = &holdings.manifest.files[file];
    let placed = config.cache_dir.join(&entry.path);
    let part = config.cache_dir.join(format!(".{file}.part"));
    let mut reuse = None;
    if let Some(recycled) = recycled {
        fs::rename(&recycled.path, &part).map_err(io("reusing an evicted file as", &part))?;
        reuse = recycled.map;
    }
    let (bytes, sum, map) = match owner {
        Some(holder) => {
            let received = receive_file(comm, holdings, (holder, rank_of_node[holder], file), &part, reuse)?;
            stats.peer_files += 1;
            stats.peer_bytes += received.0;
            received
        }
        None => {
            // The copy truncates the file: its old map must be gone first.
            drop(reuse);
            let from = holdings.source.join(&entry.path);
            let (bytes, sum) = copy_file(&from, &part)?;
            stats.source_files += 1;
            stats.source_bytes += bytes;
            (bytes, sum, None)
        }
    };
    if bytes != entry.bytes || sum != entry.xxh3 {
        drop(map);
        let _ = fs::remove_file(&part);
        let from = owner.map_or_else(|| "the source".to_owned(), |n| format!("node {n}"));
        return Err(PeerError::Differs {
            path: entry.path.clone(),
            from,
            bytes,
            got: sum,
            want_bytes: entry.bytes,
            want: entry.xxh3,
        });
    }
    if let Some(parent) = placed.parent() {
        fs::create_dir_all(parent).map_err(io("creating", parent))?;
    }
    fs::rename(&part, &placed).map_err(io("placing", &placed))?;
    Ok(map)
}

/// Ask `holder` for `file` and receive what it sends into `part` (made or
/// reused, through `reuse` when that maps it at the manifest's size),
/// hashing it; the bytes, their hash, and the map.
fn receive_file(
    comm: &ThreadComm,
    holdings: &Holdings<'_>,
    (holder, rank, file): (usize, usize, usize),
    part: &Path,
    reuse: Option<memmap2::MmapMut>,
) -> Result<(u64, formats::checksum::Checksum, Option<memmap2::MmapMut>), PeerError> {
    let want = holdings.manifest.files[file].bytes;
    // The file is ready for the bytes before the ask: the holder's
    // responder, which serves one asker at a time, then waits only for
    // the transfer.
    let map = match reuse {
        Some(map) if map.len() as u64 == want => Some(map),
        _ if want == 0 => None,
        _ => {
            let out = fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(part);
            let out = out.map_err(io("creating", part))?;
            out.set_len(want).map_err(io("sizing", part))?;
            Some(map_to_receive(&out).map_err(io("mapping", part))?)
        }
    };
    let peer = comm.comm().process_at_rank(rank as i32);
    peer.send_with_tag(&(file as u64), TAG_ASK);
    let mut len = 0u64;
    receive_politely(&peer, &mut len, TAG_LEN);
    if len == UNREADABLE {
        return Err(PeerError::Unreadable { node: holder, path: holdings.manifest.files[file].path.clone() });
    }
    let mut hash = StreamingChecksum::new();
    match map {
        Some(mut map) if len == want => {
            // Received in place: MPI's single copy lands in the cache
            // file's pages, with no buffer and no write(2) between.
            for chunk in map.chunks_mut(CHUNK) {
                receive_politely(&peer, chunk, TAG_CHUNK);
            }
            hash.update(&map);
            Ok((hash.bytes(), hash.finish(), Some(map)))
        }
        _ => {
            // Not the manifest's file (or an empty one): take the bytes (the
            // holder sends them regardless) without giving them room in the
            // cache; the caller refuses them.
            let mut scratch = vec![0u8; CHUNK.min(len as usize)];
            let mut left = len;
            while left > 0 {
                let chunk = &mut scratch[..left.min(CHUNK as u64) as usize];
                receive_politely(&peer, chunk, TAG_CHUNK);
                hash.update(chunk);
                left -= chunk.len() as u64;
            }
            if len == 0 {
                // An empty file is placed as one.
                fs::File::create(part).map_err(io("creating", part))?;
            }
            Ok((hash.bytes(), hash.finish(), None))
        }
    }
}

/// Receive from `peer` into `buffer` without spinning ([`cluster::polite`]).
fn receive_politely<B>(peer: &mpi::topology::Process<'_>, buffer: &mut B, tag: i32)
where
    B: mpi::datatype::BufferMut + ?Sized,
{
    mpi::request::scope(|scope| cluster::polite::wait(peer.immediate_receive_into_with_tag(scope, buffer, tag)));
}

/// A cache file being fetched, mapped for writing with its pages in place
/// (one page fault per 4 KiB page would cost more than the copy).
#[allow(unsafe_code)]
fn map_to_receive(file: &fs::File) -> std::io::Result<memmap2::MmapMut> {
    // SAFETY: the file is this fetcher's own part file in its cache
    // directory, sized before the map; nothing else opens it until it is
    // renamed into place after the map is dropped.
    unsafe { memmap2::MmapOptions::new().populate().map_mut(file) }
}

/// Copy `from` (on the source) to `part`, hashing it.
fn copy_file(from: &Path, part: &Path) -> Result<(u64, formats::checksum::Checksum), PeerError> {
    let mut input = fs::File::open(from).map_err(io("reading", from))?;
    let mut out = fs::File::create(part).map_err(io("creating", part))?;
    let mut hash = StreamingChecksum::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut buffer).map_err(io("reading", from))?;
        if n == 0 {
            break;
        }
        hash.update(&buffer[..n]);
        out.write_all(&buffer[..n]).map_err(io("writing", part))?;
    }
    Ok((hash.bytes(), hash.finish()))
}
