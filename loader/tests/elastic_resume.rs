//! An epoch stopped mid-way on 4 ranks and resumed on 2 and on 8 through
//! the loader itself ([`Loader::of_batches`] over [`loader::elastic`]):
//! the decoded batches, over all ranks, hold every sample the epoch had
//! left exactly once, with their own data, every rank the same number.

use std::sync::Arc;

use loader::dataset::{Dataset, DatasetError};
use loader::elastic::{EpochPosition, remaining_batches};
use loader::pipeline::{Loader, LoaderConfig, Recycler};
use loader::sampler::{DistributedSampler, Remainder};

/// Sample `i` holds `i` in every value.
struct Numbered(usize);

impl Dataset for Numbered {
    fn len(&self) -> usize {
        self.0
    }
    fn x_len(&self) -> usize {
        3
    }
    fn y_len(&self) -> usize {
        1
    }
    fn read_into(&self, index: usize, x: &mut [f32], y: &mut [f32]) -> Result<u64, DatasetError> {
        x.fill(index as f32);
        y.fill(index as f32);
        Ok(16)
    }
}

#[test]
fn an_epoch_stopped_on_4_ranks_resumes_on_2_and_on_8_with_each_remaining_sample_once() {
    let (len, batch, seed) = (103, 4, 11);
    let config =
        LoaderConfig { batch, workers: 2, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false };
    let dataset: Arc<dyn Dataset> = Arc::new(Numbered(len));
    let at4 = DistributedSampler { len, world: 4, rank: 0, seed, shuffle: true, remainder: Remainder::Pad };
    let sequence = at4.sequence(2);
    // Three steps on 4 ranks, then the job stops.
    let at = EpochPosition::after(2, 3, batch, 4, sequence.len());
    for world in [2, 8] {
        let mut left: Vec<usize> = sequence[at.taken..].to_vec();
        left.sort_unstable();
        let mut delivered = Vec::new();
        let mut steps = Vec::new();
        for rank in 0..world {
            let batches = remaining_batches(&sequence, at.taken, world, rank, batch);
            let loader = Loader::of_batches(dataset.clone(), batches.clone(), config, 0, Recycler::default());
            assert_eq!(loader.batches(), batches.len());
            let mut count = 0;
            for (got, want) in loader.zip(&batches) {
                let got = got.unwrap();
                assert_eq!(&got.indices, want, "world {world} rank {rank}");
                for (k, &id) in got.indices.iter().enumerate() {
                    assert!(got.x[k * 3..k * 3 + 3].iter().all(|&v| v == id as f32), "sample {id}'s own data");
                }
                delivered.extend(got.indices.iter().copied());
                count += 1;
            }
            steps.push(count);
        }
        delivered.sort_unstable();
        assert_eq!(delivered, left, "world {world}: the remaining samples, each once");
        assert!(steps.iter().all(|&s| s == steps[0]), "world {world}: steps per rank {steps:?}");
    }
}
