//! The benches' datasets, written once into the bench directory and reused:
//! 64 CosmoFlow samples of 128^3 x 4 (one per TFRecord file) and 64 DeepCAM
//! samples of 768 x 1152 x 16 with their stats.h5.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use formats::climate::{self, ChannelStats, ClimateShape};
use formats::cosmoflow::{CosmoSample, CosmoShape};
use formats::tfrecord::TfRecordFileWriter;
use loader::dataset::Dataset;
use loader::pipeline::{Loader, LoaderConfig};

/// Samples of each dataset.
pub const SAMPLES: usize = 64;

pub fn cosmo_files(dir: &Path) -> Vec<PathBuf> {
    let shape = CosmoShape::MLPERF;
    std::fs::create_dir_all(dir).unwrap();
    (0..SAMPLES)
        .map(|i| {
            let path = dir.join(format!("cosmo_{i:03}.tfrecord"));
            if !path.exists() {
                let x: Vec<i16> =
                    (0..shape.voxels()).map(|v| ((v.wrapping_mul(2654435761) >> 7) + i) as i16 & 15).collect();
                let sample = CosmoSample::new(shape, x, [0.1, 0.2, 0.3, 0.4]).unwrap();
                let mut w = TfRecordFileWriter::create(&path, false, false).unwrap();
                w.write_record(&sample.to_example_bytes()).unwrap();
                w.finish().unwrap();
            }
            path
        })
        .collect()
}

pub fn deepcam_files(dir: &Path) -> (Vec<PathBuf>, PathBuf) {
    let shape = ClimateShape::DEEPCAM;
    std::fs::create_dir_all(dir).unwrap();
    let stats = dir.join("stats.h5");
    if !stats.exists() {
        let c = shape.channels;
        let s = ChannelStats {
            count: SAMPLES as i64,
            mean: vec![0.0; c],
            sqmean: vec![1.0; c],
            minval: vec![-1.0; c],
            maxval: vec![1.0; c],
        };
        climate::write_stats(&stats, &s).unwrap();
    }
    let files = (0..SAMPLES)
        .map(|i| {
            let path = dir.join(format!("data-{i:03}.h5"));
            if !path.exists() {
                let data: Vec<f32> = (0..shape.values()).map(|v| ((v + i) % 200) as f32 / 100.0 - 1.0).collect();
                let labels: Vec<i32> = (0..shape.pixels()).map(|p| (p % 3) as i32).collect();
                climate::write_sample(&path, shape, &data, &labels).unwrap();
            }
            path
        })
        .collect();
    (files, stats)
}

/// The middle value.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The consumer's wait for batches as a share of the time it ran.
#[allow(dead_code, reason = "python-bench times its loaders itself")]
pub struct ConsumerWait {
    /// Over every epoch, the first batch of the first included: nothing can
    /// be prefetched before the loader starts, and the first epoch also
    /// allocates the batch buffers.
    pub all_epochs: f64,
    /// Over the epochs after the first: the steady state of a training run.
    pub after_first: f64,
}

/// `reps` epochs through one loader (`next_epoch` between them, as a trainer
/// runs); returns the median samples/s of an epoch and the consumer's wait.
#[allow(dead_code, reason = "python-bench times its loaders itself")]
pub fn epochs<D: Dataset + 'static>(
    ds: Arc<D>,
    config: LoaderConfig,
    reps: usize,
    consumer_work: Duration,
) -> (f64, ConsumerWait) {
    let order: Vec<usize> = (0..ds.len()).collect();
    let mut loader = Loader::new(ds.clone(), order.clone(), config);
    let mut rates = Vec::new();
    // (wait, elapsed) of every epoch
    let mut times = Vec::new();
    for rep in 0..reps {
        if rep > 0 {
            loader = loader.next_epoch(order.clone());
        }
        let started = Instant::now();
        while let Some(batch) = loader.next() {
            let batch = batch.unwrap();
            std::hint::black_box(&batch.x);
            if !consumer_work.is_zero() {
                std::thread::sleep(consumer_work);
            }
            loader.recycle(batch);
        }
        let m = loader.metrics();
        rates.push(ds.len() as f64 / started.elapsed().as_secs_f64());
        times.push((m.consumer_wait.as_secs_f64(), m.elapsed.as_secs_f64()));
    }
    let share = |t: &[(f64, f64)]| t.iter().map(|w| w.0).sum::<f64>() / t.iter().map(|w| w.1).sum::<f64>();
    let wait = ConsumerWait { all_epochs: share(&times), after_first: share(&times[1.min(times.len() - 1)..]) };
    (median(rates), wait)
}
