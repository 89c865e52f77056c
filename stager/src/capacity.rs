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
//! assert_eq!(replay(&reads, &sizes, 2, Eviction::FurthestNextUse).bytes_read, 5);
//! ```

use std::collections::BTreeSet;

/// Which file a full store gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// The one read again last (or never): Belady's rule.
    FurthestNextUse,
    /// The one read longest ago.
    LeastRecentlyUsed,
}

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
/// (which Belady's bypass would leave out), because the service that this
/// models serves each read from its cache: the file must be there until
/// the read is done.
pub fn replay(reads: &[usize], sizes: &[u64], capacity: u64, rule: Eviction) -> Traffic {
    let mut traffic = Traffic::default();
    replay_each(reads, sizes, capacity, rule, |at, held| {
        let size = sizes[reads[at]];
        if held {
            traffic.bytes_held += size;
        } else {
            traffic.bytes_read += size;
            traffic.misses += 1;
        }
    });
    traffic
}

/// [`replay`], telling `on_read(at, held)` for each read whether the store
/// held its file (`false`: it was read in).
pub fn replay_each(
    reads: &[usize],
    sizes: &[u64],
    capacity: u64,
    rule: Eviction,
    mut on_read: impl FnMut(usize, bool),
) {
    // The position of each read's next read of the same file.
    let mut next_use = vec![usize::MAX; reads.len()];
    let mut seen_at = vec![usize::MAX; sizes.len()];
    for (at, &file) in reads.iter().enumerate().rev() {
        next_use[at] = seen_at[file];
        seen_at[file] = at;
    }
    // Held files keyed by what the rule compares: the next use (evict the
    // largest) or the last use (evict the smallest).
    let mut held: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut key_of = vec![None::<usize>; sizes.len()];
    let mut used = 0u64;
    for (at, &file) in reads.iter().enumerate() {
        let size = sizes[file];
        let key = match rule {
            Eviction::FurthestNextUse => next_use[at],
            Eviction::LeastRecentlyUsed => at,
        };
        if let Some(old) = key_of[file] {
            on_read(at, true);
            held.remove(&(old, file));
            held.insert((key, file));
            key_of[file] = Some(key);
            continue;
        }
        on_read(at, false);
        if size > capacity {
            continue;
        }
        while used + size > capacity {
            let victim = match rule {
                Eviction::FurthestNextUse => held.last().copied(),
                Eviction::LeastRecentlyUsed => held.first().copied(),
            };
            let Some((victim_key, victim)) = victim else { break };
            held.remove(&(victim_key, victim));
            key_of[victim] = None;
            used -= sizes[victim];
        }
        if used + size <= capacity {
            held.insert((key, file));
            key_of[file] = Some(key);
            used += size;
        }
    }
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
