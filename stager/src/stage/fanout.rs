//! The stager proper: buffer pool, readers, sender, receiver.

use super::writer::NodeWriter;
use super::*;

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

/// Most chunks a sender has in flight at once.
const SEND_BATCH: usize = 8;

struct Chunk {
    file: usize,
    /// Data and trailer; only the first `len` bytes are the message.
    message: AlignedBuffer,
    len: usize,
}

/// Where a writer rank's readers write the files they read that its own
/// node needs. Each piece goes to the temporary file right after it is read
/// and hashed, while it is in cache, as `cp` does; a hand-over to the
/// receiver thread would read the chunk again from memory.
struct Direct<'j> {
    journal: &'j Mutex<Journal>,
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
        let reads = self.plan.reads(rank);
        let budget = Pool::new(self.config.max_inflight, TRAILER + self.config.chunk_size);
        let (tx, rx) = crossbeam_channel::unbounded::<Chunk>();
        let is_writer = self.plan.writer(self.plan.node_of(rank)) == Some(rank);
        let next = AtomicUsize::new(0);
        let totals = Mutex::new(ReadTotals::default());
        let mut stats = RankStats::default();
        let writes = is_writer && !node_files.is_empty();
        let journal = writes.then(|| match Journal::open(self.dest, "journal.jsonl") {
            Ok(j) => Mutex::new(j),
            Err(e) => self.fail(format!("{}: opening the journal in {}: {e}", self.rank_label(), self.dest.display())),
        });
        let temp_dir = journal::temp_dir(self.dest);
        if writes && let Err(e) = fs::create_dir_all(&temp_dir) {
            self.fail(format!("{}: creating {}: {e}", self.rank_label(), temp_dir.display()));
        }
        let direct = journal.as_ref().map(|journal| Direct { journal, temp_dir: &temp_dir });
        // What this node needs from other ranks' reads (the rest its own
        // readers write).
        let remote: Vec<usize> = match &direct {
            Some(_) => node_files.iter().copied().filter(|&f| self.plan.reader(f) != Some(rank)).collect(),
            None => Vec::new(),
        };
        let reading = AtomicBool::new(true);
        std::thread::scope(|s| {
            let (rx_ref, budget_ref, reading_ref, remote, temp_dir) = (&rx, &budget, &reading, &remote, &temp_dir);
            let receiver = journal
                .as_ref()
                .map(|journal| self.spawn(s, "stager-receive", move || self.receive(comm, remote, journal, temp_dir, reading_ref)));
            let sender = self.spawn(s, "stager-send", move || self.send(comm, rx_ref, budget_ref));
            let (next, budget, totals, reads, direct) = (&next, &budget, &totals, &reads, direct.as_ref());
            let readers: Vec<_> = (0..self.config.threads.max(1))
                .map(|_| {
                    let tx = tx.clone();
                    self.spawn(s, "stager-read", move || {
                        let begin = Instant::now();
                        let mut bytes = 0u64;
                        while let Some(&f) = reads.get(next.fetch_add(1, Ordering::Relaxed)) {
                            let here = direct.filter(|_| self.plan.destinations(f).contains(&self.node));
                            bytes += self.read_file(f, &tx, budget, here, totals);
                        }
                        let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
                        t.read += bytes;
                        t.read_secs = t.read_secs.max(begin.elapsed().as_secs_f64());
                    })
                })
                .collect();
            drop(tx);
            for r in readers {
                let _ = r.join();
            }
            reading.store(false, Ordering::SeqCst);
            stats.moved_bytes = sender.join().unwrap_or(0);
            if let Some(receiver) = receiver {
                let (written, first_write, files) = receiver.join().unwrap_or((0, None, 0));
                stats.written_bytes = written;
                stats.files_written = files;
                let t = totals.lock().unwrap_or_else(|p| p.into_inner());
                let first = [first_write, t.first_write].into_iter().flatten().min();
                stats.write_secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64());
            }
        });
        let t = totals.into_inner().unwrap_or_else(|p| p.into_inner());
        stats.read_bytes = t.read;
        stats.read_secs = t.read_secs;
        stats.written_bytes += t.written;
        stats.files_written += t.files_written;
        stats
    }

    /// Read file `f` into budgeted chunks for the sender, writing it into
    /// this node's destination on the way if `direct`; returns bytes read.
    fn read_file(
        &self,
        f: usize,
        tx: &crossbeam_channel::Sender<Chunk>,
        pool: &Pool,
        direct: Option<&Direct>,
        totals: &Mutex<ReadTotals>,
    ) -> u64 {
        let entry = &self.manifest.files[f];
        let path = self.config.source.join(&entry.path);
        let fail = |e: io::Error| -> ! {
            self.fail(format!("{}: reading source file {}: {e}", self.rank_label(), path.display()))
        };
        let mut file = File::open(&path).unwrap_or_else(|e| fail(e));
        let mut out = direct.map(|d| self.create_temp(d.temp_dir, f));
        if out.is_some() {
            totals.lock().unwrap_or_else(|p| p.into_inner()).first_write.get_or_insert_with(Instant::now);
        }
        let mut hash = StreamingChecksum::new();
        let chunk = self.config.chunk_size;
        let sends = self.plan.destinations(f).iter().any(|&node| self.plan.writer(node) != Some(self.rank));
        loop {
            let remaining = entry.bytes.saturating_sub(hash.bytes());
            let want = (remaining as usize).min(chunk);
            let mut buffer = pool.take();
            let message = buffer.as_mut_slice();
            let offset = hash.bytes();
            let mut at = offset;
            let mut write_error = None;
            let filled = read_hashing(&mut file, &mut message[..want], &mut hash, |piece| {
                if let Some((out, _)) = &out
                    && write_error.is_none()
                {
                    match out.write_all_at(piece, at) {
                        Ok(()) => self.counters.add_bytes(piece.len() as u64),
                        Err(e) => write_error = Some(e),
                    }
                }
                at += piece.len() as u64;
            })
            .unwrap_or_else(|e| fail(e));
            if let Some(e) = write_error {
                self.fail(format!("{}: writing {} into {}: {e}", self.rank_label(), entry.path, self.dest.display()));
            }
            if let Some(l) = self.limiter {
                l.acquire(filled as u64);
            }
            let at_end = hash.bytes() >= entry.bytes;
            let last = if at_end || filled < want {
                // Check the whole file before its last chunk leaves this rank
                // (or its copy here is renamed into place).
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
            if !sends {
                pool.give(buffer);
            } else if tx.send(Chunk { file: f, message: buffer, len: filled + TRAILER }).is_err() {
                self.fail(format!("{}: the sender thread stopped", self.rank_label()));
            }
            if last {
                if let (Some((file, temp)), Some(d)) = (out.take(), direct) {
                    self.finish_direct(file, &temp, f, d, totals);
                }
                return hash.bytes();
            }
        }
    }

    /// A temporary file for `f` in `temp_dir`, unless this rank is failing
    /// (then it waits for the end: the temporary files are being cleared).
    fn create_temp(&self, temp_dir: &Path, f: usize) -> (File, PathBuf) {
        let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.failing.load(Ordering::SeqCst) {
            drop(_guard);
            loop {
                std::thread::park();
            }
        }
        let temp = journal::part_path(temp_dir, f);
        match File::create(&temp) {
            Ok(file) => (file, temp),
            Err(e) => self.fail(format!("{}: creating {}: {e}", self.rank_label(), temp.display())),
        }
    }

    /// Sync, rename into place and journal a file this rank wrote itself.
    fn finish_direct(&self, file: File, temp: &Path, f: usize, direct: &Direct, totals: &Mutex<ReadTotals>) {
        let entry = &self.manifest.files[f];
        if let Err(e) = file.sync_all() {
            self.fail(format!("{}: syncing {}: {e}", self.rank_label(), entry.path));
        }
        drop(file);
        let finished = {
            let _guard = self.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
            if self.failing.load(Ordering::SeqCst) {
                return;
            }
            self.finish_file(temp, f, direct.journal)
        };
        if let Err(message) = finished {
            self.fail(message);
        }
        self.counters.add_item();
        let mut t = totals.lock().unwrap_or_else(|p| p.into_inner());
        t.written += entry.bytes;
        t.files_written += 1;
    }

    /// Send each chunk to the writer rank of every node that needs it, except
    /// this rank itself (its readers wrote that copy). Returns bytes sent
    /// off-node. Up to [`SEND_BATCH`] chunks that are ready go out together,
    /// so a receiver finds the next message waiting instead of each chunk
    /// paying a round trip.
    fn send(&self, comm: &ThreadComm, rx: &crossbeam_channel::Receiver<Chunk>, pool: &Pool) -> u64 {
        let mut moved = 0u64;
        let mut batch: Vec<Chunk> = Vec::with_capacity(SEND_BATCH);
        while let Ok(first) = rx.recv() {
            batch.push(first);
            while batch.len() < SEND_BATCH
                && let Ok(more) = rx.try_recv()
            {
                batch.push(more);
            }
            mpi::request::scope(|scope| {
                let mut requests = Vec::new();
                for chunk in &batch {
                    for &node in self.plan.destinations(chunk.file) {
                        let Some(writer) = self.plan.writer(node) else { continue };
                        if writer == self.rank {
                            continue;
                        }
                        let target = comm.comm().process_at_rank(writer as i32);
                        let message = &chunk.message.as_slice()[..chunk.len];
                        requests.push(target.immediate_send_with_tag(scope, message, TAG_DATA));
                        if node != self.node {
                            moved += (chunk.len - TRAILER) as u64;
                        }
                    }
                }
                for request in requests {
                    wait_politely(request);
                }
            });
            for chunk in batch.drain(..) {
                pool.give(chunk.message);
            }
        }
        moved
    }

    /// Receive this node's files that other ranks read (`remote`), and
    /// listen for failure notices until they are all written and this rank's
    /// readers are done; returns (bytes written, first write, files).
    fn receive(
        &self,
        comm: &ThreadComm,
        remote: &[usize],
        journal: &Mutex<Journal>,
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
        let mut idle = 0u32;
        while writer.done < remote.len() || reading.load(Ordering::SeqCst) {
            // A failure notice jumps the queue of data waiting to be written.
            if let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_ABORT) {
                message.matched_receive_into(&mut [0u8; 0][..]);
                self.stop_for(status.source_rank());
            }
            let Some((message, status)) = comm.comm().any_process().immediate_matched_probe_with_tag(TAG_DATA) else {
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
            if let Err(message) = writer.chunk(&buffer.as_slice()[..count], status.source_rank() as usize) {
                self.fail(message);
            }
        }
        (writer.written, writer.first_write, writer.done as u64)
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
