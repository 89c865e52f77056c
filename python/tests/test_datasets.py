"""Every dataset kind, end to end, against data `simgen` wrote."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

import stagehand


def one_epoch(dataset, **options):
    loader = stagehand.Loader(dataset, batch_size=2, workers=2, rank=0, world_size=1, **options)
    return list(loader.batches())


def test_cosmoflow_from_manifest_gives_log1p_counts_of_every_sample(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)
    assert (data.kind, len(data), data.x_shape, data.y_shape) == ("cosmoflow", 24, [8, 8, 8, 4], [4])
    batches = one_epoch(data)
    assert sorted(i for b in batches for i in b.indices) == list(range(24))
    for batch in batches:
        assert batch.x.shape == (2, 8, 8, 8, 4) and batch.x.dtype == np.float32
        assert batch.y.shape == (2, 4)
        # log(counts + 1) of non-negative integer counts
        assert np.all(batch.x >= 0) and np.allclose(np.expm1(batch.x), np.round(np.expm1(batch.x)), atol=1e-3)
        for k, index in enumerate(batch.indices):
            x, y = data.read(index)
            np.testing.assert_array_equal(batch.x[k].ravel(), x)
            np.testing.assert_array_equal(batch.y[k], y)


def test_cosmoflow_gzip_without_sidecars_reads_as_the_manifest_says(cosmo_gzip):
    data = stagehand.Dataset.from_manifest(cosmo_gzip)
    assert len(data) == 16 and all(str(p).endswith(".tfrecord.gz") for p in data.paths)
    assert sum(len(b.indices) for b in one_epoch(data)) == 16


def test_cosmoflow_from_files_equals_from_manifest(cosmo):
    files = sorted(cosmo.glob("*.tfrecord"))
    by_files = stagehand.Dataset.cosmoflow(files, size=8, channels=4)
    by_manifest = stagehand.Dataset.from_manifest(cosmo)
    assert len(by_files) == len(by_manifest)
    for i in (0, 7, 23):
        np.testing.assert_array_equal(by_files.read(i)[0], by_manifest.read(i)[0])
    divided = stagehand.Dataset.cosmoflow(files, size=8, transform="divide-by-mean")
    assert np.isclose(divided.read(0)[0].reshape(-1, 4).mean(), 1.0, rtol=0.2)


def test_cosmoflow_selects_channels_and_targets_as_sc18_trained(cosmo):
    files = sorted(cosmo.glob("*.tfrecord"))
    full = stagehand.Dataset.cosmoflow(files, size=8)
    sc18 = stagehand.Dataset.cosmoflow(files, size=8, select=[0], targets=["omega_m", "sigma_8", "n_s"])
    assert sc18.x_shape == [8, 8, 8, 1] and sc18.y_shape == [3]
    swapped = stagehand.Dataset.cosmoflow(files, size=8, select=[3, 1], targets=["h", "omega_m"])
    for i in (0, 11):
        x, y = full.read(i)
        volume = x.reshape(8, 8, 8, 4)
        np.testing.assert_array_equal(sc18.read(i)[0], volume[..., 0].ravel())
        np.testing.assert_array_equal(sc18.read(i)[1], y[:3])
        np.testing.assert_array_equal(swapped.read(i)[0], volume[..., [3, 1]].ravel())
        np.testing.assert_array_equal(swapped.read(i)[1], y[[3, 0]])
    batch = next(iter(stagehand.Loader(sc18, batch_size=2, workers=1, rank=0, world_size=1).batches()))
    assert batch.x.shape == (2, 8, 8, 8, 1) and batch.y.shape == (2, 3)
    with pytest.raises(ValueError, match='unknown CosmoFlow target "hubble"'):
        stagehand.Dataset.cosmoflow(files, size=8, targets=["hubble"])
    with pytest.raises(Exception, match="channel 4"):
        stagehand.Dataset.cosmoflow(files, size=8, select=[4])


def test_deepcam_inputs_are_the_files_min_max_normalised_channels_first(climate):
    data = stagehand.Dataset.from_manifest(climate, prefix="train/")
    assert data.kind == "deepcam" and data.x_shape == [16, 128, 256] and data.y_shape == [128, 256]
    assert all("/train/" in str(p) for p in data.paths) and len(data) == 4
    with h5py.File(climate / "stats.h5") as stats:
        low, high = stats["climate/minval"][:], stats["climate/maxval"][:]
    for batch in one_epoch(data):
        for k, index in enumerate(batch.indices):
            with h5py.File(data.paths[index]) as sample:
                hwc = sample["climate/data"][:]
                labels = sample["climate/labels_0"][:]
            expected = np.transpose((hwc - low) / (high - low), (2, 0, 1))
            np.testing.assert_allclose(batch.x[k], expected, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(batch.y[k], labels.astype(np.float32))
    validation = stagehand.Dataset.from_manifest(climate, prefix="validation/")
    assert len(validation) == 2


def test_deepcam_from_files_reads_the_shape_from_the_first_file(climate):
    files = sorted((climate / "train").glob("*.h5"))
    data = stagehand.Dataset.deepcam(files, climate / "stats.h5")
    assert data.x_shape == [16, 128, 256] and len(data) == len(files)


def test_jets_files_are_the_hep_cnn_benchmarks_layout_and_load_as_events(jets):
    """h5py reads what simgen jets writes as the HEP-CNN benchmark's reader
    does (data NCHW float32, label, normweight, weight, psr at the root),
    and stagehand gives each event's image and [label, weight, psr]."""
    data = stagehand.Dataset.from_manifest(jets, prefix="train/")
    assert data.kind == "jets" and data.x_shape == [3, 32, 32] and data.y_shape == [3] and len(data) == 16
    seen = 0
    for path in data.paths:
        with h5py.File(path, "r") as f:
            assert f["data"].dtype == np.float32 and f["data"].shape == (8, 3, 32, 32)
            assert f["label"].dtype == np.int32 and set(f["label"][:]) <= {0, 1}
            for name in ("weight", "normweight", "psr"):
                assert f[name].shape == (8,) and f[name].dtype == np.float32
            assert np.all(f["data"][:] >= 0) and np.all(f["data"][:, 2] == np.round(f["data"][:, 2]))
            for event in range(8):
                x, y = data.read(seen + event)
                np.testing.assert_array_equal(x, f["data"][event].ravel())
                np.testing.assert_array_equal(y, [f["label"][event], f["weight"][event], f["psr"][event]])
        seen += 8
    assert len(stagehand.Dataset.from_manifest(jets, prefix="validation/")) == 8


def test_mass_maps_are_cosmogans_npy_layout_and_load_as_maps(massmaps):
    """numpy.load reads what simgen massmaps writes as CosmoGAN's reader
    does ((N, S, S) float32, memory-mapped), and stagehand gives each map
    and its mean; statistics.json describes the same maps."""
    data = stagehand.Dataset.from_manifest(massmaps, prefix="train/")
    assert data.kind == "massmaps" and data.x_shape == [16, 16] and data.y_shape == [1] and len(data) == 24
    seen = 0
    pixels = []
    for path in data.paths:
        maps = np.load(path, mmap_mode="r")
        assert maps.dtype == np.float32 and maps.shape == (12, 16, 16) and maps.flags["C_CONTIGUOUS"]
        for m in range(12):
            x, y = data.read(seen + m)
            np.testing.assert_array_equal(x, maps[m].ravel())
            assert y[0] == pytest.approx(float(maps[m].mean()), rel=1e-5)
        pixels.append(np.asarray(maps))
        seen += 12
    assert np.all(np.concatenate(pixels) >= 0)
    validation = np.load(massmaps / "validation" / "maps-00002.npy")
    statistics = json.loads((massmaps / "statistics.json").read_text())
    everything = np.concatenate(pixels + [validation])
    assert statistics["maps"] == 36
    assert statistics["pixel_mean"] == pytest.approx(float(everything.mean(dtype=np.float64)), rel=1e-6)
    # P(k) of ring 1 by numpy's FFT: the mean |X|^2 / S^2 over the modes with round(|k|) == 1.
    k = np.fft.fftfreq(16) * 16
    ring = np.rint(np.hypot(*np.meshgrid(k, k, indexing="ij"))) == 1
    power = np.mean([np.mean(np.abs(np.fft.fft2(m))[ring] ** 2) / 256 for m in everything])
    assert statistics["power_spectrum"][0]["power_pixels"] == pytest.approx(power, rel=1e-4)
    assert len(stagehand.Dataset.from_manifest(massmaps, prefix="validation/")) == 12


def test_scattering_stacks_and_potentials(scattering):
    data = stagehand.Dataset.from_manifest(scattering)
    assert data.kind == "scattering" and data.x_shape == [1024, 32, 32] and data.y_shape == [32, 32]
    same = stagehand.Dataset.scattering(data.paths)
    batches = one_epoch(data)
    assert sorted(i for b in batches for i in b.indices) == [0, 1, 2]
    for batch in batches:
        for k, index in enumerate(batch.indices):
            x, y = same.read(index)
            np.testing.assert_array_equal(batch.x[k].ravel(), x)
            np.testing.assert_array_equal(batch.y[k].ravel(), y)
            assert np.all(batch.x[k] >= 0) and batch.y[k].max() > 0


def test_traces_have_ragged_targets_of_choices_in_the_address_layout(traces):
    data = stagehand.Dataset.from_manifest(traces)
    assert data.kind == "traces" and data.y_shape is None and len(data) == 20
    width = stagehand.Dataset.CHOICE_WIDTH
    assert "tau__px__Uniform__1" in data.addresses
    for batch in one_epoch(data):
        assert isinstance(batch.y, list) and len(batch.y) == len(batch.indices)
        for k, index in enumerate(batch.indices):
            _, flat = data.read(index)
            np.testing.assert_array_equal(batch.y[k], flat.reshape(-1, width))
            positions = batch.y[k][:, 0]
            assert np.all((positions >= 0) & (positions < len(data.addresses)))


def test_an_opaque_or_missing_dataset_is_a_data_error_naming_the_path(tmp_path, cosmo):
    with pytest.raises(stagehand.DataError, match="nothing-here/manifest.json"):
        stagehand.Dataset.from_manifest(tmp_path / "nothing-here")
    with pytest.raises(ValueError, match="transform"):
        stagehand.Dataset.from_manifest(cosmo, transform="sqrt")
    with pytest.raises(ValueError, match="file index 99"):
        stagehand.Dataset.from_manifest(cosmo, files=[99])


def test_the_package_ships_type_stubs_for_its_compiled_half():
    import pathlib

    package = pathlib.Path(stagehand.__file__).parent
    stubs = (package / "_stagehand.pyi").read_text()
    for name in ("class Dataset", "def from_manifest", "def staged", "class EpochLoader", "class DataError"):
        assert name in stubs
    assert (package / "py.typed").is_file()
