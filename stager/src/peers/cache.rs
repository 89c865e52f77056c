//! Which fetched files a node keeps, by the order its training reads them
//! (known in advance): before a file needed at read position `at` is
//! fetched, room is made by evicting the held file whose next read is
//! furthest from where the consumer stands (Belady's rule), or, for
//! comparison, the one read longest ago. A held file read no later than
//! `at` is never evicted: it was fetched for a read still to come, and the
//! consumer may be waiting for it. When only such files are held, the
//! fetcher waits for the consumer instead. [`replay_fetcher`] runs a
//! node's reads through it as the service's fetcher does, for the models
//! of [`crate::capacity`] and [`crate::traffic`]. No I/O here.

use std::collections::HashMap;

/// Which file a full cache gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// The one read again last (or never): Belady's rule, possible because
    /// the order is known (the choice NoPFS makes from the same knowledge).
    FurthestNextUse,
    /// The one read longest ago.
    LeastRecentlyUsed,
}

/// The fetched files a node holds, and when each is read.
#[derive(Debug, Clone)]
pub struct Cache {
    capacity: u64,
    used: u64,
    rule: Eviction,
    /// Held files and their sizes.
    held: HashMap<usize, u64>,
    /// Each held file's latest read (fetch or hit) position.
    last_use: HashMap<usize, usize>,
    /// Each cached file's read positions, ascending.
    uses: HashMap<usize, Vec<usize>>,
}

/// What making room for a file came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Room {
    /// It fits once these files are deleted (possibly none).
    Evict(Vec<usize>),
    /// Every held file is read before (or where) it is: wait for the
    /// consumer to move on.
    Wait,
    /// It is larger than the whole cache.
    TooLarge,
}

impl Cache {
    /// A cache of `capacity` bytes for the node's `reads` (file indices in
    /// read order); `cached(file)` says which files go through it (the
    /// others the node holds itself).
    pub fn new(capacity: u64, reads: &[usize], cached: impl Fn(usize) -> bool) -> Cache {
        let mut uses: HashMap<usize, Vec<usize>> = HashMap::new();
        for (at, &file) in reads.iter().enumerate().filter(|&(_, &f)| cached(f)) {
            uses.entry(file).or_default().push(at);
        }
        Cache {
            capacity,
            used: 0,
            rule: Eviction::FurthestNextUse,
            held: HashMap::new(),
            last_use: HashMap::new(),
            uses,
        }
    }

    /// The same cache giving up files by `rule` (furthest next use by default).
    pub fn with_rule(self, rule: Eviction) -> Cache {
        Cache { rule, ..self }
    }

    /// A read at `at` found `file` held.
    pub fn hit(&mut self, file: usize, at: usize) {
        if let Some(last) = self.last_use.get_mut(&file) {
            *last = (*last).max(at);
        }
    }

    /// Whether `file` is held.
    pub fn holds(&self, file: usize) -> bool {
        self.held.contains_key(&file)
    }

    /// Bytes held.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// The first read of `file` at or after position `from` (`usize::MAX`: none).
    pub fn next_use(&self, file: usize, from: usize) -> usize {
        let Some(uses) = self.uses.get(&file) else { return usize::MAX };
        uses.get(uses.partition_point(|&at| at < from)).copied().unwrap_or(usize::MAX)
    }

    /// Make room for `size` bytes needed at read position `at`, the
    /// consumer standing at position `consumed` (every read before it done):
    /// the files to delete, removed from the cache's account already.
    pub fn make_room(&mut self, size: u64, at: usize, consumed: usize) -> Room {
        if size > self.capacity {
            return Room::TooLarge;
        }
        // Files read after `at` (or never again), the first to go first:
        // the furthest next use, or the oldest last use.
        let mut candidates: Vec<(usize, usize)> = self
            .held
            .keys()
            .filter(|&&f| self.next_use(f, consumed) > at)
            .map(|&f| match self.rule {
                Eviction::FurthestNextUse => (usize::MAX - self.next_use(f, consumed), f),
                Eviction::LeastRecentlyUsed => (self.last_use.get(&f).copied().unwrap_or(0), f),
            })
            .collect();
        candidates.sort_unstable();
        let mut evicted = Vec::new();
        let mut freed = 0u64;
        for &(_, file) in &candidates {
            if self.used - freed + size <= self.capacity {
                break;
            }
            freed += self.held[&file];
            evicted.push(file);
        }
        if self.used - freed + size > self.capacity {
            return Room::Wait;
        }
        for file in &evicted {
            self.held.remove(file);
            self.last_use.remove(file);
        }
        self.used -= freed;
        Room::Evict(evicted)
    }

    /// Record `file` of `size` bytes as held (room was made for it),
    /// fetched for the read at `at`.
    pub fn insert(&mut self, file: usize, size: u64, at: usize) {
        if self.held.insert(file, size).is_none() {
            self.used += size;
        }
        self.last_use.insert(file, at);
    }
}

/// Replay the fetcher over a node's `reads` (file indices in read order)
/// through a cache of `capacity` bytes, as `stager serve --global-shuffle`
/// runs it: files that `cached(file)` says go through the cache are
/// fetched in read order, each once the consumer stands less than
/// `window` reads behind it, and the consumer is taken to be as far
/// behind as the window lets it (a fetcher ahead of training, the case it
/// is built for), moving on when the fetcher must wait for it. Tells
/// `on_read(at, held)` for each cached read whether its file was already
/// held (`false`: fetched). A file larger than the whole cache is counted
/// as fetched and not kept (the service refuses it). With a window of one
/// read this is the textbook replay: Belady's rule with every file
/// admitted, or plain LRU.
pub fn replay_fetcher(
    reads: &[usize],
    sizes: &[u64],
    (capacity, rule): (u64, Eviction),
    window: usize,
    cached: impl Fn(usize) -> bool,
    mut on_read: impl FnMut(usize, bool),
) {
    let mut cache = Cache::new(capacity, reads, &cached).with_rule(rule);
    let window = window.max(1);
    let mut consumed = 0usize;
    for (at, &file) in reads.iter().enumerate() {
        if !cached(file) {
            continue;
        }
        consumed = consumed.max((at + 1).saturating_sub(window));
        if cache.holds(file) {
            cache.hit(file, at);
            on_read(at, true);
            continue;
        }
        on_read(at, false);
        loop {
            match cache.make_room(sizes[file], at, consumed) {
                Room::Evict(_) => {
                    cache.insert(file, sizes[file], at);
                    break;
                }
                Room::TooLarge => break,
                // Every held file is read before `at`: the consumer reads on.
                Room::Wait => consumed += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_read_again_last_goes_first_and_one_read_before_the_new_one_stays() {
        // Files 0, 1, 2 of 10 bytes, room for 2.
        let reads = [0, 1, 2, 0, 1, 0];
        let mut cache = Cache::new(20, &reads, |_| true);
        for (at, file) in [(0, 0), (1, 1)] {
            assert_eq!(cache.make_room(10, at, 0), Room::Evict(vec![]));
            cache.insert(file, 10, at);
        }
        // For file 2 at position 2, the consumer at 2: file 1 is read again
        // at 4, file 0 at 3: file 1 goes.
        assert_eq!(cache.make_room(10, 2, 2), Room::Evict(vec![1]));
        cache.insert(2, 10, 2);
        assert_eq!(cache.used(), 20);
        // File 1 again at 4, the consumer still at 2: file 2 is read there
        // and 0 at 3, both before 4: wait.
        assert_eq!(cache.make_room(10, 4, 2), Room::Wait);
        // Once 2 is read it is never read again, so it goes.
        assert_eq!(cache.make_room(10, 4, 3), Room::Evict(vec![2]));
    }

    #[test]
    fn files_read_before_the_new_one_make_the_fetcher_wait_for_the_consumer() {
        let reads = [0, 1, 2];
        let mut cache = Cache::new(20, &reads, |_| true);
        cache.insert(0, 10, 0);
        cache.insert(1, 10, 1);
        // The consumer has read nothing: 0 and 1 are needed before 2.
        assert_eq!(cache.make_room(10, 2, 0), Room::Wait);
        assert_eq!(cache.used(), 20);
        // Once it has read 0, 0 is never needed again.
        assert_eq!(cache.make_room(10, 2, 1), Room::Evict(vec![0]));
        assert_eq!(cache.make_room(30, 2, 1), Room::TooLarge);
    }

    #[test]
    fn lru_gives_up_the_file_read_longest_ago_but_never_one_still_to_be_read() {
        let reads = [0, 1, 0, 2, 1, 2];
        let mut cache = Cache::new(20, &reads, |_| true).with_rule(Eviction::LeastRecentlyUsed);
        cache.insert(0, 10, 0);
        cache.insert(1, 10, 1);
        cache.hit(0, 2);
        // For 2 at 3, the consumer at 3: 1 was used at 1, 0 at 2: 1 goes,
        // though it is read again and 0 never is.
        assert_eq!(cache.make_room(10, 3, 3), Room::Evict(vec![1]));
        cache.insert(2, 10, 3);
        // For 1 at 4 with the consumer at 3: 2 is still to be read (at 3)
        // and stays; 0 goes.
        assert_eq!(cache.make_room(10, 4, 3), Room::Evict(vec![0]));
    }

    fn fetched(reads: &[usize], sizes: &[u64], capacity: u64, window: usize) -> Vec<usize> {
        let mut fetched = Vec::new();
        replay_fetcher(
            reads,
            sizes,
            (capacity, Eviction::FurthestNextUse),
            window,
            |_| true,
            |at, held| {
                if !held {
                    fetched.push(at);
                }
            },
        );
        fetched
    }

    #[test]
    fn a_window_of_one_replays_beladys_rule_with_every_file_admitted() {
        // Room for 2 of 3 files read in a cycle: each miss evicts the file
        // read again last, which is the next one but one.
        let reads = [0, 1, 2, 0, 1, 2, 0, 1, 2];
        assert_eq!(fetched(&reads, &[1, 1, 1], 2, 1), vec![0, 1, 2, 4, 6, 8]);
        let lru = crate::capacity::replay(&reads, &[1, 1, 1], 2, Eviction::LeastRecentlyUsed);
        assert_eq!(lru.misses, 9);
    }

    #[test]
    fn a_wider_window_keeps_the_files_the_consumer_has_still_to_read() {
        // Room for 2 of 3 files. With the consumer at the fetcher, file 2
        // at 2 evicts file 1 (read again at 4, after file 0 at 3), and 0
        // and 2 are then held when read again. With the consumer two reads
        // behind, both held files still have a read to come when 2 is
        // fetched, so the fetcher waits for the consumer to read one and
        // evicts it: every read is a fetch.
        let reads = [0, 1, 2, 0, 1, 2, 0];
        assert_eq!(fetched(&reads, &[1, 1, 1], 2, 1), vec![0, 1, 2, 4, 6]);
        assert_eq!(fetched(&reads, &[1, 1, 1], 2, 3), vec![0, 1, 2, 3, 4, 5, 6]);
        // Reads of files not cached are never replayed, and a file larger
        // than the cache is fetched every time it is read.
        let mut seen = Vec::new();
        let cache = (2, Eviction::FurthestNextUse);
        replay_fetcher(&[0, 1, 0, 1], &[5, 1], cache, 1, |f| f == 0, |at, held| seen.push((at, held)));
        assert_eq!(seen, vec![(0, false), (2, false)]);
    }
}
