//! The holder's side of a fetch: answers to the other nodes' asks from
//! this node's copies, each file's bytes sent straight from a map of it.
//!
//! One thread receives every ask and hands it to a thread of the asking
//! node's own (made at its first ask), which answers that node's asks in
//! order. A holder serving one asker at a time would keep every other
//! asker waiting while that one is busy elsewhere (placing the previous
//! file, hashing); and as each asker asks for its next file before it
//! receives the current one ([`super::fetch`]), it could wait for a holder
//! that waits for it. Per asker, a holder waits only for that asker to
//! receive, which it always comes to.

use std::collections::HashMap;
use std::fs;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use cluster::ThreadComm;
use mpi::traits::*;

use super::{CHUNK, DONE, Holdings, PeerError, TAG_ASK, TAG_CHUNK, TAG_LEN, UNREADABLE, io};

/// Maps of served files kept for the next ask of the same file. Making a
/// map with its pages in place and unmapping it costs more CPU per page
/// than the transfer's copy itself, and a file is asked for again every
/// epoch (and after an asker's cache evicted it). Bounded well under the
/// kernel's default of 65,530 maps a process may hold; a map of a file on
/// node-local storage holds no memory of its own beyond its page tables.
const KEPT_MAPS: usize = 1024;

/// Chunks a responder has on their way to one asker at most (of
/// [`CHUNK`] bytes each).
const SENDS_IN_FLIGHT: usize = 4;

/// A served file's map (`None`: the file is empty).
type SentMap = Arc<Option<memmap2::Mmap>>;

/// Answer asks until every one of the `others` nodes is done; returns the
/// bytes sent.
pub(super) fn respond(comm: &ThreadComm, holdings: &Holdings<'_>, others: usize) -> Result<u64, PeerError> {
    let maps = Mutex::new(lru::LruCache::new(NonZeroUsize::new(KEPT_MAPS).unwrap_or(NonZeroUsize::MIN)));
    std::thread::scope(|scope| {
        let mut askers = HashMap::new();
        let (mut done, mut idle) = (0, Duration::ZERO);
        while done < others {
            // A blocking receive spins in Open MPI; a responder waits most
            // of its life, on cores the node's fetcher and readers need.
            // Polled, backing off to 1 ms, an ask waits at most that long.
            let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_ASK) else {
                idle = (idle * 2).clamp(Duration::from_micros(20), Duration::from_millis(1));
                std::thread::sleep(idle);
                continue;
            };
            idle = Duration::ZERO;
            let (ask, _) = message.matched_receive::<u64>();
            if ask == DONE {
                done += 1;
                continue;
            }
            let rank = status.source_rank();
            let (asks, _) = askers.entry(rank).or_insert_with(|| {
                let (asks, queue) = mpsc::channel();
                let maps = &maps;
                (asks, scope.spawn(move || answer(comm, holdings, maps, rank, &queue)))
            });
            // The asker's thread ends only with the channel, below.
            let _ = asks.send(ask);
        }
        let (mut sent, mut failure) = (0, None);
        for (asks, answering) in askers.into_values() {
            drop(asks);
            match answering.join() {
                Ok(Ok(bytes)) => sent += bytes,
                Ok(Err(e)) => {
                    failure.get_or_insert(e);
                }
                Err(_) => {
                    failure.get_or_insert(PeerError::Failed("a responder thread panicked".into()));
                }
            }
        }
        failure.map_or(Ok(sent), Err)
    })
}

/// Answer the asks of the node at `rank`, in order, until the channel
/// closes; the bytes sent, or the first failure (every ask is answered
/// regardless, UNREADABLE where it failed).
fn answer(
    comm: &ThreadComm,
    holdings: &Holdings<'_>,
    maps: &Mutex<lru::LruCache<usize, SentMap>>,
    rank: i32,
    asks: &mpsc::Receiver<u64>,
) -> Result<u64, PeerError> {
    let asker = comm.comm().process_at_rank(rank);
    let (mut sent, mut failure) = (0u64, None);
    for ask in asks {
        let index = usize::try_from(ask).ok().filter(|&f| f < holdings.manifest.files.len());
        let Some(file) = index else {
            asker.send_with_tag(&UNREADABLE, TAG_LEN);
            continue;
        };
        let map = match sent_map(holdings, maps, file) {
            Ok(map) => map,
            Err(e) => {
                asker.send_with_tag(&UNREADABLE, TAG_LEN);
                failure.get_or_insert(e);
                continue;
            }
        };
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        asker.send_with_tag(&(bytes.len() as u64), TAG_LEN);
        // Up to SENDS_IN_FLIGHT chunks on their way at once: the asker
        // hashes each as it lands and should find the next already sent;
        // a bound, as a file of many GB would otherwise hold a request
        // per MiB.
        mpi::request::scope(|scope| {
            let mut sends = std::collections::VecDeque::with_capacity(SENDS_IN_FLIGHT);
            for chunk in bytes.chunks(CHUNK) {
                if sends.len() == SENDS_IN_FLIGHT
                    && let Some(oldest) = sends.pop_front()
                {
                    cluster::polite::wait(oldest);
                }
                sends.push_back(asker.immediate_send_with_tag(scope, chunk, TAG_CHUNK));
            }
            sends.into_iter().for_each(cluster::polite::wait);
        });
        sent += bytes.len() as u64;
    }
    failure.map_or(Ok(sent), Err)
}

/// `file`'s map, kept from an earlier ask or made once its copy is ready.
fn sent_map(
    holdings: &Holdings<'_>,
    maps: &Mutex<lru::LruCache<usize, SentMap>>,
    file: usize,
) -> Result<SentMap, PeerError> {
    let lock = || maps.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(map) = lock().get(&file) {
        return Ok(Arc::clone(map));
    }
    let entry = &holdings.manifest.files[file];
    (holdings.ready)(file).map_err(|why| PeerError::Failed(format!("{}: {why}", entry.path)))?;
    let path = holdings.dest.join(&entry.path);
    let map = fs::File::open(&path).and_then(|f| map_to_send(&f)).map_err(io("reading this node's copy of", &path))?;
    let map = Arc::new(map);
    lock().put(file, Arc::clone(&map));
    Ok(map)
}

/// This node's copy of a file, mapped with its pages in place
/// ([`super::populated`]; `None`: it is empty), so that its bytes go to
/// the asker without first being copied into a buffer: with Open MPI's
/// single-copy transport the asker's process reads them straight from the
/// page cache.
#[allow(unsafe_code)]
fn map_to_send(file: &fs::File) -> std::io::Result<Option<memmap2::Mmap>> {
    if file.metadata()?.len() == 0 {
        return Ok(None);
    }
    // SAFETY (both maps): the map is only read (by MPI). The file is this
    // node's staged copy, which nothing writes once it is in place
    // (`Holdings::ready`); should someone truncate it meanwhile, the
    // transfer fails (or, without a single-copy transport, the responder
    // faults), never sending other bytes unnoticed, as the asker hashes
    // what it receives.
    let map = unsafe { memmap2::MmapOptions::new().map(file) }?;
    super::populated(
        map,
        |map| map.advise(memmap2::Advice::PopulateRead),
        || unsafe { memmap2::MmapOptions::new().populate().map(file) },
    )
    .map(Some)
}
