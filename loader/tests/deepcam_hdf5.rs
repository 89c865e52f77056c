//! DeepCAM samples written by `formats` into real HDF5 files, read back by
//! byte offset outside the HDF5 lock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use formats::climate::{self, ChannelStats, ClimateShape, DATA, LABELS};
use loader::dataset::Dataset;
use loader::deepcam::DeepcamDataset;

const SHAPE: ClimateShape = ClimateShape { height: 6, width: 10, channels: 3 };

fn data(i: usize) -> Vec<f32> {
    (0..SHAPE.values()).map(|v| ((v * 31 + i * 7) % 97) as f32 - 20.0 + (v % 3) as f32 * 100.0).collect()
}

fn labels(i: usize) -> Vec<i32> {
    (0..SHAPE.pixels()).map(|p| ((p + i) % 3) as i32).collect()
}

fn stats() -> ChannelStats {
    ChannelStats {
        count: 3,
        mean: vec![0.0; 3],
        sqmean: vec![1.0; 3],
        minval: vec![-20.0, 80.0, 180.0],
        maxval: vec![76.0, 176.0, 276.0],
    }
}

fn write(dir: &Path) -> (Vec<PathBuf>, PathBuf) {
    let paths: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("data-{i}.h5"))).collect();
    for (i, p) in paths.iter().enumerate() {
        climate::write_sample(p, SHAPE, &data(i), &labels(i)).unwrap();
    }
    let stats_path = dir.join("stats.h5");
    climate::write_stats(&stats_path, &stats()).unwrap();
    (paths, stats_path)
}

fn expected_chw(i: usize) -> Vec<f32> {
    let s = stats();
    let (c, hw) = (SHAPE.channels, SHAPE.pixels());
    let mut out = vec![0f32; SHAPE.values()];
    for (k, v) in data(i).into_iter().enumerate() {
        let (p, ch) = (k / c, k % c);
        out[ch * hw + p] = (v - s.minval[ch]) / (s.maxval[ch] - s.minval[ch]);
    }
    out
}

#[test]
fn samples_are_min_max_normalised_and_channels_first() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, stats) = write(dir.path());
    let ds = DeepcamDataset::open(&paths, &stats, SHAPE).unwrap();
    let (mut x, mut y) = (vec![0f32; ds.x_len()], vec![0f32; ds.y_len()]);
    for i in 0..3 {
        ds.read_into(i, &mut x, &mut y).unwrap();
        assert_eq!(x, expected_chw(i));
        assert_eq!(y, labels(i).iter().map(|&l| l as f32).collect::<Vec<_>>());
    }
}

#[test]
fn chunked_files_go_through_the_library_with_the_same_result() {
    let dir = tempfile::tempdir().unwrap();
    let (mut paths, stats) = write(dir.path());
    let chunked = dir.path().join("chunked.h5");
    let file = formats::hdf5_file::create(&chunked).unwrap();
    let ds = file
        .new_dataset::<f32>()
        .shape([SHAPE.height, SHAPE.width, SHAPE.channels])
        .chunk([2, 5, 3])
        .create(DATA)
        .unwrap();
    ds.write_raw(&data(0)).unwrap();
    let ds = file.new_dataset::<i32>().shape([SHAPE.height, SHAPE.width]).create(LABELS).unwrap();
    ds.write_raw(&labels(0)).unwrap();
    drop(file);
    paths.push(chunked);
    let ds = DeepcamDataset::open(&paths, &stats, SHAPE).unwrap();
    let (mut x, mut y) = (vec![0f32; ds.x_len()], vec![0f32; ds.y_len()]);
    ds.read_into(3, &mut x, &mut y).unwrap();
    assert_eq!(x, expected_chw(0));
}

#[test]
fn a_missing_dataset_is_an_error_at_open_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut paths, stats) = write(dir.path());
    let bad = dir.path().join("bad.h5");
    let file = formats::hdf5_file::create(&bad).unwrap();
    let ds = file.new_dataset::<f32>().shape([SHAPE.height, SHAPE.width, SHAPE.channels]).create(DATA).unwrap();
    ds.write_raw(&data(0)).unwrap();
    drop(file);
    paths.push(bad);
    let err = DeepcamDataset::open(&paths, &stats, SHAPE).err().unwrap();
    assert!(err.to_string().contains(LABELS) && err.to_string().contains("bad.h5"), "{err}");
}

/// While one thread holds libhdf5's global lock, another reads a sample to
/// the end: sample reads do not take the lock, so workers run in parallel.
#[test]
fn reads_proceed_while_another_thread_holds_the_hdf5_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, stats) = write(dir.path());
    let ds = Arc::new(DeepcamDataset::open(&paths, &stats, SHAPE).unwrap());
    let (locked_tx, locked_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let holder = std::thread::spawn(move || {
        hdf5::sync::sync(|| {
            locked_tx.send(()).unwrap();
            // Keep the lock until the reader finished (or give up after 10 s).
            done_rx.recv_timeout(Duration::from_secs(10)).is_ok()
        })
    });
    locked_rx.recv().unwrap();
    let reader = {
        let ds = ds.clone();
        std::thread::spawn(move || {
            let (mut x, mut y) = (vec![0f32; ds.x_len()], vec![0f32; ds.y_len()]);
            for i in 0..3 {
                ds.read_into(i, &mut x, &mut y).unwrap();
            }
            done_tx.send(()).unwrap();
        })
    };
    assert!(holder.join().unwrap(), "the reader did not finish while the HDF5 lock was held");
    reader.join().unwrap();
}

/// With the class count given, a label outside 0..classes fails the read
/// with the file, row and column, mapped or through the library alike.
#[test]
fn labels_outside_the_classes_fail_the_read_naming_file_and_pixel() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, stats) = write(dir.path());
    let mut bad = labels(1);
    bad[SHAPE.width + 4] = 7;
    climate::write_sample(&paths[1], SHAPE, &data(1), &bad).unwrap();
    let ds = DeepcamDataset::open(&paths, &stats, SHAPE).unwrap().with_classes(3);
    let (mut x, mut y) = (vec![0f32; ds.x_len()], vec![0f32; ds.y_len()]);
    ds.read_into(0, &mut x, &mut y).unwrap();
    let err = ds.read_into(1, &mut x, &mut y).unwrap_err().to_string();
    assert!(err.contains("data-1.h5") && err.contains("label 7 at row 1, column 4"), "{err}");
    // Without a class count the labels pass as they are.
    let plain = DeepcamDataset::open(&paths, &stats, SHAPE).unwrap();
    plain.read_into(1, &mut x, &mut y).unwrap();
    assert_eq!(y[SHAPE.width + 4], 7.0);
}
