//! The next epoch's loader started before this one is done
//! ([`Loader::start_next_epoch`]) decodes its first batches while the
//! consumer still holds this epoch's last, shares this one's prefetch
//! window, delivers its own order, and the workers of either run as batch
//! work for the scheduler.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::{Loader, LoaderConfig};

/// Sample `i` holds `i` in every value; the dataset notes every index it
/// read and the scheduling policy of the thread that read it.
#[derive(Default)]
struct Noting {
    read: Mutex<Vec<usize>>,
    policies: Mutex<Vec<i32>>,
}

impl Dataset for Noting {
    fn len(&self) -> usize {
        16
    }
    fn x_len(&self) -> usize {
        2
    }
    fn y_len(&self) -> usize {
        1
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        x.fill(index as f32);
        y.fill(index as f32);
        self.read.lock().unwrap().push(index);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: pid 0 asks about the calling thread.
            #[allow(unsafe_code)]
            let policy = unsafe { libc::sched_getscheduler(0) };
            self.policies.lock().unwrap().push(policy);
        }
        Ok(8)
    }
}

fn config() -> LoaderConfig {
    LoaderConfig { batch: 2, workers: 1, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: true }
}

fn indices(loader: &mut Loader, batches: usize) -> Vec<usize> {
    let mut seen = Vec::new();
    for _ in 0..batches {
        let batch = loader.next().expect("a batch").expect("a good batch");
        for (k, &i) in batch.indices.iter().enumerate() {
            assert!(batch.x[k * 2..k * 2 + 2].iter().all(|&v| v == i as f32), "sample {i}'s own values");
        }
        seen.extend(batch.indices.iter().copied());
        loader.recycle(batch);
    }
    seen
}

#[test]
fn the_next_epoch_decodes_its_first_batch_while_this_ones_last_is_still_held() {
    let dataset = Arc::new(Noting::default());
    let first: Vec<usize> = (0..8).collect();
    let second: Vec<usize> = (8..16).rev().collect();
    let mut this = Loader::new(dataset.clone(), first.clone(), config());
    // Every batch of this epoch taken, the last still held.
    let seen = indices(&mut this, 3);
    let last = this.next().expect("the last batch").expect("a good batch");
    let mut next = this.start_next_epoch(second.clone());
    // The new loader's first batch is read before anyone asks it for one.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dataset.read.lock().unwrap().iter().any(|&i| i == second[0]) {
        assert!(Instant::now() < deadline, "the next epoch read nothing before it was asked: {:?}", dataset.read);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(this.next().is_none(), "this epoch ends after its own batches");
    assert_eq!([seen, last.indices.clone()].concat(), first);
    this.recycle(last);
    drop(this);
    assert_eq!(indices(&mut next, 4), second);
    assert!(next.next().is_none());
}

/// Wait until `dataset` has read sample `i`.
fn wait_for_read(dataset: &Noting, i: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dataset.read.lock().unwrap().contains(&i) {
        assert!(Instant::now() < deadline, "sample {i} was never read: {:?}", dataset.read);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether `dataset` has read sample `i`, after giving a worker that
/// wrongly may read it ample time to.
fn read_after_a_while(dataset: &Noting, i: usize) -> bool {
    std::thread::sleep(Duration::from_millis(100));
    dataset.read.lock().unwrap().contains(&i)
}

#[test]
fn the_next_epoch_takes_up_the_window_place_by_place_as_this_one_delivers() {
    let dataset = Arc::new(Noting::default());
    // 4 batches of 2 each, a window of 2 batches.
    let first: Vec<usize> = (0..8).collect();
    let second: Vec<usize> = (8..16).collect();
    let mut this = Loader::new(dataset.clone(), first.clone(), config());
    let mut seen = indices(&mut this, 2);
    // This epoch's last 2 batches fill the window: the next one waits.
    wait_for_read(&dataset, 7);
    let mut next = this.start_next_epoch(second.clone());
    assert!(!read_after_a_while(&dataset, second[0]), "the next epoch read past a full window: {:?}", dataset.read);
    // One delivered: one place for the next epoch's first batch, not its second.
    seen.extend(indices(&mut this, 1));
    wait_for_read(&dataset, second[1]);
    assert!(!read_after_a_while(&dataset, second[2]), "two loaders held more than the window: {:?}", dataset.read);
    seen.extend(indices(&mut this, 1));
    assert_eq!(seen, first);
    assert!(this.next().is_none());
    wait_for_read(&dataset, second[3]);
    assert_eq!(indices(&mut next, 4), second);
    assert!(next.next().is_none());
}

#[test]
fn an_epoch_left_before_its_end_gives_the_next_one_the_whole_window() {
    let dataset = Arc::new(Noting::default());
    let mut this = Loader::new(dataset.clone(), (0..8).collect(), config());
    indices(&mut this, 1);
    let second: Vec<usize> = (8..16).collect();
    let mut next = this.start_next_epoch(second.clone());
    assert!(!read_after_a_while(&dataset, second[0]), "the next epoch read past a full window: {:?}", dataset.read);
    // A consumer that stops this epoch early (a step limit) drops it.
    drop(this);
    assert_eq!(indices(&mut next, 4), second);
    assert!(next.next().is_none());
}

#[test]
fn a_loader_dropped_before_its_end_gives_its_decoded_batches_buffers_back() {
    let dataset = Arc::new(Noting::default());
    // 4 batches of 2, a window of 2: the first two are decoded, none taken.
    let this = Loader::new(dataset.clone(), (0..8).collect(), config());
    wait_for_read(&dataset, 3);
    let buffers = this.recycler();
    // The window's two batches are ready (nothing else is read meanwhile).
    assert!(!read_after_a_while(&dataset, 4));
    drop(this);
    assert_eq!(buffers.held(), 2, "the undelivered batches' buffers are held for reuse");
}

#[cfg(target_os = "linux")]
#[test]
fn loader_workers_run_as_batch_work() {
    let dataset = Arc::new(Noting::default());
    let mut loader = Loader::new(dataset.clone(), (0..8).collect(), config());
    indices(&mut loader, 4);
    let policies = dataset.policies.lock().unwrap();
    assert_eq!(policies.len(), 8);
    assert!(policies.iter().all(|&p| p == libc::SCHED_BATCH), "worker policies {policies:?}");
}
