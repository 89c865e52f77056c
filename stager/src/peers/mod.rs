//! Files other nodes hold, fetched over MPI ahead of need into a bounded
//! cache: the data path of a global shuffle over a dataset sharded across
//! the nodes (each file on one node, [`crate::traffic`] models what it
//! reads). One rank per node. Its training reads files in an order known
//! in advance; a fetcher walks that order a window ahead of the consumer,
//! asks each file it lacks of the node that holds it (or reads it from the
//! source when no node does), checks it against the manifest's xxh3 as
//! staging does, and renames it into the cache directory, making room by
//! evicting the file read again last ([`cache`]); it asks for the next
//! file before receiving the current one ([`fetch`]). A responder answers
//! the other nodes' asks from this node's copies, each asker on a thread
//! of its own ([`respond`]).
//!
//! Point-to-point messages on a private communicator (MPI_THREAD_MULTIPLE):
//!
//! ```text
//! asker -> holder   TAG_ASK   u64 file index (DONE: this node will ask no more)
//! holder -> asker   TAG_LEN   u64 byte count (UNREADABLE: it could not read it)
//! holder -> asker   TAG_CHUNK the bytes, in messages of at most 1 MiB ([`CHUNK`])
//! ```
//!
//! The responder sends and the fetcher receives on threads of their own,
//! so two nodes fetching from each other never wait on each other's sends;
//! an asker receives its files in the order it asked for them, and each
//! holder sends each asker's in that order.

pub mod cache;
mod fetch;
mod respond;

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

use cluster::{ThreadComm, World};
use formats::manifest::Manifest;
use mpi::traits::*;

use cache::Cache;

const TAG_ASK: i32 = 40;
const TAG_LEN: i32 = 41;
const TAG_CHUNK: i32 = 42;
/// An ask that says the asker is done.
const DONE: u64 = u64::MAX;
/// A length that says the holder could not read the file.
const UNREADABLE: u64 = u64::MAX;
/// The message a file's bytes travel in: small enough that the asker
/// hashes each while it is still in its core's cache (a whole file hashed
/// after it landed is read back from memory), large enough that a
/// message's own cost is small beside its copy.
const CHUNK: usize = formats::checksum::HASH_BUFFER_BYTES;

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

/// `map` with its pages put in place by `advise` (`MADV_POPULATE_READ` or
/// `MADV_POPULATE_WRITE`): faster than `MAP_POPULATE` on tmpfs
/// (`docs/benchmarks.md`), and unlike it, it says when the pages cannot be
/// had (a full device) where a populated map would fault in the copy. A
/// kernel older than 5.14 has no such advice (`EINVAL`): there the map is
/// made again by `map_populated` (with `MAP_POPULATE`).
fn populated<M>(
    map: M,
    advise: impl FnOnce(&M) -> std::io::Result<()>,
    map_populated: impl FnOnce() -> std::io::Result<M>,
) -> std::io::Result<M> {
    match advise(&map) {
        Ok(()) => Ok(map),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            drop(map);
            map_populated()
        }
        Err(e) => Err(e),
    }
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
        let responder = scope.spawn(|| respond::respond(comm, holdings, others));
        let fetched = fetch::fetch(comm, holdings, (node, rank_of_node, reads), config, progress);
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
