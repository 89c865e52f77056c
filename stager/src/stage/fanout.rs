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

struct Chunk {
    file: usize,
    /// Data and trailer; only the first `len` bytes are the message.
    message: AlignedBuffer,
    len: usize,
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
