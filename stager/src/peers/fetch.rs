//! The asker's side of a fetch: a walk of the node's reads that fetches
//! each file it lacks into the cache, one file asked ahead.
//!
//! Asking only once the previous file is in place would leave this node's
//! receive idle for the ask's round trip, each file: the holder's
//! responder must be woken, map the file and answer, on cores the other
//! nodes' copies and hashes keep busy. So the next file is asked for as
//! soon as the cache has room for it, before the current one is received;
//! its storage is made ready (allocated and mapped, the costly part) only
//! after the current one is placed, so a consumer waiting for the current
//! one does not wait for that too. Every holder answers each asker on a
//! thread of its own ([`super::respond`]): a holder waiting for this node
//! to take a file waits only on this node's account. Before the fetcher
//! blocks on its consumer it receives everything it has asked for (the
//! consumer may be waiting for exactly that).

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cluster::ThreadComm;
use formats::checksum::{Checksum, StreamingChecksum};
use mpi::traits::*;

use super::cache::Room;
use super::{CHUNK, Holdings, PeerConfig, PeerError, PeerStats, Progress, TAG_ASK, TAG_CHUNK, TAG_LEN, UNREADABLE, io};

/// Walk `reads`, fetching each file this node (`node`) lacks into the
/// cache, with the files that travel with it (index sidecars).
pub(super) fn fetch(
    comm: &ThreadComm,
    holdings: &Holdings<'_>,
    (node, rank_of_node, reads): (usize, &[usize], &[usize]),
    config: &PeerConfig,
    progress: &Progress,
) -> Result<PeerStats, PeerError> {
    let mut fetcher = Fetcher {
        comm,
        holdings,
        rank_of_node,
        config,
        progress,
        groups: super::travel_groups(holdings.manifest),
        stats: PeerStats::default(),
        maps: HashMap::new(),
        asked: VecDeque::new(),
        ready_before: 0,
    };
    let walked = fetcher.walk(node, reads);
    if walked.is_err() {
        // The holder sends what was asked for regardless: take it, so that
        // its responder is not left waiting for this node.
        while let Some(asked) = fetcher.asked.pop_front() {
            let _ = fetcher.receive(asked);
        }
    }
    walked.map(|()| fetcher.stats)
}

struct Fetcher<'a> {
    comm: &'a ThreadComm,
    holdings: &'a Holdings<'a>,
    rank_of_node: &'a [usize],
    config: &'a PeerConfig,
    progress: &'a Progress,
    groups: Vec<Vec<usize>>,
    stats: PeerStats,
    /// The maps of the cached files fetched from other nodes, kept for
    /// their storage's next use.
    maps: HashMap<usize, memmap2::MmapMut>,
    /// The groups asked for and not yet received, in the order asked (at
    /// most two: the one to receive next, and the one asked ahead).
    asked: VecDeque<Asked>,
    /// Every read before this position is ready once `asked` is received.
    ready_before: usize,
}

/// A travel group asked of its holder, room made for it in the cache.
struct Asked {
    /// The read it is fetched for.
    at: usize,
    holder: usize,
    members: Vec<Receiving>,
    /// Evicted files whose storage the members take, until they are
    /// ready to receive.
    spares: Vec<Spare>,
}

/// A file asked for: its part file, and once ready to receive, its map at
/// the manifest's size (`None` also for an empty file).
struct Receiving {
    file: usize,
    part: PathBuf,
    map: Option<memmap2::MmapMut>,
}

/// An evicted file renamed out of the way, and its map where it has one.
struct Spare {
    path: PathBuf,
    map: Option<memmap2::MmapMut>,
}

impl Fetcher<'_> {
    fn walk(&mut self, node: usize, reads: &[usize]) -> Result<(), PeerError> {
        fs::create_dir_all(&self.config.cache_dir).map_err(io("creating the cache", &self.config.cache_dir))?;
        for (at, &file) in reads.iter().enumerate() {
            let owner = self.holdings.owner.get(file).copied().flatten();
            if owner == Some(node) {
                self.ready(at + 1);
                continue;
            }
            let bytes: u64 = self.groups[file].iter().map(|&g| self.holdings.manifest.files[g].bytes).sum();
            let Some(evicted) = self.wait_for_room(file, at, bytes)? else {
                self.ready(at + 1);
                continue;
            };
            let spares = self.evict(evicted, file)?;
            match owner {
                Some(holder) => {
                    self.ask(holder, (at, file, bytes), spares);
                    if self.asked.len() > 1 {
                        let before = self.asked.pop_front();
                        before.map_or(Ok(()), |before| self.receive(before))?;
                    }
                    self.ready_to_receive()?;
                }
                None => {
                    self.receive_all()?;
                    self.copy_from_source(file, spares)?;
                    self.reserve(file, bytes, at);
                    self.ready(at + 1);
                }
            }
        }
        self.receive_all()
    }

    fn receive_all(&mut self) -> Result<(), PeerError> {
        while let Some(asked) = self.asked.pop_front() {
            self.receive(asked)?;
        }
        Ok(())
    }

    /// Every read before `position` is ready, once what is asked for is
    /// received.
    fn ready(&mut self, position: usize) {
        if !self.asked.is_empty() {
            self.ready_before = position;
        } else {
            self.progress.fetched(position);
        }
    }

    /// Wait until the read at `at` is within the window of the consumer and
    /// the cache has room for its `bytes`: the files to evict, or `None`
    /// when the cache holds it already.
    fn wait_for_room(&mut self, file: usize, at: usize, bytes: u64) -> Result<Option<Vec<usize>>, PeerError> {
        // A window of none would wait for a consumer waiting for this fetcher.
        let window = self.config.window.max(1);
        let progress = self.progress;
        loop {
            let mut state = progress.lock();
            if let Some(why) = &state.failed {
                return Err(PeerError::Failed(why.clone()));
            }
            if at < state.consumed.saturating_add(window) {
                if state.cache.holds(file) {
                    state.cache.hit(file, at);
                    return Ok(None);
                }
                let consumed = state.consumed;
                match state.cache.make_room(bytes, at, consumed) {
                    Room::Evict(files) => return Ok(Some(files)),
                    Room::TooLarge => {
                        return Err(PeerError::TooLarge {
                            path: self.holdings.manifest.files[file].path.clone(),
                            bytes,
                            capacity: self.config.capacity,
                        });
                    }
                    Room::Wait => {}
                }
            }
            // The consumer may be waiting for what is asked for.
            if !self.asked.is_empty() {
                drop(state);
                self.receive_all()?;
                continue;
            }
            drop(progress.changed.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner));
        }
    }

    /// Rename the `evicted` files out of the way, keeping storage (and
    /// maps) for the members of `file`'s group, about to be fetched.
    fn evict(&mut self, evicted: Vec<usize>, file: usize) -> Result<Vec<Spare>, PeerError> {
        let members = self.groups[file].len();
        // An evicted file's storage, and its map, take the next fetched
        // bytes: on tmpfs its pages are overwritten rather than freed and
        // allocated (zeroed) again, and mapped once rather than per file.
        let mut spares = Vec::new();
        for victim in evicted {
            for &member in &self.groups[victim] {
                let path = self.config.cache_dir.join(&self.holdings.manifest.files[member].path);
                let spare = self.config.cache_dir.join(format!(".spare{}", spares.len()));
                fs::rename(&path, &spare).map_err(io("evicting", &path))?;
                spares.push(Spare { path: spare, map: self.maps.remove(&member) });
            }
            self.stats.evicted += 1;
        }
        // More evicted files than the group has members: the rest go
        // before the fetch, so that the disk never holds more than the
        // cache counts.
        for spare in spares.drain(members.min(spares.len())..) {
            drop(spare.map);
            fs::remove_file(&spare.path).map_err(io("evicting", &spare.path))?;
        }
        // A spare larger than the member it will hold shrinks now: the cache
        // counts the member's bytes from here, and the spare may wait at its
        // old size while an earlier group is received.
        let kept = spares.len();
        for (i, spare) in spares.iter_mut().enumerate() {
            // Members take spares from the back (`Vec::pop`), in order.
            let member = self.groups[file][kept - 1 - i];
            let want = self.holdings.manifest.files[member].bytes;
            let had = fs::metadata(&spare.path).map_err(io("evicting", &spare.path))?.len();
            if had > want {
                // Shrinking a mapped file would leave its map past the end.
                spare.map = None;
                let out = fs::OpenOptions::new().write(true).open(&spare.path);
                out.and_then(|out| out.set_len(want)).map_err(io("evicting", &spare.path))?;
            }
        }
        Ok(spares)
    }

    /// Count `file`'s group as held (room was made for it).
    fn reserve(&mut self, file: usize, bytes: u64, at: usize) {
        let mut state = self.progress.lock();
        state.cache.insert(file, bytes, at);
        self.stats.most_held = self.stats.most_held.max(state.cache.used());
    }

    /// Ask `holder` for `file`'s group, into the storage of `spares` where
    /// there are some. The group counts as held from here, though no
    /// reader sees it before it is received (the fetcher's position stays
    /// before it).
    fn ask(&mut self, holder: usize, (at, file, bytes): (usize, usize, u64), spares: Vec<Spare>) {
        self.reserve(file, bytes, at);
        let peer = self.comm.comm().process_at_rank(self.rank_of_node[holder] as i32);
        let mut members = Vec::new();
        for &member in &self.groups[file] {
            peer.send_with_tag(&(member as u64), TAG_ASK);
            let part = self.config.cache_dir.join(format!(".{member}.part"));
            members.push(Receiving { file: member, part, map: None });
        }
        self.asked.push_back(Asked { at, holder, members, spares });
    }

    /// Make the storage of the group asked last ready for its bytes: each
    /// member's part file, made or reused from an evicted file, mapped at
    /// the manifest's size (not mapped when empty).
    fn ready_to_receive(&mut self) -> Result<(), PeerError> {
        let Some(asked) = self.asked.back_mut() else { return Ok(()) };
        for member in &mut asked.members {
            let want = self.holdings.manifest.files[member.file].bytes;
            let part = &member.part;
            let mut reuse = None;
            if let Some(recycled) = asked.spares.pop() {
                fs::rename(&recycled.path, part).map_err(io("reusing an evicted file as", part))?;
                reuse = recycled.map;
            }
            member.map = match reuse {
                Some(map) if map.len() as u64 == want => Some(map),
                _ if want == 0 => None,
                other => {
                    drop(other);
                    let out = fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(part);
                    let out = out.map_err(io("creating", part))?;
                    out.set_len(want).map_err(io("sizing", part))?;
                    Some(map_to_receive(&out).map_err(io("mapping", part))?)
                }
            };
        }
        Ok(())
    }

    /// Receive a group asked for (the first in `asked`, taken from it),
    /// check it and place it; then the reads before the next asked group
    /// are ready. Takes every message the holder sends for it, also when a
    /// file fails.
    fn receive(&mut self, asked: Asked) -> Result<(), PeerError> {
        let peer = self.comm.comm().process_at_rank(self.rank_of_node[asked.holder] as i32);
        let mut failure = None;
        for member in asked.members {
            match self.receive_file(&peer, asked.holder, member) {
                Ok((file, Some(map))) => {
                    self.maps.insert(file, map);
                }
                Ok((_, None)) => {}
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        let before_next = self.asked.front().map_or(usize::MAX, |next| next.at);
        self.progress.fetched(self.ready_before.min(before_next).max(asked.at + 1));
        Ok(())
    }

    /// Receive one file from `peer` into its part file, hashing it, and
    /// place it; the map of the placed file, for reuse.
    fn receive_file(
        &mut self,
        peer: &mpi::topology::Process<'_>,
        holder: usize,
        member: Receiving,
    ) -> Result<(usize, Option<memmap2::MmapMut>), PeerError> {
        let entry = &self.holdings.manifest.files[member.file];
        let mut len = 0u64;
        receive_politely(peer, &mut len, TAG_LEN);
        if len == UNREADABLE {
            drop(member.map);
            let _ = fs::remove_file(&member.part);
            return Err(PeerError::Unreadable { node: holder, path: entry.path.clone() });
        }
        let mut hash = StreamingChecksum::new();
        let map = match member.map {
            Some(mut map) if len == map.len() as u64 => {
                // Received in place: MPI's single copy lands in the cache
                // file's pages, with no buffer and no write(2) between.
                for chunk in map.chunks_mut(CHUNK) {
                    receive_politely(peer, chunk, TAG_CHUNK);
                    hash.update(chunk);
                }
                Some(map)
            }
            other => {
                drop(other);
                // Not the manifest's file (or an empty one): take the bytes
                // (the holder sends them regardless) without giving them
                // room in the cache; they are refused below.
                let mut scratch = vec![0u8; CHUNK.min(len as usize)];
                let mut left = len;
                while left > 0 {
                    let chunk = &mut scratch[..left.min(CHUNK as u64) as usize];
                    receive_politely(peer, chunk, TAG_CHUNK);
                    hash.update(chunk);
                    left -= chunk.len() as u64;
                }
                if len == 0 {
                    // An empty file is placed as one.
                    fs::File::create(&member.part).map_err(io("creating", &member.part))?;
                }
                None
            }
        };
        self.stats.peer_files += 1;
        self.stats.peer_bytes += hash.bytes();
        let received = (hash.bytes(), hash.finish());
        if let Err(e) = self.place(member.file, &member.part, received, Some(holder)) {
            drop(map);
            let _ = fs::remove_file(&member.part);
            return Err(e);
        }
        Ok((member.file, map))
    }

    /// Copy `file`'s group from the source into the cache, into the
    /// storage of `spares` where there are some.
    fn copy_from_source(&mut self, file: usize, mut spares: Vec<Spare>) -> Result<(), PeerError> {
        for &member in &self.groups[file] {
            let entry = &self.holdings.manifest.files[member];
            let part = self.config.cache_dir.join(format!(".{member}.part"));
            if let Some(recycled) = spares.pop() {
                // The copy truncates the file: its old map must be gone first.
                drop(recycled.map);
                fs::rename(&recycled.path, &part).map_err(io("reusing an evicted file as", &part))?;
            }
            let from = self.holdings.source.join(&entry.path);
            let received = copy_file(&from, &part)?;
            self.stats.source_files += 1;
            self.stats.source_bytes += received.0;
            if let Err(e) = self.place(member, &part, received, None) {
                let _ = fs::remove_file(&part);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Check `received` (bytes and hash of `part`) against the manifest's
    /// `file` and rename it into place.
    fn place(
        &self,
        file: usize,
        part: &Path,
        (bytes, sum): (u64, Checksum),
        from: Option<usize>,
    ) -> Result<(), PeerError> {
        let entry = &self.holdings.manifest.files[file];
        if bytes != entry.bytes || sum != entry.xxh3 {
            return Err(PeerError::Differs {
                path: entry.path.clone(),
                from: from.map_or_else(|| "the source".to_owned(), |n| format!("node {n}")),
                bytes,
                got: sum,
                want_bytes: entry.bytes,
                want: entry.xxh3,
            });
        }
        let placed = self.config.cache_dir.join(&entry.path);
        if let Some(parent) = placed.parent() {
            fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        fs::rename(part, &placed).map_err(io("placing", &placed))
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
/// ([`super::populated`]): one page fault per 4 KiB page would cost more
/// than the copy.
#[allow(unsafe_code)]
fn map_to_receive(file: &fs::File) -> std::io::Result<memmap2::MmapMut> {
    // SAFETY (both maps): the file is this fetcher's own part file in its
    // cache directory, sized before the map; nothing else opens it until
    // it is renamed into place, and its map is only used by this fetcher.
    let map = unsafe { memmap2::MmapOptions::new().map_mut(file) }?;
    super::populated(
        map,
        |map| map.advise(memmap2::Advice::PopulateWrite),
        || unsafe { memmap2::MmapOptions::new().populate().map_mut(file) },
    )
}

/// Copy `from` (on the source) to `part`, hashing it.
fn copy_file(from: &Path, part: &Path) -> Result<(u64, Checksum), PeerError> {
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
