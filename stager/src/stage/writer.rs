//! The writing side of a node.

use super::*;

/// The writing side of a node: chunks into temporary files, checked,
/// renamed into place and journaled when their last chunk arrives.
pub(super) struct NodeWriter<'c, 'a> {
    pub(super) ctx: &'c Context<'a>,
    pub(super) journal: &'c Journal,
    pub(super) temp_dir: PathBuf,
    pub(super) open: HashMap<usize, OpenFile>,
    pub(super) expected: std::collections::HashSet<usize>,
    pub(super) done: usize,
    pub(super) written: u64,
    pub(super) first_write: Option<Instant>,
}

pub(super) struct OpenFile {
    part: PartFile,
    hash: StreamingChecksum,
}

impl NodeWriter<'_, '_> {
    /// Write one chunk (`head` and its `data`) from rank `source`. Holds the
    /// context's temp lock until the file is placed, so a failing rank can
    /// clear the temporary files knowing none is being created.
    pub(super) fn chunk(&mut self, head: Head, data: &[u8], source: usize) -> Result<(), WriteError> {
        let ctx = self.ctx;
        let guard = ctx.temp_lock.lock().unwrap_or_else(|p| p.into_inner());
        if ctx.failing.load(Ordering::SeqCst) {
            return Ok(());
        }
        let (f, offset) = (head.file, head.offset);
        if !self.expected.contains(&f) || head.len != data.len() {
            return Err(WriteError::UnexpectedChunk { file: f, from: source });
        }
        let entry = &ctx.manifest.files[f];
        self.first_write.get_or_insert_with(Instant::now);
        let state = match self.open.entry(f) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let part = PartFile::create(&self.temp_dir, f)
                    .map_err(|source| WriteError::Create { path: entry.path.clone(), source })?;
                v.insert(OpenFile { part, hash: StreamingChecksum::new() })
            }
        };
        // Hash a cache-sized piece, then write it while it is still in
        // cache: a write of a whole chunk from a cold buffer copies each
        // byte from memory again.
        for (k, piece) in data.chunks(CACHE_PIECE).enumerate() {
            state.hash.update(piece);
            if let Err(source) = state.part.write_at(piece, offset + (k * CACHE_PIECE) as u64) {
                return Err(WriteError::Write { doing: "writing", path: entry.path.clone(), source });
            }
        }
        self.written += data.len() as u64;
        ctx.counters.add_bytes(data.len() as u64);
        if !head.last {
            return Ok(());
        }
        let Some(state) = self.open.remove(&f) else { return Ok(()) };
        if state.hash.bytes() != entry.bytes || state.hash.finish() != entry.xxh3 {
            return Err(WriteError::Differs {
                path: entry.path.clone().into(),
                how: "as it arrived",
                bytes: state.hash.bytes(),
                xxh3: state.hash.finish(),
                expected_bytes: entry.bytes,
                expected: entry.xxh3,
            });
        }
        let placed = ctx.place_file(state.part, f)?;
        drop(guard);
        ctx.journal_file(self.journal, placed)?;
        ctx.counters.add_item();
        self.done += 1;
        Ok(())
    }
}
