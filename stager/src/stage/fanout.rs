//! The stager proper: buffer pool, readers, sender, receiver.

use super::ramp::Ramp;
use super::writer::NodeWriter;
use super::*;
use cluster::polite::Backoff;

/// Most chunks a sender has in flight at once.
const SEND_BATCH: usize = 8;

/// A chunk read and checked, on its way to the other nodes.
pub(super) struct Chunk {
    head: Head,
    body: Body,
}

/// Where a chunk's bytes are.
pub(super) enum Body {
    /// Read into a pool buffer; the first `len` bytes.
    Buffer(AlignedBuffer, usize),
    /// A map of the source file's window (`--read-method mmap`).
    Mapped(memmap2::Mmap),
    /// Nothing (an empty file).
    Empty,
}

impl Body {
    fn bytes(&self) -> &[u8] {
        match self {
            Body::Buffer(buffer, len) => &buffer.as_slice()[..*len],
            Body::Mapped(map) => map,
            Body::Empty => &[],
        }
    }

    fn into_buffer(self) -> Option<AlignedBuffer> {
        match self {
            Body::Buffer(buffer, _) => Some(buffer),
            _ => None,
        }
    }
}

/// Where a rank's readers write the files they read that its own node
/// needs (every rank of a node writes into the node's destination). Each
/// piece goes to the temporary file right after it is read and hashed,
/// while it is in cache, as `cp` does; a hand-over to the receiver thread
/// would read the chunk again from memory.
struct Direct<'j> {
    journal: &'j Journal,
    temp_dir: &'j Path,
}

/// Per-rank totals of the read threads.
#[derive(Default)]
struct ReadTotals {
    read: u64,
    read_secs: f64,
    written: u64,
    files_written: u64,
    first_write: Option<Instant>,
}

impl Context<'_> {
    /// The stager proper: read once, send to every node that needs it.
    pub(super) fn staged(&self, comm: &ThreadComm, node_files: &[usize]) -> RankStats {
        let rank = self.rank;
        let (reads, ramp) = match &self.config.order {
            ReadOrder::LargestFirst => (self.plan.reads(rank), Ramp::all()),
            ReadOrder::FirstNeeded(steps) => (self.plan.reads_by_need(rank, steps), Ramp::one_by_one()),
        };
        // With the loaders' order (the service), each file leaves as soon as
        // it is read, for a loader may be waiting for it; the sender packs
        // small ones then, whenever no chunk waits.
        let gathers = matches!(self.config.order, ReadOrder::LargestFirst);
        let gather_limit = self.gather_limit();
        let pack_bytes =
            if gathers { gather::pack_budget(self.config.threads, self.config.max_inflight, gather_limit) } else { 0 };
        let packs = Pool::new(pack_bytes, gather_limit);
        let budget = Pool::new(self.config.max_inflight.saturating_sub(pack_bytes), self.config.chunk_size);
        let (tx, rx) = crossbeam_channel::unbounded::<Outgoing>();
        let is_writer = self.plan.writer(self.plan.node_of(rank)) == Some(rank);
        let next = AtomicUsize::new(0);
        let totals = Mutex::new(ReadTotals::default());
        let mut stats = RankStats::default();
        // Every rank writes its node's copy of what it reads, each into a
        // journal of its own; the writer also receives what other nodes read.
        let writes = !node_files.is_empty();
        let name = if is_writer { "journal.jsonl".to_owned() } else { format!("journal.r{rank}.jsonl") };
        let journal = writes.then(|| match Journal::open(self.dest, &name) {
            Ok(j) => j,
            Err(e) => self.fail(format!("opening the journal in {}: {e}", self.dest.display())),
        });
        let temp_dir = journal::temp_dir(self.dest);
        if writes && let Err(e) = journal::create_temp_dir(self.dest) {
            self.fail(format!("creating {}: {e}", temp_dir.display()));
        }
        let direct = journal.as_ref().map(|journal| Direct { journal, temp_dir: &temp_dir });
        // What this node needs from other nodes' reads (its own ranks write
        // the rest).
        let remote: Vec<usize> = if is_writer {
            let read_here = |f: usize| self.plan.reader(f).is_some_and(|r| self.plan.node_of(r) == self.node);
            node_files.iter().copied().filter(|&f| !read_here(f)).collect()
        } else {
            Vec::new()
        };
        let reading = AtomicBool::new(true);
        let sending = AtomicBool::new(true);
        std::thread::scope(|s| {
            let (rx_ref, budget_ref, reading_ref, remote, temp_dir) = (&rx, &budget, &reading, &remote, &temp_dir);
            let sending_ref = &sending;
            let receiver = journal.as_ref().filter(|_| is_writer).map(|journal| {
                self.spawn(s, "stager-receive", move || self.receive(comm, remote, journal, temp_dir, reading_ref))
            });
            // The other ranks that write listen for failure notices alone.
            let listener = (writes && !is_writer)
                .then(|| self.spawn(s, "stager-listen", move || self.listen_for_failure(sending_ref)));
            let packs = &packs;
            let sender = self.spawn(s, "stager-send", move || self.send(comm, rx_ref, budget_ref, packs));
            let (next, budget, totals, reads, direct) = (&next, &budget, &totals, &reads, direct.as_ref());
            let ramp = &ramp;
            let readers: Vec<_> = (0..self.config.threads.max(1))
                .map(|thread| {
                    let tx = tx.clone();
                    self.spawn(s, "stager-read", move || {
                        let begin = Instant::now();
                        let mut bytes = 0u64;
                        if !ramp.enter(thread, || next.load(Ordering::Relaxed) >= reads.len()) {
                            return;
                        }
                        let mut open = None;
                        while let Some(&f) = reads.get(next.fetch_add(1, Ordering::Relaxed)) {
                            let here = direct.filter(|_| self.plan.destinations(f).contains(self.node));
                            let open = gathers.then_some(&mut open);
                            bytes += self.read_file(f, &tx, (budget, packs), here, totals, open);
                            ramp.file_done();
                        }
                        self.send_pack(open, &tx);
                        let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
                        t.read += bytes;
                        t.read_secs = t.read_secs.max(begin.elapsed().as_secs_f64());
                    })
                })
                .collect();
            drop(tx);
            // A thread that panicked did not finish its share: the run must
            // fail, never report what the others did as the whole.
            let joined = |name: &str| -> ! { self.fail(format!("the {name} thread panicked")) };
            for r in readers {
                r.join().unwrap_or_else(|_| joined("stager-read"));
            }
            reading.store(false, Ordering::SeqCst);
            stats.moved_bytes = sender.join().unwrap_or_else(|_| joined("stager-send"));
            sending.store(false, Ordering::SeqCst);
            if let Some(listener) = listener {
                listener.join().unwrap_or_else(|_| joined("stager-listen"));
            }
            if let Some(receiver) = receiver {
                let (written, first_write, files) = receiver.join().unwrap_or_else(|_| joined("stager-receive"));
                stats.written_bytes = written;
                stats.files_written = files;
                let t = totals.lock().unwrap_or_else(|p| p.into_inner());
                let first = [first_write, t.first_write].into_iter().flatten().min();
                stats.write_secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
            }
        });
        if let Some(Err(e)) = journal.as_ref().map(Journal::commit) {
            self.fail(format!("journaling in {}: {e}", self.dest.display()));
        }
        let t = totals.into_inner().unwrap_or_else(|p| p.into_inner());
        stats.read_bytes = t.read;
        stats.read_secs = t.read_secs;
        stats.written_bytes += t.written;
        stats.files_written += t.files_written;
        stats
    }

    /// Read file `f` chunk by chunk for the sender, writing it into this
    /// node's destination on the way if `direct`; returns bytes read. With
    /// `open`, a whole file small enough for other nodes goes into the
    /// reader's pack (a buffer of `packs`, kept open across larger files:
    /// in the largest-first order they come before the small ones).
    fn read_file(
        &self,
        f: usize,
        tx: &crossbeam_channel::Sender<Outgoing>,
        (pool, packs): (&Pool, &Pool),
        direct: Option<&Direct>,
        totals: &Mutex<ReadTotals>,
        open: Option<&mut Option<OpenPack>>,
    ) -> u64 {
        let entry = &self.manifest.files[f];
        let path = self.config.source.join(&entry.path);
        let fail = |e: io::Error| -> ! { self.fail(format!("reading source file {}: {e}", path.display())) };
        let mut file = formats::regular::open_regular(&path).unwrap_or_else(|e| fail(e));
        let mapped = self.config.read_method.maps(&file, entry.bytes);
        if mapped {
            // A map must not reach past the end of the file.
            let size = file.metadata().unwrap_or_else(|e| fail(e)).len();
            if size != entry.bytes {
                let what = format!("{size} bytes, the manifest says {}", entry.bytes);
                self.fail(format!("source file {} differs from the manifest ({what})", path.display()));
            }
        }
        let mut out = direct.map(|d| self.create_temp(d.temp_dir, f));
        if out.is_some() {
            totals.lock().unwrap_or_else(|p| p.into_inner()).first_write.get_or_insert_with(Instant::now);
        }
        let receivers: Vec<usize> = self.receivers(f).collect();
        let sends = !receivers.is_empty();
        let fits = HEAD_LEN as u64 + entry.bytes <= self.gather_limit() as u64;
        if let Some(open) = open
            && sends
            && fits
            && !mapped
        {
            let read = self.read_into_pack(f, &mut file, receivers, open, out.as_ref(), tx, packs);
            if let (Some(part), Some(d)) = (out.take(), direct) {
                self.finish_direct(part, f, d, totals);
            }
            return read;
        }
        let mut hash = StreamingChecksum::new();
        loop {
            let offset = hash.bytes();
            let want = (entry.bytes.saturating_sub(offset) as usize).min(self.config.chunk_size);
            pool.reserve();
            // This node's copy: each piece right after it is hashed, in cache.
            let mut local = LocalCopy::new(out.as_ref(), self.counters, offset);
            let body = if want == 0 {
                Body::Empty
            } else if mapped {
                let map = map_window(&file, offset, want).unwrap_or_else(|e| fail(e));
                for piece in map.chunks(CACHE_PIECE) {
                    hash.update(piece);
                    local.write(piece);
                }
                Body::Mapped(map)
            } else {
                let mut buffer = pool.buffer();
                let filled =
                    read_hashing(&mut file, &mut buffer.as_mut_slice()[..want], &mut hash, |piece| local.write(piece))
                        .unwrap_or_else(|e| fail(e));
                Body::Buffer(buffer, filled)
            };
            if let Some(e) = local.finish() {
                self.fail(format!("writing {} into {}: {e}", entry.path, self.dest.display()));
            }
            let filled = body.bytes().len();
            if let Some(l) = self.limiter {
                l.acquire(filled as u64);
            }
            let last = hash.bytes() >= entry.bytes || filled < want;
            if last {
                // Check the whole file before its last chunk leaves this rank
                // (or its copy here is renamed into place).
                self.check_whole(f, &file, &hash);
            }
            let head = Head { file: f, offset, len: filled, last };
            if !sends {
                pool.release(body.into_buffer());
            } else if tx.send(Outgoing::Chunk(Chunk { head, body })).is_err() {
                self.fail("the sender thread stopped".to_owned());
            }
            if last {
                if let (Some(part), Some(d)) = (out.take(), direct) {
                    self.finish_direct(part, f, d, totals);
                }
                return hash.bytes();
            }
        }
    }

    /// A temporary file for `f` in `temp_dir`, unless this rank is failing
    /// (then it waits for the end: the temporary files are being cleared).
    fn create_temp(&self, temp_dir: &Path, f: usize) -> PartFile {
        let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.failing.load(Ordering::SeqCst) {
            drop(_guard);
            loop {
                std::thread::park();
            }
        }
        match PartFile::create(temp_dir, f) {
            Ok(part) => part,
            Err(e) => {
                drop(_guard);
                self.fail_unless_stopped(temp_dir, e.to_string())
            }
        }
    }

    /// Rename into place and journal a file this rank wrote itself.
    fn finish_direct(&self, part: PartFile, f: usize, direct: &Direct, totals: &Mutex<ReadTotals>) {
        let entry = &self.manifest.files[f];
        let finished = {
            let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
            if self.failing.load(Ordering::SeqCst) {
                return;
            }
            self.place_file(part, f)
        };
        if let Err(e) = finished.and_then(|placed| self.journal_file(direct.journal, placed)) {
            self.fail_unless_stopped(direct.temp_dir, cluster::logging::chain(&e));
        }
        self.counters.add_item();
        let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
        t.written += entry.bytes;
        t.files_written += 1;
    }

    /// Send each chunk to the writer rank of every other node that needs it
    /// (this rank's readers wrote its own node's copy). Returns bytes sent.
    /// Up to [`SEND_BATCH`] chunks that are ready go out together, so a
    /// fan-out to several nodes proceeds at once. Packs the readers
    /// gathered go out as they are. Whole files small enough that come as
    /// chunks (in the service's order, or mapped) are copied into a
    /// [`Pack`] per receiver instead, sent when full or when no chunk is
    /// waiting (so a slow source never holds one back).
    fn send(
        &self,
        comm: &ThreadComm,
        rx: &crossbeam_channel::Receiver<Outgoing>,
        pool: &Pool,
        gather_pool: &Pool,
    ) -> u64 {
        let mut moved = 0u64;
        let mut batch: Vec<Chunk> = Vec::with_capacity(SEND_BATCH);
        // Packs the readers filled, sent as they are.
        let mut gathered: Vec<OpenPack> = Vec::new();
        let pack_limit = pack_limit(self.plan.nodes());
        let mut packs: HashMap<usize, Pack> = HashMap::new();
        let mut spare: Vec<Pack> = Vec::new();
        let mut open = true;
        while open {
            let take = |outgoing, batch: &mut Vec<Chunk>, gathered: &mut Vec<OpenPack>| match outgoing {
                Outgoing::Chunk(chunk) => batch.push(chunk),
                Outgoing::Pack(pack) => gathered.push(pack),
            };
            match rx.recv() {
                Ok(first) => take(first, &mut batch, &mut gathered),
                Err(_) => open = false,
            }
            while open
                && batch.len() + gathered.len() < SEND_BATCH
                && let Ok(more) = rx.try_recv()
            {
                take(more, &mut batch, &mut gathered);
            }
            // (receiver, pack) to send in this round.
            let mut full: Vec<(usize, Pack)> = Vec::new();
            let mut unpacked = Vec::with_capacity(batch.len());
            for chunk in batch.drain(..) {
                let head = chunk.head;
                if head.offset != 0 || !head.last || HEAD_LEN + head.len > pack_limit {
                    unpacked.push(chunk);
                    continue;
                }
                for writer in self.receivers(head.file) {
                    let pack = packs.entry(writer).or_default();
                    if pack.len() + HEAD_LEN + head.len > pack_limit {
                        let fresh = spare.pop().unwrap_or_default();
                        full.push((writer, std::mem::replace(pack, fresh)));
                    }
                    pack.push(head, chunk.body.bytes());
                    moved += head.len as u64;
                }
                pool.release(chunk.body.into_buffer());
            }
            batch = unpacked;
            if !open || rx.is_empty() {
                for (&writer, pack) in packs.iter_mut().filter(|(_, pack)| !pack.is_empty()) {
                    let fresh = spare.pop().unwrap_or_default();
                    full.push((writer, std::mem::replace(pack, fresh)));
                }
            }
            let heads: Vec<[u8; HEAD_LEN]> = batch.iter().map(|chunk| chunk.head.encode()).collect();
            mpi::request::scope(|scope| {
                let mut requests = Vec::new();
                for (chunk, head) in batch.iter().zip(&heads) {
                    for writer in self.receivers(chunk.head.file) {
                        let target = comm.comm().process_at_rank(writer as i32);
                        requests.push(target.immediate_send_with_tag(scope, &head[..], TAG_HEAD));
                        requests.push(target.immediate_send_with_tag(scope, chunk.body.bytes(), TAG_BODY));
                        moved += chunk.body.bytes().len() as u64;
                    }
                }
                for (writer, pack) in &full {
                    let target = comm.comm().process_at_rank(*writer as i32);
                    requests.push(target.immediate_send_with_tag(scope, pack.as_bytes(), TAG_PACK));
                }
                for pack in &gathered {
                    for &writer in &pack.receivers {
                        let target = comm.comm().process_at_rank(writer as i32);
                        requests.push(target.immediate_send_with_tag(scope, pack.bytes(), TAG_PACK));
                        moved += pack.file_bytes;
                    }
                }
                for request in requests {
                    cluster::polite::wait(request);
                }
            });
            for chunk in batch.drain(..) {
                pool.release(chunk.body.into_buffer());
            }
            for pack in gathered.drain(..) {
                gather_pool.release(Some(pack.buffer));
            }
            for (_, mut pack) in full {
                pack.clear();
                spare.push(pack);
            }
        }
        moved
    }

    /// The writer ranks `file` is sent to: those of the other nodes that need it.
    fn receivers(&self, file: usize) -> impl Iterator<Item = usize> + '_ {
        self.plan.destinations(file).iter().filter(|&node| node != self.node).filter_map(|node| self.plan.writer(node))
    }

    /// Wait for another rank's failure notice while this rank reads, writes
    /// and sends; on one, stop as the receiver would ([`Context::stop_for`]).
    fn listen_for_failure(&self, sending: &AtomicBool) {
        while sending.load(Ordering::SeqCst) {
            if let Some(failed) = self.failure_notice() {
                self.stop_for(failed);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Receive this node's files that other nodes read (`remote`), and
    /// listen for failure notices until they are all written and this rank's
    /// readers are done; returns (bytes written, first write, files).
    fn receive(
        &self,
        comm: &ThreadComm,
        remote: &[usize],
        journal: &Journal,
        temp_dir: &Path,
        reading: &AtomicBool,
    ) -> (u64, Option<Instant>, u64) {
        let mut writer = NodeWriter {
            ctx: self,
            journal,
            temp_dir: temp_dir.to_owned(),
            open: HashMap::new(),
            expected: remote.iter().copied().collect(),
            done: 0,
            written: 0,
            first_write: None,
        };
        let mut buffer = AlignedBuffer::new(0);
        let mut pack_buffer: Vec<u8> = Vec::new();
        // Spin, then sleep up to 200 us.
        let mut idle = Backoff::new(4, 10, 20);
        while writer.done < remote.len() || reading.load(Ordering::SeqCst) {
            // A failure notice jumps the queue of data waiting to be written.
            if let Some(failed) = self.failure_notice() {
                self.stop_for(failed);
            }
            if let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_PACK) {
                idle.reset();
                self.stop_if_failing();
                let (source, len) = (status.source_rank(), status.count(u8::equivalent_datatype()) as usize);
                if len > MAX_CHUNK {
                    self.fail(format!("malformed message from rank {source}"));
                }
                if pack_buffer.len() < len {
                    pack_buffer.resize(len, 0);
                }
                let received = &mut pack_buffer[..len];
                mpi::request::scope(|scope| {
                    cluster::polite::wait(message.immediate_matched_receive_into(scope, received))
                });
                let records = wire::unpack(received).unwrap_or_else(|at| {
                    self.fail(format!("malformed pack from rank {source} (a record at byte {at} of {len})"))
                });
                for (head, body) in records {
                    if let Err(e) = writer.chunk(head, body, source as usize) {
                        self.fail_writing(&e);
                    }
                }
                continue;
            }
            let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_HEAD) else {
                idle.snooze();
                continue;
            };
            idle.reset();
            self.stop_if_failing();
            let source = status.source_rank();
            let mut head = [0u8; HEAD_LEN];
            let head = match status.count(u8::equivalent_datatype()) as usize {
                HEAD_LEN => {
                    message.matched_receive_into(&mut head[..]);
                    Head::decode(&head)
                }
                _ => None,
            };
            let Some(head) = head.filter(|h| h.len <= MAX_CHUNK) else {
                self.fail(format!("malformed message from rank {source}"))
            };
            if buffer.len() < head.len {
                buffer = AlignedBuffer::new(head.len.max(self.config.chunk_size));
            }
            let body = &mut buffer.as_mut_slice()[..head.len];
            if let Err(e) = receive_body(comm, source, body).and_then(|()| writer.chunk(head, body, source as usize)) {
                self.fail_writing(&e);
            }
        }
        (writer.written, writer.first_write, writer.done as u64)
    }
}

/// Largest pack a sender builds for one receiver: 1 MiB, less when there
/// are many receivers, so a rank's open packs stay within 32 MiB (a rank
/// keeps one per receiver).
pub(super) fn pack_limit(nodes: usize) -> usize {
    const BUDGET: usize = 32 << 20;
    (BUDGET / nodes.saturating_sub(1).max(1)).clamp(64 << 10, 1 << 20)
}

/// Receive into `body` the body that `source` sends after a head, checking
/// that it has the head's length.
fn receive_body(comm: &ThreadComm, source: i32, body: &mut [u8]) -> Result<(), WriteError> {
    let from = comm.comm().process_at_rank(source);
    let mut idle = Backoff::polite();
    let (message, status) = loop {
        if let Some(found) = from.immediate_matched_probe_with_tag(TAG_BODY) {
            break found;
        }
        idle.snooze();
    };
    let count = status.count(u8::equivalent_datatype()) as usize;
    if count != body.len() {
        return Err(WriteError::BodyLength { from: source as usize, sent: count, announced: body.len() });
    }
    mpi::request::scope(|scope| cluster::polite::wait(message.immediate_matched_receive_into(scope, body)));
    Ok(())
}

/// Map `len` bytes of `file` from `offset`, read-only, with the pages
/// already in place.
#[allow(unsafe_code)]
fn map_window(file: &File, offset: u64, len: usize) -> io::Result<memmap2::Mmap> {
    // SAFETY: the map is only read, and the caller checked after opening that
    // the file is as long as the manifest says, so the window lies inside it.
    // Should another process truncate the file meanwhile, reading the lost
    // pages raises SIGBUS and the job ends (documented under --read-method);
    // it cannot yield wrong bytes unnoticed, as the hash checks them.
    unsafe { memmap2::MmapOptions::new().offset(offset).len(len).populate().map(file) }
}
