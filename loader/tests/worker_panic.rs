//! A dataset whose read panics: the loader's consumer gets an error for
//! that batch instead of waiting forever for a worker that died.

use std::sync::Arc;

use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::{Loader, LoaderConfig};

/// Samples hold their index; reading sample `bad` panics.
struct PanicsAt {
    bad: usize,
}

impl Dataset for PanicsAt {
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
        assert!(index != self.bad, "injected failure reading sample {index}");
        x.fill(index as f32);
        y.fill(index as f32);
        Ok(12)
    }
}

#[test]
fn a_panicking_worker_delivers_an_error_to_the_consumer_and_the_rest_still_arrives() {
    for skip_corrupt in [false, true] {
        let config =
            LoaderConfig { batch: 4, workers: 3, prefetch: 2, skip_corrupt, check_finite: false, drop_last: false };
        let loader = Loader::new(Arc::new(PanicsAt { bad: 9 }), (0..16).collect(), config);
        let results: Vec<_> = loader.collect();
        assert_eq!(results.len(), 4, "every batch is delivered, the failed one as an error");
        for (number, result) in results.iter().enumerate() {
            match (number, result) {
                (2, Err(DatasetError::WorkerPanicked { index, message })) => {
                    assert_eq!(*index, 9);
                    assert!(message.contains("injected failure reading sample 9"), "{message}");
                }
                (2, other) => panic!("batch 2 should be the panic, got {other:?}"),
                (_, Ok(batch)) => assert_eq!(batch.indices, (number * 4..number * 4 + 4).collect::<Vec<_>>()),
                (_, Err(e)) => panic!("batch {number}: {e}"),
            }
        }
    }
}
