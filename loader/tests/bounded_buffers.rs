//! A stocked recycler ([`Recycler::bounded`]) keeps its loaders to the
//! buffers it holds while the consumer has batches to take, and still
//! makes one for a batch the consumer would otherwise wait for forever.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::{Batch, Loader, LoaderConfig, Recycler, buffers_to_stock};

/// Record `i` is `LEN` bytes of value `i`.
struct Records;

const RECORDS: usize = 24;
const LEN: usize = 1000;

impl Dataset for Records {
    fn len(&self) -> usize {
        RECORDS
    }
    fn x_len(&self) -> usize {
        0
    }
    fn y_len(&self) -> usize {
        0
    }
    fn read_into(&self, index: usize, _: &mut [f32], _: &mut [f32]) -> Result<u64, DatasetError> {
        Err(DatasetError::NotRecords { index })
    }
    fn holds_records(&self) -> bool {
        true
    }
    fn read_record(&self, index: usize, out: &mut Vec<u8>) -> Result<u64, DatasetError> {
        out.extend(std::iter::repeat_n(index as u8, LEN));
        Ok(LEN as u64)
    }
    fn record_len(&self, _: usize) -> Option<usize> {
        Some(LEN)
    }
}

fn config(workers: usize, prefetch: usize) -> LoaderConfig {
    LoaderConfig { batch: 2, workers, prefetch, skip_corrupt: false, check_finite: false, drop_last: true }
}

/// A recycler holding `buffers` batch buffers, the free memory having
/// had room for no more.
fn stocked(buffers: usize, asked: usize) -> Recycler {
    let recycler = Recycler::default();
    let mut budget = buffers;
    let made = recycler.stock_within(&Records, 2, asked, || {
        // Room for what is left of the budget, above the margin.
        let free = (1u64 << 30) + (budget * 2 * LEN) as u64;
        budget = budget.saturating_sub(1);
        Some(free)
    });
    assert_eq!(made, buffers * 2 * LEN);
    assert_eq!(recycler.held(), buffers);
    recycler
}

fn check(batch: &Batch) {
    for (k, &i) in batch.indices.iter().enumerate() {
        assert!(batch.record(k).iter().all(|&b| b == i as u8), "record {i} whole");
    }
}

/// Every batch's buffer, by address, of an epoch whose consumer gives each
/// batch back before it asks for the next.
fn buffers_used(loader: Loader, recycler: &Recycler) -> HashSet<usize> {
    let mut used = HashSet::new();
    for batch in loader {
        let batch = batch.unwrap();
        check(&batch);
        used.insert(batch.records.as_ptr() as usize);
        recycler.recycle(batch);
    }
    used
}

#[test]
fn stocking_bounds_the_recycler_when_it_makes_buffers() {
    let whole = Recycler::default();
    whole.stock_within(&Records, 2, 3, || Some(64 << 30));
    assert!(whole.bounded(), "every buffer asked for was made");
    assert!(stocked(2, 3).bounded(), "the memory held two of three");
    let none = Recycler::default();
    assert_eq!(none.stock_within(&Records, 2, 3, || Some(0)), 0);
    assert!(!none.bounded(), "no memory for any buffer: the loaders make them as before");
}

#[test]
fn a_bounded_recycler_keeps_the_loader_to_its_buffers_while_the_consumer_has_batches_to_take() {
    let order: Vec<usize> = (0..RECORDS).collect();
    let bounded = stocked(2, 8);
    let used = buffers_used(
        Loader::resume_with_buffers(Arc::new(Records), order.clone(), config(1, 6), 0, bounded.clone()),
        &bounded,
    );
    assert!(used.len() <= 2, "the two stocked buffers carry every batch: {}", used.len());
    // Three workers: a buffer given back goes to the earliest batch waiting.
    let bounded = stocked(2, 8);
    let used = buffers_used(
        Loader::resume_with_buffers(Arc::new(Records), order.clone(), config(3, 6), 0, bounded.clone()),
        &bounded,
    );
    assert!(used.len() <= 2, "three workers, the two stocked buffers: {}", used.len());
    // Without the bound the same loader fills its window of 6 with new buffers.
    let unbounded = Recycler::default();
    let loader = Loader::resume_with_buffers(Arc::new(Records), order, config(1, 6), 0, unbounded.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    while loader.metrics().max_ready < 6 {
        assert!(Instant::now() < deadline, "the unbounded loader filled its window");
        std::thread::sleep(Duration::from_millis(1));
    }
    let used = buffers_used(loader, &unbounded);
    assert!(used.len() >= 6, "an unbounded loader makes what its window needs: {}", used.len());
}

/// Runs `consume` on another thread and fails if it has not finished
/// within a minute (a loader waiting for a buffer no one gives back).
fn finishes(consume: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        consume();
        done.send(()).unwrap();
    });
    finished.recv_timeout(Duration::from_secs(60)).expect("the consumer got every batch");
}

#[test]
fn a_consumer_that_keeps_every_batch_still_gets_them_all_from_a_bounded_recycler() {
    finishes(|| {
        let bounded = stocked(1, 4);
        let order: Vec<usize> = (0..RECORDS).collect();
        let kept: Vec<Batch> = Loader::resume_with_buffers(Arc::new(Records), order, config(3, 4), 0, bounded)
            .map(Result::unwrap)
            .collect();
        assert_eq!(kept.len(), RECORDS / 2);
        kept.iter().for_each(check);
    });
}

#[test]
fn the_next_epoch_started_early_waits_for_this_ones_buffers() {
    finishes(|| {
        let bounded = stocked(2, 8);
        let order: Vec<usize> = (0..RECORDS).collect();
        let mut this = Loader::resume_with_buffers(Arc::new(Records), order.clone(), config(1, 6), 0, bounded.clone());
        let first = this.next().unwrap().unwrap();
        // Started with most of this epoch to go: its workers wait for a
        // place in the window and then for a buffer, making none.
        let next = this.start_next_epoch(order.iter().rev().copied().collect());
        bounded.recycle(first);
        let mut used = buffers_used(this, &bounded);
        used.extend(buffers_used(next, &bounded));
        assert!(used.len() <= 2, "both epochs' batches in the two stocked buffers: {}", used.len());
    });
}

#[test]
fn a_buffer_larger_than_a_gib_leaves_one_more_free() {
    const GIB: u64 = 1 << 30;
    assert_eq!(buffers_to_stock(9, 0, 2 << 30, Some(10 * GIB)), 4, "two GiB kept free, not one");
    assert_eq!(buffers_to_stock(9, 0, 1 << 20, Some(2 * GIB)), 9, "small buffers: a GiB kept free");
}
