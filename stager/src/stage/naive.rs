//! The baseline copy: every node reads what it needs from the source. Its
//! ranks hear another rank's failure between files and stop as the
//! fan-out's do, clearing their node's temporary files.

use super::*;

impl Context<'_> {
    /// The baseline: this node's ranks split its files and copy them straight
    /// from the source, as `cp` does: pieces of at most [`CACHE_PIECE`], each
    /// hashed and written while it is in cache.
    pub(super) fn naive(&self, node_files: &[usize]) -> RankStats {
        let mut node_files = node_files.to_vec();
        if let ReadOrder::FirstNeeded(steps) = &self.config.order {
            node_files.sort_by_key(|&f| steps.get(f).copied().unwrap_or(u64::MAX));
        }
        let mine: Vec<usize> = node_files.iter().copied().skip(self.local_rank).step_by(self.local_size).collect();
        let next = AtomicUsize::new(0);
        let stats = Mutex::new(RankStats::default());
        let name = format!("journal.r{}.jsonl", self.rank);
        let journal = match Journal::open(self.dest, &name) {
            Ok(j) => j,
            Err(e) => self.fail(format!("opening the journal in {}: {e}", self.dest.display())),
        };
        if !mine.is_empty()
            && let Err(e) = journal::create_temp_dir(self.dest)
        {
            self.fail(format!("creating the temporary directory in {}: {e}", self.dest.display()));
        }
        let begin = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..self.config.threads.max(1) {
                self.spawn(s, "stager-copy", || {
                    let mut buffer = Vec::new();
                    while let Some(&f) = mine.get(next.fetch_add(1, Ordering::Relaxed)) {
                        // Between files, another rank's failure stops this
                        // one and clears its node's temporary files (a
                        // file being copied finishes first, within
                        // CLEAR_WAIT for files of a few GB).
                        if let Some(failed) = self.failure_notice() {
                            self.stop_for(failed);
                        }
                        self.stop_if_failing();
                        if let Err(e) = self.copy_directly(f, &journal, &mut buffer) {
                            // A peer of this node that is stopping cleared
                            // the temporary directory under this copy.
                            self.fail_unless_stopped(&journal::temp_dir(self.dest), cluster::logging::chain(&e));
                        }
                        let mut st = stats.lock().unwrap_or_else(|p| p.into_inner());
                        st.read_bytes += self.manifest.files[f].bytes;
                        st.written_bytes += self.manifest.files[f].bytes;
                        st.files_written += 1;
                    }
                });
            }
        });
        if let Err(e) = journal.commit() {
            self.fail(format!("journaling in {}: {e}", self.dest.display()));
        }
        let mut st = stats.into_inner().unwrap_or_else(|p| p.into_inner());
        st.read_secs = begin.elapsed().as_secs_f64();
        st.write_secs = st.read_secs;
        st
    }

    fn copy_directly(&self, f: usize, journal: &Journal, buffer: &mut Vec<u8>) -> Result<(), WriteError> {
        let entry = &self.manifest.files[f];
        let source = self.config.source.join(&entry.path);
        let out = PartFile::create(&journal::temp_dir(self.dest), f)
            .map_err(|source| WriteError::Create { path: entry.path.clone(), source })?;
        let (bytes, sum) =
            read_chunks(&source, self.config.chunk_size.min(CACHE_PIECE), self.limiter, buffer, |offset, data| {
                out.write_at(data, offset)?;
                self.counters.add_bytes(data.len() as u64);
                Ok(())
            })
            .map_err(|source| WriteError::Write { doing: "copying", path: entry.path.clone(), source })?;
        if bytes != entry.bytes || sum != entry.xxh3 {
            out.discard();
            return Err(WriteError::Differs {
                path: source,
                how: "as read",
                bytes,
                xxh3: sum,
                expected_bytes: entry.bytes,
                expected: entry.xxh3,
            });
        }
        let placed = self.place_file(out, f)?;
        self.journal_file(journal, placed)?;
        self.counters.add_item();
        Ok(())
    }
}
