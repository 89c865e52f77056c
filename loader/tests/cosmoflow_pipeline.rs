//! CosmoFlow TFRecords written by `formats`, read back through the dataset
//! and the worker pool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use formats::cosmoflow::{CosmoSample, CosmoShape};
use formats::tfrecord::TfRecordFileWriter;
use loader::dataset::{CosmoTransform, CosmoflowDataset, Dataset, DatasetError, decode_counts};
use loader::pipeline::{Loader, LoaderConfig};
use loader::sampler::{DistributedSampler, Remainder};

const SHAPE: CosmoShape = CosmoShape { size: 4, channels: 2 };

fn sample(id: usize) -> CosmoSample {
    let x = (0..SHAPE.voxels()).map(|v| ((v * 7 + id * 13) % 50) as i16).collect();
    CosmoSample::new(SHAPE, x, [id as f32 / 10.0, -0.5, 0.25, 1.0]).unwrap()
}

/// 3 files: 2 plain with sidecar index, 1 GZIP without; 7 samples in all.
fn write(dir: &std::path::Path) -> Vec<PathBuf> {
    let layout: [(usize, bool, bool); 3] = [(3, false, true), (1, true, false), (3, false, true)];
    let mut id = 0;
    let mut paths = Vec::new();
    for (i, (count, gzip, index)) in layout.into_iter().enumerate() {
        let path = dir.join(format!("f{i}.tfrecord"));
        let mut w = TfRecordFileWriter::create(&path, gzip, index).unwrap();
        for _ in 0..count {
            w.write_record(&sample(id).to_example_bytes()).unwrap();
            id += 1;
        }
        w.finish().unwrap();
        paths.push(path);
    }
    paths
}

/// Corrupt one byte in the middle of a file (inside one of its records).
fn flip_middle_byte(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(path, &bytes).unwrap();
}

fn expected_x(id: usize) -> Vec<f32> {
    let raw: Vec<u8> = sample(id).x().iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut out = vec![0f32; SHAPE.voxels()];
    decode_counts(&raw, &mut out, CosmoTransform::Log1p);
    out
}

#[test]
fn dataset_decodes_every_sample_with_log1p() {
    let dir = tempfile::tempdir().unwrap();
    let ds = CosmoflowDataset::open(&write(dir.path()), SHAPE, CosmoTransform::Log1p).unwrap();
    assert_eq!(ds.len(), 7);
    let (mut x, mut y) = (vec![0f32; ds.x_len()], vec![0f32; 4]);
    for id in 0..7 {
        ds.read_into(id, &mut x, &mut y).unwrap();
        assert_eq!(x, expected_x(id));
        assert_eq!(y, sample(id).y());
        let first = f32::from(sample(id).x()[0]);
        assert!((x[0] - (first + 1.0).ln()).abs() < 1e-6);
    }
    assert!(matches!(ds.read_into(7, &mut x, &mut y), Err(DatasetError::OutOfRange { .. })));
}

#[test]
fn log1p_decoding_equals_ln_1p_for_every_int16() {
    let raw: Vec<u8> = (i16::MIN..=i16::MAX).flat_map(|v| v.to_le_bytes()).collect();
    let mut out = vec![0f32; 65536];
    decode_counts(&raw, &mut out, CosmoTransform::Log1p);
    for (v, o) in (i16::MIN..=i16::MAX).zip(&out) {
        let want = f32::from(v).ln_1p();
        assert!(want.to_bits() == o.to_bits() || (want.is_nan() && o.is_nan()), "{v}: {o} != {want}");
    }
}

#[test]
fn divide_by_mean_gives_unit_mean() {
    let mut out = vec![0f32; 4];
    let raw: Vec<u8> = [1i16, 2, 3, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    decode_counts(&raw, &mut out, CosmoTransform::DivideByMean);
    assert_eq!(out, [1.0 / 3.0, 2.0 / 3.0, 1.0, 2.0]);
}

#[test]
fn loader_delivers_batches_in_sampler_order_within_the_prefetch_window() {
    let dir = tempfile::tempdir().unwrap();
    let ds = Arc::new(CosmoflowDataset::open(&write(dir.path()), SHAPE, CosmoTransform::Log1p).unwrap());
    let sampler = DistributedSampler { len: 7, world: 1, rank: 0, seed: 3, shuffle: true, remainder: Remainder::Pad };
    let order = sampler.indices(2);
    let mut loader = Loader::new(
        ds.clone(),
        order.clone(),
        LoaderConfig { batch: 2, workers: 3, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false },
    );
    assert_eq!(loader.batches(), 4);
    let mut seen = Vec::new();
    while let Some(batch) = loader.next() {
        let batch = batch.unwrap();
        assert_eq!(batch.number, seen.len() / 2 + usize::from(seen.len() % 2 == 1));
        for (k, &id) in batch.indices.iter().enumerate() {
            assert_eq!(&batch.x[k * ds.x_len()..(k + 1) * ds.x_len()], &expected_x(id)[..]);
        }
        seen.extend_from_slice(&batch.indices);
        std::thread::sleep(Duration::from_millis(20));
        loader.recycle(batch);
    }
    assert_eq!(seen, order);
    let m = loader.metrics();
    assert_eq!(m.samples, 7);
    assert!(m.max_ready <= 2, "{} batches were ready at once", m.max_ready);
    assert!(m.bytes > 0);
}

#[test]
fn corrupt_record_reaches_the_consumer_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write(dir.path());
    flip_middle_byte(&paths[2]);
    let ds = Arc::new(CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).unwrap());
    let loader = Loader::new(
        ds,
        (0..7).collect(),
        LoaderConfig { batch: 1, workers: 2, prefetch: 3, skip_corrupt: false, check_finite: false, drop_last: false },
    );
    let errors: Vec<String> = loader.filter_map(Result::err).map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("f2.tfrecord") && errors[0].contains("byte offset"), "{}", errors[0]);
}

#[test]
fn dropping_a_loader_mid_epoch_stops_its_workers() {
    let dir = tempfile::tempdir().unwrap();
    let ds = Arc::new(CosmoflowDataset::open(&write(dir.path()), SHAPE, CosmoTransform::Log1p).unwrap());
    let order: Vec<usize> = (0..7).cycle().take(700).collect();
    let mut loader = Loader::new(
        ds,
        order,
        LoaderConfig { batch: 1, workers: 4, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false },
    );
    loader.next().unwrap().unwrap();
    drop(loader); // joins every worker; a hang here fails the test by timeout
}

#[test]
fn a_resumed_loader_continues_mid_epoch_in_the_same_order() {
    let dir = tempfile::tempdir().unwrap();
    let ds = Arc::new(CosmoflowDataset::open(&write(dir.path()), SHAPE, CosmoTransform::Log1p).unwrap());
    let sampler = DistributedSampler { len: 7, world: 2, rank: 1, seed: 9, shuffle: true, remainder: Remainder::Pad };
    let config =
        LoaderConfig { batch: 1, workers: 2, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false };
    let full: Vec<Vec<usize>> =
        Loader::new(ds.clone(), sampler.indices(5), config).map(|b| b.unwrap().indices).collect();
    let mut first = Loader::new(ds.clone(), sampler.indices(5), config);
    let mut got: Vec<Vec<usize>> = (0..2).map(|_| first.next().unwrap().unwrap().indices).collect();
    let saved = first.position();
    drop(first);
    got.extend(Loader::resume(ds, sampler.indices(5), config, saved).map(|b| b.unwrap().indices));
    assert_eq!(saved, 2);
    assert_eq!(got, full);
}

#[test]
fn skip_corrupt_counts_and_skips_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write(dir.path());
    flip_middle_byte(&paths[2]);
    let ds = Arc::new(CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).unwrap());
    let mut loader = Loader::new(
        ds,
        (0..7).collect(),
        LoaderConfig { batch: 7, workers: 1, prefetch: 1, skip_corrupt: true, check_finite: false, drop_last: false },
    );
    let batch = loader.next().unwrap().unwrap();
    assert_eq!(batch.indices.len(), 6);
    assert_eq!(batch.x.len(), 6 * SHAPE.voxels());
    for (k, &id) in batch.indices.iter().enumerate() {
        assert_eq!(&batch.x[k * SHAPE.voxels()..(k + 1) * SHAPE.voxels()], &expected_x(id)[..]);
    }
    assert_eq!(loader.metrics().skipped, 1);
}

#[test]
fn from_manifest_opens_the_listed_files_and_names_a_missing_one() {
    use formats::manifest::{MANIFEST_FILE, ScanOptions, Schema, scan};
    let dir = tempfile::tempdir().unwrap();
    write(dir.path());
    let manifest = scan(dir.path(), &ScanOptions::new(Schema::cosmoflow(SHAPE))).unwrap();
    manifest.save(&dir.path().join(MANIFEST_FILE)).unwrap();
    let ds = CosmoflowDataset::from_manifest(dir.path(), &manifest, None, CosmoTransform::Log1p).unwrap();
    assert_eq!(ds.len(), 7);
    let f1 = manifest.files.iter().position(|f| f.path == "f1.tfrecord").unwrap();
    let only = CosmoflowDataset::from_manifest(dir.path(), &manifest, Some(&[f1]), CosmoTransform::Log1p).unwrap();
    assert_eq!(only.len(), 1);
    std::fs::remove_file(dir.path().join("f2.tfrecord")).unwrap();
    let err = CosmoflowDataset::from_manifest(dir.path(), &manifest, None, CosmoTransform::Log1p).err().unwrap();
    assert!(err.to_string().contains("f2.tfrecord") && err.to_string().contains("missing"), "{err}");
}

#[test]
fn next_epoch_delivers_the_new_order_in_the_old_buffers() {
    let dir = tempfile::tempdir().unwrap();
    let ds = Arc::new(CosmoflowDataset::open(&write(dir.path()), SHAPE, CosmoTransform::Log1p).unwrap());
    let config =
        LoaderConfig { batch: 2, workers: 2, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: false };
    let mut loader = Loader::new(ds.clone(), (0..7).collect(), config);
    let mut buffers = std::collections::HashSet::new();
    while let Some(batch) = loader.next() {
        let batch = batch.unwrap();
        buffers.insert(batch.x.as_ptr() as usize);
        loader.recycle(batch);
    }
    let order = vec![6, 0, 5, 1, 4, 2, 3];
    let mut loader = loader.next_epoch(order.clone());
    let mut seen = Vec::new();
    let mut reused = 0;
    while let Some(batch) = loader.next() {
        let batch = batch.unwrap();
        reused += usize::from(buffers.contains(&(batch.x.as_ptr() as usize)));
        for (k, &i) in batch.indices.iter().enumerate() {
            assert_eq!(&batch.x[k * SHAPE.voxels()..(k + 1) * SHAPE.voxels()], expected_x(i).as_slice());
        }
        seen.extend(batch.indices.iter().copied());
        loader.recycle(batch);
    }
    assert_eq!(seen, order);
    // Every buffer of the first epoch was recycled, so the first batches of
    // the next take them (how many there were depends on thread timing).
    let expected = buffers.len().min(order.len().div_ceil(2));
    assert!(reused >= expected, "only {reused} batches reused one of the {} old buffers", buffers.len());
}

/// The node-local directory deleted under a running loader (a job's
/// cleanup racing its training): the open files stay readable, so the
/// epoch finishes with exactly the right samples; opening the directory
/// again is an error naming a missing file, never a silently empty epoch.
#[test]
fn a_directory_deleted_under_a_running_loader_finishes_the_epoch_right_and_reopening_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let staged = dir.path().join("node0");
    std::fs::create_dir(&staged).unwrap();
    let paths = write(&staged);
    let ds = Arc::new(CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).unwrap());
    let order: Vec<usize> = (0..7).collect();
    let mut loader = Loader::new(
        ds.clone(),
        order.clone(),
        LoaderConfig { batch: 2, workers: 2, prefetch: 1, skip_corrupt: false, check_finite: false, drop_last: false },
    );
    let mut seen = Vec::new();
    while let Some(batch) = loader.next() {
        let batch = batch.unwrap();
        if seen.is_empty() {
            std::fs::remove_dir_all(&staged).unwrap();
        }
        for (k, &id) in batch.indices.iter().enumerate() {
            assert_eq!(&batch.x[k * ds.x_len()..(k + 1) * ds.x_len()], &expected_x(id)[..], "sample {id}");
        }
        seen.extend_from_slice(&batch.indices);
        loader.recycle(batch);
    }
    assert_eq!(seen, order);
    let message = CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).err().expect("reopened").to_string();
    assert!(message.contains("f0.tfrecord"), "{message}");
}

/// A staged file truncated after the dataset mapped it (during an epoch)
/// killed the reader with SIGBUS. Its samples are now an error naming the
/// file, or skipped with `skip_corrupt`; the other files' samples arrive.
#[test]
fn a_file_truncated_after_it_was_mapped_is_an_error_naming_it_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write(dir.path());
    let ds = Arc::new(CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).unwrap());
    std::fs::OpenOptions::new().write(true).open(&paths[2]).unwrap().set_len(10).unwrap();
    let config =
        LoaderConfig { batch: 7, workers: 1, prefetch: 1, skip_corrupt: true, check_finite: false, drop_last: false };
    let mut loader = Loader::new(ds.clone(), (0..7).collect(), config);
    let batch = loader.next().unwrap().unwrap();
    assert_eq!(batch.indices, [0, 1, 2, 3], "f2.tfrecord's three samples are skipped");
    assert_eq!(loader.metrics().skipped, 3);
    let strict = LoaderConfig { skip_corrupt: false, ..config };
    let e = Loader::new(ds, (0..7).collect(), strict).next().unwrap().unwrap_err().to_string();
    assert!(e.contains("f2.tfrecord") && e.contains("shrank from"), "{e}");
}

/// With `check_finite` a sample holding NaN or infinity is an error naming
/// its file and record, or skipped with `skip_corrupt`; without it the
/// values pass through as they are.
#[test]
fn check_finite_names_a_sample_with_nan_or_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nan.tfrecord");
    let mut w = TfRecordFileWriter::create(&path, false, true).unwrap();
    let good = sample(0);
    w.write_record(&good.to_example_bytes()).unwrap();
    let bad = CosmoSample::new(SHAPE, good.x().to_vec(), [0.1, f32::INFINITY, 0.0, 1.0]).unwrap();
    let offset = w.write_record(&bad.to_example_bytes()).unwrap();
    w.finish().unwrap();
    let ds = Arc::new(CosmoflowDataset::open(&[&path], SHAPE, CosmoTransform::Log1p).unwrap());
    let checked =
        LoaderConfig { batch: 2, workers: 1, prefetch: 1, skip_corrupt: false, check_finite: true, drop_last: false };
    let e = Loader::new(ds.clone(), vec![0, 1], checked).next().unwrap().unwrap_err();
    assert!(matches!(e, DatasetError::NonFinite { part: "target", position: 1, .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("sample 1 (") && text.contains("nan.tfrecord") && text.contains(&format!("byte offset {offset}"))
    );
    assert!(text.contains("target value 1 is inf"), "{text}");
    let skipping = LoaderConfig { skip_corrupt: true, ..checked };
    assert_eq!(Loader::new(ds.clone(), vec![0, 1], skipping).next().unwrap().unwrap().indices, [0]);
    let unchecked = LoaderConfig { check_finite: false, ..checked };
    assert_eq!(Loader::new(ds, vec![0, 1], unchecked).next().unwrap().unwrap().y[5], f32::INFINITY);
}

/// The next epoch can start mid-way, as a resumed run does: at batch 2 of
/// the new order, the samples of the batches before it are not read.
#[test]
fn next_epoch_at_a_position_starts_at_that_batch() {
    let dir = tempfile::tempdir().unwrap();
    let ds = Arc::new(CosmoflowDataset::open(&write(dir.path()), SHAPE, CosmoTransform::Log1p).unwrap());
    let config =
        LoaderConfig { batch: 2, workers: 2, prefetch: 2, skip_corrupt: false, check_finite: false, drop_last: true };
    let loader = Loader::new(ds, (0..7).collect(), config);
    let order = vec![6, 0, 5, 1, 4, 2, 3];
    assert_eq!(config.batches(order.len()), 3);
    assert_eq!(
        config.delivered(order.clone()),
        vec![6, 0, 5, 1, 4, 2],
        "the sample past the last whole batch is left out"
    );
    let mut loader = loader.next_epoch_at(order, 2);
    let batches: Vec<Vec<usize>> = loader.by_ref().map(|b| b.unwrap().indices).collect();
    assert_eq!(batches, vec![vec![4, 2]]);
    assert_eq!(loader.position(), 3);
}

/// SC18's selection: channels picked from each voxel in the order asked
/// (here both, swapped, and one alone) and targets likewise, decoded as the
/// whole volume decodes, for both transforms; a damaged record is still
/// caught; a channel or target the data lack is refused when selecting.
#[test]
fn a_selection_gives_the_asked_channels_and_targets_of_each_sample() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write(dir.path());
    for transform in [CosmoTransform::Log1p, CosmoTransform::DivideByMean] {
        let full = CosmoflowDataset::open(&paths, SHAPE, transform).unwrap();
        for (channels, targets) in [(vec![1, 0], vec![3, 0]), (vec![0], vec![0, 1, 2])] {
            let picked = CosmoflowDataset::open(&paths, SHAPE, transform)
                .unwrap()
                .select(channels.clone(), targets.clone())
                .unwrap();
            let voxels = SHAPE.size.pow(3);
            assert_eq!((picked.x_len(), picked.y_len()), (voxels * channels.len(), targets.len()));
            for id in 0..full.len() {
                let (mut x, mut y) = (vec![0f32; full.x_len()], vec![0f32; full.y_len()]);
                full.read_into(id, &mut x, &mut y).unwrap();
                let (mut px, mut py) = (vec![0f32; picked.x_len()], vec![0f32; picked.y_len()]);
                picked.read_into(id, &mut px, &mut py).unwrap();
                assert_eq!(py, targets.iter().map(|&t| y[t]).collect::<Vec<_>>());
                let expected: Vec<f32> = (0..voxels)
                    .flat_map(|v| channels.iter().map(move |&c| v * SHAPE.channels + c))
                    .map(|i| x[i])
                    .collect();
                if transform == CosmoTransform::Log1p {
                    assert_eq!(px, expected, "{channels:?}");
                } else if channels.len() == SHAPE.channels {
                    // The same voxels, so the same mean.
                    let close = px.iter().zip(&expected).all(|(a, b)| (a - b).abs() <= 1e-6 * b.abs().max(1.0));
                    assert!(close, "{channels:?}");
                } else {
                    // Divided by the mean of the channel the model sees.
                    let mean = px.iter().map(|&v| f64::from(v)).sum::<f64>() / px.len() as f64;
                    assert!((mean - 1.0).abs() < 1e-5, "{mean}");
                }
            }
        }
    }
    assert!(matches!(
        CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).unwrap().select(vec![2], vec![0]),
        Err(DatasetError::Selection(_))
    ));
    flip_middle_byte(&paths[0]);
    let picked =
        CosmoflowDataset::open(&paths, SHAPE, CosmoTransform::Log1p).unwrap().select(vec![0], vec![0]).unwrap();
    let mut errors = 0;
    for id in 0..3 {
        let (mut x, mut y) = (vec![0f32; picked.x_len()], vec![0f32; 1]);
        errors += usize::from(picked.read_into(id, &mut x, &mut y).is_err());
    }
    assert_eq!(errors, 1, "the damaged record of the first file");
}
