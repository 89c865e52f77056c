//! DeepCAM HDF5 layout against real libhdf5 files.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(unsafe_code)]

use std::fs::File;

use formats::climate::{self, ChannelStats, ClimateError, ClimateShape, DATA, LABELS};

const SHAPE: ClimateShape = ClimateShape { height: 12, width: 20, channels: 3 };

fn sample() -> (Vec<f32>, Vec<i32>) {
    let data = (0..SHAPE.values()).map(|i| (i as f32).sin() * 100.0).collect();
    let labels = (0..SHAPE.pixels()).map(|i| (i % 3) as i32).collect();
    (data, labels)
}

#[test]
fn sample_round_trips_through_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data-0.h5");
    let (data, labels) = sample();
    climate::write_sample(&path, SHAPE, &data, &labels).unwrap();
    let back = climate::read_sample(&path, SHAPE).unwrap();
    assert_eq!(back.data, data);
    assert_eq!(back.labels, labels);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["data-0.h5"]);
}

#[test]
fn offset_and_mmap_read_equals_the_library_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data-1.h5");
    let (data, labels) = sample();
    climate::write_sample(&path, SHAPE, &data, &labels).unwrap();
    let library = climate::read_sample(&path, SHAPE).unwrap();

    let file = File::open(&path).unwrap();
    // SAFETY: test file written above and not modified while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let extent = climate::contiguous_extent(&path, DATA, &[SHAPE.height, SHAPE.width, SHAPE.channels]).unwrap();
    let bytes = &map[extent.offset as usize..(extent.offset + extent.len) as usize];
    let mapped: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(mapped, library.data);

    let extent = climate::contiguous_extent(&path, LABELS, &[SHAPE.height, SHAPE.width]).unwrap();
    let bytes = &map[extent.offset as usize..(extent.offset + extent.len) as usize];
    let mapped: Vec<i32> = bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(mapped, library.labels);
}

#[test]
fn missing_dataset_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("partial.h5");
    let file = formats::hdf5_file::create(&path).unwrap();
    file.new_dataset::<f32>().shape([SHAPE.height, SHAPE.width, SHAPE.channels]).create(DATA).unwrap();
    drop(file);
    let err = climate::read_sample(&path, SHAPE).unwrap_err();
    assert!(err.to_string().contains(LABELS), "{err}");
}

#[test]
fn wrong_shape_is_an_error_naming_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data-2.h5");
    let (data, labels) = sample();
    climate::write_sample(&path, SHAPE, &data, &labels).unwrap();
    let other = ClimateShape { height: 20, width: 12, channels: 3 };
    let err = climate::read_sample(&path, other).unwrap_err();
    assert!(matches!(&err, ClimateError::Shape { dataset, .. } if dataset == DATA), "{err}");
    assert!(err.to_string().contains("[12, 20, 3]"), "{err}");
}

#[test]
fn wrong_element_type_is_an_error_naming_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f64.h5");
    let file = formats::hdf5_file::create(&path).unwrap();
    let ds = file.new_dataset::<f64>().shape([SHAPE.height, SHAPE.width, SHAPE.channels]).create(DATA).unwrap();
    ds.write_raw(&vec![0f64; SHAPE.values()]).unwrap();
    let ds = file.new_dataset::<i32>().shape([SHAPE.height, SHAPE.width]).create(LABELS).unwrap();
    ds.write_raw(&vec![0i32; SHAPE.pixels()]).unwrap();
    drop(file);
    let err = climate::read_sample(&path, SHAPE).unwrap_err();
    assert!(matches!(&err, ClimateError::Dtype { dataset, .. } if dataset == DATA), "{err}");
}

#[test]
fn chunked_dataset_has_no_extent_but_reads_through_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chunked.h5");
    let (data, labels) = sample();
    let file = formats::hdf5_file::create(&path).unwrap();
    let ds = file
        .new_dataset::<f32>()
        .shape([SHAPE.height, SHAPE.width, SHAPE.channels])
        .chunk([4, 4, 3])
        .create(DATA)
        .unwrap();
    ds.write_raw(&data).unwrap();
    let ds = file.new_dataset::<i32>().shape([SHAPE.height, SHAPE.width]).create(LABELS).unwrap();
    ds.write_raw(&labels).unwrap();
    drop(file);
    let err = climate::contiguous_extent(&path, DATA, &[SHAPE.height, SHAPE.width, SHAPE.channels]).unwrap_err();
    assert!(matches!(err, ClimateError::NotContiguous { .. }), "{err}");
    assert_eq!(climate::read_sample(&path, SHAPE).unwrap().data, data);
}

#[test]
fn stats_round_trip_in_the_deepcam_layout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(climate::STATS_FILE);
    let stats = ChannelStats {
        count: 64,
        mean: vec![1.0, 2.0, 3.0],
        sqmean: vec![2.0, 5.0, 10.0],
        minval: vec![-1.0, 0.0, 1.0],
        maxval: vec![3.0, 4.0, 5.0],
    };
    climate::write_stats(&path, &stats).unwrap();
    assert_eq!(climate::read_stats(&path).unwrap(), stats);
    let bad = ChannelStats { minval: vec![0.0], ..stats };
    assert!(climate::write_stats(&path, &bad).is_err());
}

#[test]
fn writer_refuses_buffers_of_the_wrong_size() {
    let dir = tempfile::tempdir().unwrap();
    let err = climate::write_sample(&dir.path().join("x.h5"), SHAPE, &[0.0; 3], &[0; 3]).unwrap_err();
    assert!(err.to_string().contains("data holds 3 values"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
