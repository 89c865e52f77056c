"""Datasets of byte records: files written by TensorFlow, NumPy and h5py
themselves, read back through ``stagehand.Dataset`` and ``Loader``."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

import stagehand


def images(count: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    # Lengths differ, as in DLIO's records (record_length_stdev).
    return [rng.integers(0, 255, size=(8 + i % 3, 8), dtype=np.uint8) for i in range(count)]


@pytest.fixture
def tfrecords(tmp_path):
    """DLIO's synthetic record layout, written by tf.io.TFRecordWriter: 2 files of 3 Examples."""
    import tensorflow as tf

    data = images(6)
    paths = []
    for f in range(2):
        path = tmp_path / f"img_{f}_of_2.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for image in data[3 * f : 3 * f + 3]:
                feature = {
                    "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
                    "size": tf.train.Feature(int64_list=tf.train.Int64List(value=[image.shape[0]])),
                }
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
        paths.append(path)
    return paths, data


def test_tfrecord_images_arrive_as_the_bytes_tensorflow_wrote(tfrecords):
    paths, data = tfrecords
    dataset = stagehand.Dataset.tfrecord(paths, feature="image")
    assert (dataset.kind, len(dataset)) == ("records", 6)
    assert "kind='records'" in repr(dataset)
    assert dataset.read_record(4).tobytes() == data[4].tobytes()
    loader = stagehand.Loader(dataset, batch_size=4, shuffle=False, rank=0, world_size=1)
    got = []
    for batch in loader.batches():
        assert batch.y is None
        rows = batch.x if isinstance(batch.x, list) else list(batch.x)
        got.extend(bytes(row) for row in rows)
    assert got == [image.tobytes() for image in data]


def test_tfrecord_records_without_a_feature_parse_as_tensorflow_examples(tfrecords):
    import tensorflow as tf

    paths, data = tfrecords
    dataset = stagehand.Dataset.tfrecord(paths)
    example = tf.train.Example.FromString(dataset.read_record(2).tobytes())
    assert example.features.feature["image"].bytes_list.value[0] == data[2].tobytes()
    with pytest.raises(ValueError, match="read_record"):
        dataset.read(0)


def test_npz_samples_on_the_last_axis_match_numpy_for_savez_and_savez_compressed(tmp_path):
    rng = np.random.default_rng(1)
    arrays = [rng.integers(0, 255, size=(6, 5, 3), dtype=np.uint8), rng.integers(0, 255, size=(6, 5, 2), dtype=np.uint8)]
    paths = [tmp_path / "a.npz", tmp_path / "b.npz"]
    np.savez(paths[0], x=arrays[0], y=[0, 0, 0])
    np.savez_compressed(paths[1], x=arrays[1], y=[0, 0])
    dataset = stagehand.Dataset.npz(paths)
    assert len(dataset) == 5
    expected = [a[..., k] for a in arrays for k in range(a.shape[-1])]
    loader = stagehand.Loader(dataset, batch_size=2, shuffle=True, seed=3, rank=0, world_size=1)
    seen = {}
    for batch in loader.batches():
        for k, index in enumerate(batch.indices):
            seen[index] = np.asarray(batch.x[k])
    assert sorted(seen) == list(range(5))
    for index, sample in seen.items():
        assert sample.tobytes() == np.ascontiguousarray(expected[index]).tobytes()
    first = stagehand.Dataset.npz(paths[:1], axis="first")
    assert first.read_record(5).tobytes() == arrays[0][5].tobytes()
    with pytest.raises(stagehand.DataError, match="a.npz"):
        stagehand.Dataset.npz(paths[:1], key="images")


def test_buffers_made_before_the_first_epoch_carry_its_batches(tmp_path, tfrecords):
    rng = np.random.default_rng(4)
    arrays = [rng.integers(0, 255, size=(4, 5, 3), dtype=np.uint8), rng.integers(0, 255, size=(4, 5, 9), dtype=np.uint8)]
    paths = [tmp_path / "a.npz", tmp_path / "b.npz"]
    np.savez(paths[0], x=arrays[0])
    np.savez(paths[1], x=arrays[1])
    loader = stagehand.Loader(stagehand.Dataset.npz(paths), batch_size=3, prefetch=2, shuffle=True, seed=1, rank=0, world_size=1)
    # Four buffers (two batches in flight, the one held and the one before it),
    # each of three 20-byte samples: all four batches of the epoch.
    assert loader.make_buffers() == 4 * 3 * 20
    assert loader.make_buffers() == 0
    expected = [a[..., k] for a in arrays for k in range(a.shape[-1])]
    seen = {}
    for batch in loader.batches():
        for k, index in enumerate(batch.indices):
            assert np.asarray(batch.x[k]).tobytes() == np.ascontiguousarray(expected[index]).tobytes()
            seen[index] = seen.get(index, 0) + 1
    assert seen == {index: 1 for index in range(12)}
    # No more buffers than an epoch has batches: two of six samples here.
    short = stagehand.Loader(stagehand.Dataset.npz(paths), batch_size=6, prefetch=4, rank=0, world_size=1)
    assert short.make_buffers() == 2 * 6 * 20
    paths, _ = tfrecords
    unknown = stagehand.Loader(stagehand.Dataset.tfrecord(paths, feature="image"), batch_size=2, rank=0, world_size=1)
    assert unknown.make_buffers() == 0


def test_hdf5_rows_match_h5py_for_contiguous_and_chunked_compressed_files(tmp_path):
    rng = np.random.default_rng(2)
    data = rng.integers(0, 255, size=(4, 7, 7), dtype=np.uint8)
    with h5py.File(tmp_path / "plain.h5", "w") as f:
        f.create_dataset("records", data=data)
        f.create_dataset("labels", data=[0] * 4)
    with h5py.File(tmp_path / "packed.h5", "w") as f:
        f.create_dataset("records", data=data[::-1], chunks=(1, 7, 7), compression="gzip")
    dataset = stagehand.Dataset.hdf5([tmp_path / "plain.h5", tmp_path / "packed.h5"])
    assert len(dataset) == 8
    loader = stagehand.Loader(dataset, batch_size=8, shuffle=False, rank=0, world_size=1)
    (batch,) = list(loader.batches())
    assert batch.x.shape == (8, 49) and batch.x.dtype == np.uint8
    np.testing.assert_array_equal(batch.x.reshape(8, 7, 7), np.concatenate([data, data[::-1]]))
    with pytest.raises(stagehand.DataError, match="images"):
        stagehand.Dataset.hdf5([tmp_path / "plain.h5"], name="images")


def test_records_reach_torch_and_tensorflow_through_the_bridges(tfrecords):
    import stagehand.tf
    import stagehand.torch
    import tensorflow as tf

    paths, data = tfrecords
    dataset = stagehand.Dataset.tfrecord(paths, feature="image")
    loader = stagehand.Loader(dataset, batch_size=3, shuffle=False, rank=0, world_size=1)
    got = []
    for x, y in stagehand.torch.tensors(loader):
        assert y is None
        rows = x if isinstance(x, list) else list(x)
        got.extend(bytes(row.numpy()) for row in rows)
    assert got == [image.tobytes() for image in data]
    got = []
    for x, offsets in stagehand.tf.dataset(loader):
        rows = tf.RaggedTensor.from_row_splits(x, offsets)
        got.extend(bytes(row.numpy()) for row in rows)
    assert got == [image.tobytes() for image in data]
