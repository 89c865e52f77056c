//! Which fetched files a node keeps, by the order its training reads them
//! (known in advance): before a file needed at read position `at` is
//! fetched, room is made by evicting the held file whose next read is
//! furthest from where the consumer stands (Belady's rule, as
//! [`crate::capacity`] models it). A held file read no later than `at` is
//! never evicted: it was fetched for a read still to come, and the
//! consumer may be waiting for it. When only such files are held, the
//! fetcher waits for the consumer instead. No I/O here.

use std::collections::HashMap;

/// The fetched files a node holds, and when each is read.
#[derive(Debug, Clone)]
pub struct Cache {
    capacity: u64,
    used: u64,
    /// Held files and their sizes.
    held: HashMap<usize, u64>,
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
        Cache { capacity, used: 0, held: HashMap::new(), uses }
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
        // Files read after `at` (or never again), the furthest first.
        let mut candidates: Vec<(usize, usize)> =
            self.held.keys().map(|&f| (self.next_use(f, consumed), f)).filter(|&(next, _)| next > at).collect();
        candidates.sort_unstable_by(|a, b| b.cmp(a));
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
        }
        self.used -= freed;
        Room::Evict(evicted)
    }

    /// Record `file` of `size` bytes as held (room was made for it).
    pub fn insert(&mut self, file: usize, size: u64) {
        if self.held.insert(file, size).is_none() {
            self.used += size;
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
            cache.insert(file, 10);
        }
        // For file 2 at position 2, the consumer at 2: file 1 is read again
        // at 4, file 0 at 3: file 1 goes.
        assert_eq!(cache.make_room(10, 2, 2), Room::Evict(vec![1]));
        cache.insert(2, 10);
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
        cache.insert(0, 10);
        cache.insert(1, 10);
        // The consumer has read nothing: 0 and 1 are needed before 2.
        assert_eq!(cache.make_room(10, 2, 0), Room::Wait);
        assert_eq!(cache.used(), 20);
        // Once it has read 0, 0 is never needed again.
        assert_eq!(cache.make_room(10, 2, 1), Room::Evict(vec![0]));
        assert_eq!(cache.make_room(30, 2, 1), Room::TooLarge);
    }
}
