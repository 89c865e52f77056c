//! Datasets of byte records (TFRecord, `.npz`, HDF5 by name) through the
//! worker pool: each sample's bytes arrive whole, in order, and damage is
//! an error naming the file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use formats::example::Example;
use formats::tfrecord::TfRecordFileWriter;
use loader::dataset::{Dataset, DatasetError};
use loader::pipeline::{Loader, LoaderConfig};
use loader::records::{Hdf5Rows, NpzArrays, SampleAxis, TfRecords};

fn config(batch: usize) -> LoaderConfig {
    LoaderConfig { batch, workers: 2, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false }
}

/// Every sample's bytes, read through the pool in dataset order.
fn read_all(dataset: Arc<dyn Dataset>, batch: usize) -> Vec<Vec<u8>> {
    let order = (0..dataset.len()).collect();
    let mut out = Vec::new();
    for batch in Loader::new(dataset, order, config(batch)) {
        let batch = batch.unwrap();
        assert!(batch.x.is_empty(), "records fill no decoded values");
        out.extend((0..batch.len()).map(|k| batch.record(k).to_vec()));
    }
    out
}

/// Image `i` of DLIO's synthetic TFRecords: lengths differ between samples.
fn image(i: usize) -> Vec<u8> {
    (0..(10 + 7 * i)).map(|v| (v * 31 + i) as u8).collect()
}

fn write_tfrecords(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut i = 0;
    for (f, count) in [3, 2].into_iter().enumerate() {
        let path = dir.join(format!("img_{f}_of_2.tfrecord"));
        let mut w = TfRecordFileWriter::create(&path, false, f == 0).unwrap();
        for _ in 0..count {
            let example = Example::new().with_bytes("image", vec![image(i)]).with_int64s("size", vec![i as i64]);
            w.write_record(&example.to_bytes()).unwrap();
            i += 1;
        }
        w.finish().unwrap();
        paths.push(path);
    }
    paths
}

#[test]
fn tfrecord_images_arrive_whole_and_in_order_with_their_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_tfrecords(dir.path());
    let images = TfRecords::open(&paths, Some("image")).unwrap();
    assert!(images.holds_records());
    assert_eq!(images.len(), 5);
    assert_eq!(read_all(Arc::new(images), 2), (0..5).map(image).collect::<Vec<_>>());
}

#[test]
fn tfrecord_records_without_a_feature_are_the_serialized_examples() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_tfrecords(dir.path());
    let records = read_all(Arc::new(TfRecords::open(&paths, None).unwrap()), 3);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(Example::decode_bytes(record).unwrap().bytes("image").unwrap(), &[image(i)]);
    }
}

#[test]
fn a_damaged_tfrecord_payload_is_a_crc_error_and_a_missing_feature_names_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_tfrecords(dir.path());
    let mut bytes = std::fs::read(&paths[1]).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&paths[1], &bytes).unwrap();
    let images = TfRecords::open(&paths, Some("image")).unwrap();
    let mut out = Vec::new();
    let err = images.read_record(3, &mut out).unwrap_err();
    assert!(matches!(err, DatasetError::Record(_)), "{err}");
    assert!(err.to_string().contains("img_1_of_2.tfrecord"), "{err}");
    let wrong = TfRecords::open(&paths[..1], Some("label")).unwrap();
    let err = wrong.read_record(1, &mut out).unwrap_err().to_string();
    assert!(err.contains("img_0_of_2.tfrecord") && err.contains("\"label\""), "{err}");
}

/// The `.npy` bytes NumPy writes for a C-order array of bytes.
fn npy(shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut dict = format!("{{'descr': '|u1', 'fortran_order': False, 'shape': {tuple}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = formats::npy::MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

/// An `.npz` as `numpy.savez` (stored) or `savez_compressed` (deflated) lays it out.
fn write_npz(path: &Path, arrays: &[(&str, Vec<u8>)], deflated: bool) {
    let method = if deflated { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in arrays {
        w.start_file(format!("{name}.npy"), zip::write::FileOptions::default().compression_method(method)).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn npz_samples_on_the_last_axis_are_gathered_from_stored_and_deflated_archives() {
    let dir = tempfile::tempdir().unwrap();
    // (2, 3, 2): sample k is x[..., k]; 0..12 in C order.
    let x: Vec<u8> = (0..12).collect();
    let mut paths = Vec::new();
    for deflated in [false, true] {
        let path = dir.path().join(format!("x_{deflated}.npz"));
        write_npz(&path, &[("x", npy(&[2, 3, 2], &x)), ("y", npy(&[2], &[0, 0]))], deflated);
        paths.push(path);
    }
    let arrays = NpzArrays::open(&paths, "x", SampleAxis::Last).unwrap();
    assert_eq!(arrays.len(), 4);
    let even: Vec<u8> = (0..12).step_by(2).collect();
    let odd: Vec<u8> = (1..12).step_by(2).collect();
    assert_eq!(read_all(Arc::new(arrays), 3), vec![even.clone(), odd.clone(), even, odd]);
    let first = NpzArrays::open(&paths[..1], "x", SampleAxis::First).unwrap();
    assert_eq!(read_all(Arc::new(first), 1), vec![(0..6).collect::<Vec<u8>>(), (6..12).collect()]);
}

#[test]
fn an_npz_without_the_array_or_with_a_short_array_is_refused_at_open_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.npz");
    write_npz(&path, &[("y", npy(&[2], &[0, 0]))], false);
    let err = NpzArrays::open(&[&path], "x", SampleAxis::Last).err().unwrap().to_string();
    assert!(err.contains("a.npz") && err.contains("\"x\""), "{err}");
    write_npz(&path, &[("x", npy(&[4, 4], &[1; 10]))], false);
    let err = NpzArrays::open(&[&path], "x", SampleAxis::Last).err().unwrap().to_string();
    assert!(err.contains("a.npz") && err.contains("[4, 4]"), "{err}");
    std::fs::write(&path, b"not a zip archive at all").unwrap();
    let err = NpzArrays::open(&[&path], "x", SampleAxis::Last).err().unwrap().to_string();
    assert!(err.contains("a.npz") && err.contains("ZIP"), "{err}");
}

fn write_h5(path: &Path, rows: usize, chunked: bool) -> Vec<u8> {
    let data: Vec<u8> = (0..rows * 12).map(|v| (v * 7) as u8).collect();
    let file = formats::hdf5_file::create(path).unwrap();
    let builder = file.new_dataset::<u8>().shape([rows, 3, 4]);
    let ds = if chunked { builder.chunk([1, 3, 4]).create("records") } else { builder.create("records") }.unwrap();
    ds.write_raw(&data).unwrap();
    file.new_dataset::<i64>().shape([rows]).create("labels").unwrap();
    data
}

#[test]
fn hdf5_rows_come_from_the_map_when_contiguous_and_through_libhdf5_when_chunked() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.h5"), dir.path().join("b.h5"));
    let mut expected = write_h5(&a, 3, false);
    expected.extend(write_h5(&b, 2, true));
    let rows = Hdf5Rows::open(&[&a, &b], "records").unwrap();
    assert_eq!(rows.len(), 5);
    let got = read_all(Arc::new(rows), 2);
    assert_eq!(got, expected.chunks(12).map(<[u8]>::to_vec).collect::<Vec<_>>());
    let err = Hdf5Rows::open(&[&a], "images").err().unwrap().to_string();
    assert!(err.contains("a.h5") && err.contains("images"), "{err}");
}

#[test]
fn a_records_dataset_refuses_to_decode_values_and_a_values_dataset_has_no_records() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.h5");
    write_h5(&a, 1, false);
    let rows = Hdf5Rows::open(&[&a], "records").unwrap();
    assert!(matches!(rows.read_into(0, &mut [], &mut []), Err(DatasetError::NotValues { index: 0 })));
    let slice = loader::dataset::Slice::new(Arc::new(rows), 0, 1);
    let mut out = Vec::new();
    assert_eq!(slice.read_record(0, &mut out).unwrap(), 12);
    assert_eq!(out.len(), 12);
}

/// DLIO's UNet3D files: one sample each, of lengths that differ. Every
/// batch buffer is made at once as large as the largest batch the dataset
/// can make (its two longest samples here), so a recycled buffer never
/// grows into a batch of longer samples; the bytes still arrive whole.
#[test]
fn record_batch_buffers_are_made_at_the_largest_batch_size_from_the_first_batch() {
    let dir = tempfile::tempdir().unwrap();
    let lengths = [300usize, 50, 700, 120, 900, 10];
    let mut paths = Vec::new();
    for (i, &len) in lengths.iter().enumerate() {
        let path = dir.path().join(format!("img_{i}.npz"));
        let x: Vec<u8> = (0..len).map(|v| (v + i) as u8).collect();
        write_npz(&path, &[("x", npy(&[len, 1], &x))], false);
        paths.push(path);
    }
    let arrays: Arc<dyn Dataset> = Arc::new(NpzArrays::open(&paths, "x", SampleAxis::Last).unwrap());
    assert_eq!(arrays.record_len(4), Some(900));
    let largest = 900 + 700;
    let order: Vec<usize> = (0..lengths.len()).collect();
    let loader = Loader::new(arrays, order, config(2));
    let recycler = loader.recycler();
    let mut seen = 0;
    for batch in loader {
        let batch = batch.unwrap();
        assert!(batch.records.capacity() >= largest, "batch {}: room for {}", batch.number, batch.records.capacity());
        for k in 0..batch.len() {
            let i = batch.indices[k];
            assert_eq!(batch.record(k), &(0..lengths[i]).map(|v| (v + i) as u8).collect::<Vec<u8>>()[..]);
            seen += 1;
        }
        recycler.recycle(batch);
    }
    assert_eq!(seen, lengths.len());
}

/// Stocking makes what is missing, within the free memory less a margin,
/// and anything missing where the kernel does not say what is free.
#[test]
fn stocking_takes_no_more_than_the_free_memory_less_a_margin() {
    use loader::pipeline::buffers_to_stock;
    const GIB: u64 = 1 << 30;
    assert_eq!(buffers_to_stock(9, 0, 1 << 20, None), 9);
    assert_eq!(buffers_to_stock(9, 4, 1 << 20, Some(64 * GIB)), 5, "those held count");
    assert_eq!(buffers_to_stock(9, 0, 1 << 30, Some(5 * GIB)), 4, "a GiB stays free");
    assert_eq!(buffers_to_stock(9, 0, 1 << 30, Some(GIB / 2)), 0);
    assert_eq!(buffers_to_stock(3, 5, 1 << 20, Some(64 * GIB)), 0);
    assert_eq!(buffers_to_stock(2, 0, 0, Some(0)), 2, "empty buffers take nothing");
}

/// Buffers stocked before the first epoch (`Recycler::stock`, what
/// `Loader.make_buffers` does while a job sets up) are the ones its first
/// batches are read into, each made once at the largest batch's size; a
/// dataset of records of unknown lengths gets none.
#[test]
fn stocked_record_buffers_carry_the_first_batches() {
    let dir = tempfile::tempdir().unwrap();
    let lengths = [300usize, 50, 700, 120, 900, 10];
    let mut paths = Vec::new();
    for (i, &len) in lengths.iter().enumerate() {
        let path = dir.path().join(format!("img_{i}.npz"));
        let x: Vec<u8> = (0..len).map(|v| (v * 3 + i) as u8).collect();
        write_npz(&path, &[("x", npy(&[len, 1], &x))], false);
        paths.push(path);
    }
    let arrays: Arc<dyn Dataset> = Arc::new(NpzArrays::open(&paths, "x", SampleAxis::Last).unwrap());
    let buffers = loader::pipeline::Recycler::default();
    assert_eq!(buffers.stock(&*arrays, 2, 3), 3 * (900 + 700));
    assert_eq!(buffers.stock(&*arrays, 2, 3), 0, "stocking again makes nothing: three are held");
    let order: Vec<usize> = (0..lengths.len()).collect();
    let mut config = config(2);
    config.workers = 1;
    config.prefetch = 1;
    let loader = Loader::resume_with_buffers(arrays, order, config, 0, buffers.clone());
    let mut seen = 0;
    for batch in loader {
        let batch = batch.unwrap();
        assert_eq!(batch.records.capacity(), 900 + 700, "batch {} in a stocked buffer", batch.number);
        for k in 0..batch.len() {
            let i = batch.indices[k];
            assert_eq!(batch.record(k), &(0..lengths[i]).map(|v| (v * 3 + i) as u8).collect::<Vec<u8>>()[..]);
            seen += 1;
        }
        buffers.recycle(batch);
    }
    assert_eq!(seen, lengths.len());

    let tfrecords = write_tfrecords(dir.path());
    let unknown: Arc<dyn Dataset> = Arc::new(TfRecords::open(&tfrecords, None).unwrap());
    assert_eq!(loader::pipeline::Recycler::default().stock(&*unknown, 2, 3), 0);
}
