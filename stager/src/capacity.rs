//! What a node reads again when it cannot hold every file it trains on.
//! With a global shuffle a node reads files in an order known in advance
//! (the samplers are pure functions of seed, epoch and rank), so when its
//! storage is full it can evict the file whose next use is furthest away
//! (Belady's rule, the choice NoPFS makes from the same knowledge) instead
//! of the least recently used one. [`replay`] runs a node's reads through
//! a store of a given capacity under either rule and counts the bytes that
//! must be read again. No I/O here.
//!
//! ```
//! use stager::capacity::{Eviction, replay};
//!
//! // Three files of 1 byte read in a cycle, room for two.
//! let reads = [0, 1, 2, 0, 1, 2, 0, 1, 2];
//! let sizes = [1, 1, 1];
//! assert_eq!(replay(&reads, &sizes, 2, Eviction::LeastRecentlyUsed).bytes_read, 9);
//! assert_eq!(replay(&reads, &sizes, 2, Eviction::FurthestNextUse).bytes_read, 6);
//! ```

pub use crate::peers::cache::Eviction;
use crate::peers::cache::replay_fetcher;

/// What a replay read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traffic {
    /// Bytes read into the store (or past it): every miss.
    pub bytes_read: u64,
    /// Bytes served from the store.
    pub bytes_held: u64,
    /// Reads that missed.
    pub misses: u64,
}

/// Replay `reads` (file indices in the order the node reads them, over
/// every epoch) through a store of `capacity` bytes holding whole files of
/// `sizes`. A miss reads the file into the store, the rule making room;
/// only a file larger than the whole store is read past it. Every file
/// goes through the store, even one read again later than everything held
/// (which Belady's bypass would leave out), because the service this
/// models serves each read from its cache. The service's own cache
/// ([`crate::peers::cache`]) with its fetcher one read ahead.
pub fn replay(reads: &[usize], sizes: &[u64], capacity: u64, rule: Eviction) -> Traffic {
    let mut traffic = Traffic::default();
    replay_fetcher(
        reads,
        sizes,
        (capacity, rule),
        1,
        |_| true,
        |at, held| {
            let size = sizes[reads[at]];
            if held {
                traffic.bytes_held += size;
            } else {
                traffic.bytes_read += size;
                traffic.misses += 1;
            }
        },
    );
    traffic
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn room_for_everything_reads_each_file_once_and_no_room_reads_every_time() {
        let reads = [3, 1, 3, 0, 2, 1, 0, 3];
        let sizes = [5, 7, 11, 13];
        let total: u64 = sizes.iter().sum();
        for rule in [Eviction::FurthestNextUse, Eviction::LeastRecentlyUsed] {
            let all = replay(&reads, &sizes, total, rule);
            assert_eq!((all.bytes_read, all.misses), (total, 4), "{rule:?}");
            let none = replay(&reads, &sizes, 0, rule);
            assert_eq!(none.misses, reads.len() as u64, "{rule:?}");
            assert_eq!(none.bytes_read, reads.iter().map(|&f| sizes[f]).sum::<u64>());
        }
    }

    /// The naive Belady simulation (every miss admitted): at each miss with
    /// a full store, evict the held file whose next use is furthest
    /// (scanning ahead).
    fn belady_misses(reads: &[usize], slots: usize) -> u64 {
        let mut held: Vec<usize> = Vec::new();
        let mut misses = 0;
        for (at, &file) in reads.iter().enumerate() {
            if held.contains(&file) {
                continue;
            }
            misses += 1;
            if slots == 0 {
                continue;
            }
            let next = |f: usize| reads[at + 1..].iter().position(|&g| g == f).unwrap_or(usize::MAX);
            if held.len() == slots {
                let (k, _) = held.iter().enumerate().max_by_key(|&(_, &f)| next(f)).unwrap();
                held.remove(k);
            }
            held.push(file);
        }
        misses
    }

    proptest! {
        /// With files of one size the rule is Belady's optimum: it matches
        /// a naive simulation of it and never misses more than LRU.
        #[test]
        fn furthest_next_use_is_beladys_optimum_and_never_worse_than_lru(
            reads in proptest::collection::vec(0usize..12, 0..200),
            slots in 0usize..12,
        ) {
            let sizes = vec![1u64; 12];
            let furthest = replay(&reads, &sizes, slots as u64, Eviction::FurthestNextUse);
            let lru = replay(&reads, &sizes, slots as u64, Eviction::LeastRecentlyUsed);
            prop_assert_eq!(furthest.misses, belady_misses(&reads, slots));
            prop_assert!(furthest.misses <= lru.misses);
            prop_assert_eq!(furthest.bytes_read + furthest.bytes_held, reads.len() as u64);
        }
    }
}
