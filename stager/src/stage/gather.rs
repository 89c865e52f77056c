//! Whole small files a reader gathers for other nodes: read straight into
//! one pool buffer laid out as a pack (a [`Head`] then the file's bytes,
//! again and again), which the sender passes to MPI as it is. Packing in the
//! sender copied every byte of every small file once more, the largest cost
//! the stager had that the naive copy has not (`docs/benchmarks.md`, many
//! small files).

use super::*;

/// A pack a reader is filling: the buffer, its bytes used, and the writer
/// ranks every file in it goes to.
pub(super) struct OpenPack {
    pub(super) buffer: AlignedBuffer,
    pub(super) used: usize,
    /// Bytes of the files in it (without their heads).
    pub(super) file_bytes: u64,
    pub(super) receivers: Vec<usize>,
}

impl OpenPack {
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buffer.as_slice()[..self.used]
    }
}

/// This node's copy of a file a reader reads, written piece by piece while
/// each piece is in cache; the first write error is kept for after the read.
pub(super) struct LocalCopy<'a> {
    out: Option<&'a PartFile>,
    counters: &'a Counters,
    at: u64,
    error: Option<io::Error>,
}

impl<'a> LocalCopy<'a> {
    pub(super) fn new(out: Option<&'a PartFile>, counters: &'a Counters, offset: u64) -> Self {
        LocalCopy { out, counters, at: offset, error: None }
    }

    pub(super) fn write(&mut self, piece: &[u8]) {
        if let Some(out) = self.out
            && self.error.is_none()
        {
            match out.write_at(piece, self.at) {
                Ok(()) => self.counters.add_bytes(piece.len() as u64),
                Err(e) => self.error = Some(e),
            }
        }
        self.at += piece.len() as u64;
    }

    pub(super) fn finish(self) -> Option<io::Error> {
        self.error
    }
}

impl Context<'_> {
    /// The largest file (with its head) a reader gathers into a pack: no
    /// more than a chunk, nor than a sender's pack for one receiver.
    pub(super) fn gather_limit(&self) -> usize {
        pack_limit(self.plan.nodes()).min(self.config.chunk_size)
    }

    /// Read the whole of file `f` (already open as `file`, small enough
    /// for [`Context::gather_limit`], needed by `receivers`) into `open`,
    /// sending the pack to the sender first when it is for other
    /// receivers or has no room; returns bytes read.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_into_pack(
        &self,
        f: usize,
        file: &mut File,
        receivers: Vec<usize>,
        open: &mut Option<OpenPack>,
        out: Option<&PartFile>,
        tx: &crossbeam_channel::Sender<Outgoing>,
        packs: &Pool,
    ) -> u64 {
        let entry = &self.manifest.files[f];
        let path = self.config.source.join(&entry.path);
        let len = entry.bytes as usize;
        if open.as_ref().is_some_and(|p| p.receivers != receivers || p.used + HEAD_LEN + len > self.gather_limit()) {
            self.send_pack(open.take(), tx);
        }
        let pack = open.get_or_insert_with(|| {
            packs.reserve();
            OpenPack { buffer: packs.buffer(), used: 0, file_bytes: 0, receivers }
        });
        let start = pack.used + HEAD_LEN;
        let mut hash = StreamingChecksum::new();
        let mut local = LocalCopy::new(out, self.counters, 0);
        let read = read_hashing(file, &mut pack.buffer.as_mut_slice()[start..start + len], &mut hash, |piece| {
            local.write(piece)
        });
        let filled = read.unwrap_or_else(|e| self.fail(format!("reading source file {}: {e}", path.display())));
        if let Some(e) = local.finish() {
            self.fail(format!("writing {} into {}: {e}", entry.path, self.dest.display()));
        }
        if let Some(l) = self.limiter {
            l.acquire(filled as u64);
        }
        self.check_whole(f, file, &hash);
        let head = Head { file: f, offset: 0, len: filled, last: true };
        pack.buffer.as_mut_slice()[pack.used..start].copy_from_slice(&head.encode());
        pack.used = start + filled;
        pack.file_bytes += filled as u64;
        filled as u64
    }

    /// Hand a reader's pack, if it has one, to the sender.
    pub(super) fn send_pack(&self, pack: Option<OpenPack>, tx: &crossbeam_channel::Sender<Outgoing>) {
        if let Some(pack) = pack
            && tx.send(Outgoing::Pack(pack)).is_err()
        {
            self.fail("the sender thread stopped".to_owned());
        }
    }

    /// Fail unless `file`, read to its end into `hash`, is the manifest's
    /// file `f`: its length, no byte past it, and its xxh3.
    pub(super) fn check_whole(&self, f: usize, file: &File, hash: &StreamingChecksum) {
        let entry = &self.manifest.files[f];
        let differs = |what: String| -> ! {
            let path = self.config.source.join(&entry.path);
            self.fail(format!("source file {} differs from the manifest ({what})", path.display()))
        };
        let longer = matches!(file.read_at(&mut [0u8; 1], entry.bytes), Ok(n) if n > 0);
        if longer {
            differs("longer".into());
        }
        if hash.bytes() != entry.bytes || hash.finish() != entry.xxh3 {
            differs(format!("{} bytes, xxh3 {} != {}", hash.bytes(), hash.finish(), entry.xxh3));
        }
    }
}

/// The part of a rank's `max_inflight` bytes given to packs of `limit`
/// bytes for `threads` readers: one open pack per reader and two on their
/// way, at most a quarter of the budget, at least one pack. The packs wait
/// for the receiving node's writer, which takes one message at a time:
/// more of them only let the readers run further ahead of it, in memory a
/// pack fills whole (`docs/benchmarks.md`, many small files).
pub(super) fn pack_budget(threads: usize, max_inflight: u64, limit: usize) -> u64 {
    let limit = limit.max(1) as u64;
    let packs = (threads as u64 + 2).min(max_inflight / 4 / limit).max(1);
    packs * limit
}

/// What a reader hands the sender.
pub(super) enum Outgoing {
    /// A chunk of one file.
    Chunk(Chunk),
    /// Whole small files, ready to send as one message.
    Pack(OpenPack),
}

#[cfg(test)]
mod tests {
    use super::pack_budget;

    #[test]
    fn packs_get_one_per_reader_and_two_more_within_a_quarter_of_the_budget() {
        const MIB: u64 = 1 << 20;
        assert_eq!(pack_budget(8, 128 * MIB, 1 << 20), 10 * MIB);
        assert_eq!(pack_budget(8, 16 * MIB, 1 << 20), 4 * MIB);
        assert_eq!(pack_budget(8, 8192, 8192), 8192, "at least one pack");
        assert_eq!(pack_budget(0, 128 * MIB, 0), 2, "no zero-sized packs");
    }
}
