"""Order, resume, ranks, buffers and errors of `stagehand.Loader`."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import stagehand
from conftest import binary


def epoch(loader):
    return [(b.indices, b.x.copy(), b.y.copy()) for b in loader.batches()]


def same(a, b):
    assert [i for i, _, _ in a] == [i for i, _, _ in b]
    for (_, xa, ya), (_, xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)


def test_batches_equal_the_rust_loaders_byte_for_byte(cosmo, tmp_path):
    data = stagehand.Dataset.from_manifest(cosmo)
    for rank in (0, 1):
        out = tmp_path / f"rust-{rank}"
        subprocess.run([binary("examples/dump_batches"), cosmo, out, "3", "7", str(rank), "2", "1", "2"], check=True)
        rust_indices = [json.loads(line) for line in open(f"{out}.json")]
        rust_values = np.fromfile(f"{out}.bin", dtype="<f4")
        loader = stagehand.Loader(data, batch_size=3, workers=3, seed=7, rank=rank, world_size=2)
        loader.set_epoch(1)
        ours = epoch(loader)
        assert [i for i, _, _ in ours] == rust_indices
        flat = np.concatenate([np.concatenate([x.ravel(), y.ravel()]) for _, x, y in ours])
        np.testing.assert_array_equal(flat, rust_values)


def test_the_number_of_workers_does_not_change_the_batches(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)
    runs = [epoch(stagehand.Loader(data, batch_size=5, workers=w, prefetch=p, seed=3, rank=0, world_size=1))
            for w, p in ((1, 1), (2, 4), (4, 2))]
    same(runs[0], runs[1])
    same(runs[0], runs[2])


def test_every_rank_gets_the_same_number_of_batches_and_the_ranks_cover_the_data(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)  # 24 samples
    for world, drop_last in ((5, False), (5, True), (3, False)):
        loaders = [stagehand.Loader(data, batch_size=2, seed=1, rank=r, world_size=world, drop_last=drop_last)
                   for r in range(world)]
        counts = {len(list(loader.batches())) for loader in loaders}
        assert counts == {len(loaders[0])}
        seen = [i for loader in loaders for i in loader.order(0)]
        if drop_last:
            assert len(seen) == len(set(seen)) and len(seen) == world * (24 // world // 2 * 2)
        else:
            assert set(seen) == set(range(24))


def test_epochs_differ_and_repeat_with_the_seed(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)
    loader = stagehand.Loader(data, batch_size=4, seed=11, rank=0, world_size=1)
    first, second = epoch(loader), epoch(loader)
    assert loader.epoch == 2
    assert [i for i, _, _ in first] != [i for i, _, _ in second]
    again = stagehand.Loader(data, batch_size=4, seed=11, rank=0, world_size=1)
    same(first, epoch(again))
    unshuffled = stagehand.Loader(data, batch_size=4, shuffle=False, rank=0, world_size=1)
    assert unshuffled.order(0) == list(range(24))


@pytest.mark.parametrize("stop_after", [0, 1, 4, 6])
def test_a_restart_from_state_dict_continues_with_the_uninterrupted_batches(cosmo, stop_after):
    data = stagehand.Dataset.from_manifest(cosmo)
    options = dict(batch_size=4, seed=5, rank=1, world_size=2)
    uninterrupted = stagehand.Loader(data, workers=2, **options)
    reference = epoch(uninterrupted) + epoch(uninterrupted)  # 2 epochs of 3 batches
    first = stagehand.Loader(data, workers=3, **options)
    taken = []
    while len(taken) < stop_after:
        for batch in first.batches():
            taken.append((batch.indices, batch.x.copy(), batch.y.copy()))
            if len(taken) == stop_after:
                break
    state = json.loads(json.dumps(first.state_dict()))  # survives a checkpoint file
    first.close()
    resumed = stagehand.Loader(data, workers=1, **options)
    resumed.load_state_dict(state)
    rest = []
    while len(taken) + len(rest) < len(reference):
        rest.extend(epoch(resumed))
    same(reference, taken + rest)


def test_a_state_from_another_loader_is_refused(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)
    state = stagehand.Loader(data, batch_size=4, seed=5, rank=0, world_size=1).state_dict()
    other = stagehand.Loader(data, batch_size=3, seed=6, rank=0, world_size=1)
    with pytest.raises(ValueError, match=r"seed 5 \(this loader: 6\), batch_size 4 \(this loader: 3\)"):
        other.load_state_dict(state)


def test_batches_are_numpy_views_of_the_loaders_buffers_which_it_reuses(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)
    loader = stagehand.Loader(data, batch_size=4, workers=1, prefetch=1, rank=0, world_size=1)
    addresses = []
    for x, y in loader:
        owner = x.base
        assert type(owner).__name__ == "BatchBuffers" and y.base is owner
        assert x.ctypes.data == owner.x_address  # the array is the loader's memory, not a copy
        assert not x.flags.owndata and x.flags.c_contiguous
        addresses.append(x.ctypes.data)
    # Freed batches go back to the pool: with one worker and one batch
    # ahead, two or three buffers serve the whole epoch of 6.
    assert len(set(addresses)) <= 3 < len(addresses)
    kept = [x for x, _ in loader]  # arrays kept alive keep their memory
    assert len({x.ctypes.data for x in kept}) == len(kept)


def test_a_corrupt_record_is_an_error_naming_file_and_offset_or_skipped_and_counted(cosmo, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in cosmo.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    victim = broken / "cosmo_000001.tfrecord"
    raw = bytearray(victim.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    victim.write_bytes(bytes(raw))
    data = stagehand.Dataset.from_manifest(broken)
    with pytest.raises(stagehand.DataError, match=r"cosmo_000001\.tfrecord.*offset"):
        for _ in stagehand.Loader(data, batch_size=4, rank=0, world_size=1):
            pass
    loader = stagehand.Loader(data, batch_size=4, rank=0, world_size=1, skip_corrupt=True)
    delivered = sum(len(b.indices) for b in loader.batches())
    assert loader.metrics()["skipped"] == 1 and delivered == 23


def test_a_file_truncated_while_the_dataset_has_it_mapped_is_an_error_or_skipped_not_a_bus_error(cosmo, tmp_path):
    """A staged file cut short during an epoch used to kill Python with
    "Bus error" (exit 135), even with skip_corrupt=True."""
    import os

    copy = tmp_path / "copy"
    copy.mkdir()
    for f in cosmo.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    data = stagehand.Dataset.from_manifest(copy)
    os.truncate(copy / "cosmo_000001.tfrecord", 10)
    with pytest.raises(stagehand.DataError, match=r"cosmo_000001\.tfrecord.*shrank from"):
        for _ in stagehand.Loader(data, batch_size=4, rank=0, world_size=1, check_finite=True):
            pass
    loader = stagehand.Loader(data, batch_size=4, rank=0, world_size=1, skip_corrupt=True)
    delivered = sum(len(b.indices) for b in loader.batches())
    skipped = loader.metrics()["skipped"]
    assert skipped > 0 and delivered + skipped == 24


def test_bad_arguments_are_value_errors(cosmo):
    data = stagehand.Dataset.from_manifest(cosmo)
    with pytest.raises(ValueError, match="at least 1"):
        stagehand.Loader(data, batch_size=0, rank=0, world_size=1)
    with pytest.raises(ValueError, match="rank 2 of world_size 2"):
        stagehand.Loader(data, batch_size=1, rank=2, world_size=2)


def test_the_gil_is_free_while_the_consumer_waits(scattering):
    """Another Python thread runs while `next()` waits for a batch.

    With a switch interval of 10 s, a thread only gets the GIL when the
    holder gives it up: had `next()` kept it while waiting, the counter
    could not tick inside any of its calls.
    """
    import sys
    import threading
    import time

    data = stagehand.Dataset.from_manifest(scattering)  # 4 MB samples: each read takes a while
    loader = stagehand.Loader(data, batch_size=1, workers=1, prefetch=1, rank=0, world_size=1)
    ticks, waits = [], []
    stop, started = threading.Event(), threading.Event()

    def count():
        started.set()
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    try:
        counter = threading.Thread(target=count)
        counter.start()
        started.wait()
        for _ in range(3):
            loader._inner.start(0, 0)
            while True:
                entered = time.perf_counter()
                item = loader._inner.next()
                waits.append((entered, time.perf_counter()))
                if item is None:
                    break
        stop.set()
        counter.join()
    finally:
        sys.setswitchinterval(interval)
    inside = sum(1 for t in ticks if any(a < t < b for a, b in waits))
    assert inside > 0, f"no tick of the other thread in {len(waits)} waits: next() held the GIL"


@pytest.mark.parametrize("new_world", [2, 8])
@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (2, True)])
def test_a_state_saved_on_4_ranks_resumes_on_2_or_8_visiting_each_remaining_sample_once(
    cosmo, new_world, batch_size, drop_last
):
    data = stagehand.Dataset.from_manifest(cosmo)
    options = dict(batch_size=batch_size, seed=3, drop_last=drop_last, workers=1)
    old = [stagehand.Loader(data, rank=r, world_size=4, **options) for r in range(4)]
    delivered = sorted(i for loader in old for i in loader.order(0))
    taken, states = [], []
    for loader in old:  # every rank takes one step, then the job stops
        batches = loader.batches()
        taken.extend(next(batches).indices)
        batches.close()
        states.append(json.loads(json.dumps(loader.state_dict())))
        loader.close()
    remaining = list(delivered)
    for i in taken:
        remaining.remove(i)
    new = [stagehand.Loader(data, rank=r, world_size=new_world, **options) for r in range(new_world)]
    got, steps = [], []
    for rank, loader in enumerate(new):
        loader.load_state_dict(states[rank % 4])
        steps.append(len(loader))
        count = 0
        for batch in loader.batches():
            assert len(batch.indices) <= batch_size
            got.extend(batch.indices)
            count += 1
        assert count == steps[-1]
        assert loader.epoch == 1, "the next iteration runs the next epoch, at the new world size"
        assert len(loader) == len(stagehand.Loader(data, rank=rank, world_size=new_world, **options))
    assert sorted(got) == remaining, "each remaining sample once"
    assert len(set(steps)) == 1, f"steps per rank {steps}"


@pytest.mark.parametrize("moves", [[(4, 1), (3, 1), (2, None)], [(4, 1), (3, 2), (2, None)], [(4, 1), (5, 1), (1, None)], [(4, 1), (7, 1), (2, None)]])
def test_an_epoch_moved_between_world_sizes_visits_every_sample_once(cosmo, moves):
    data = stagehand.Dataset.from_manifest(cosmo)
    options = dict(batch_size=2, seed=8, workers=1)
    delivered = sorted(i for r in range(4) for i in stagehand.Loader(data, rank=r, world_size=4, **options).order(0))
    seen, state = [], None
    for world, steps in moves:
        saved = []
        for rank in range(world):
            loader = stagehand.Loader(data, rank=rank, world_size=world, **options)
            if state is not None:
                loader.load_state_dict(state)
            for k, batch in enumerate(loader.batches()):
                seen.extend(batch.indices)
                if k + 1 == steps:
                    break
            saved.append(loader.state_dict())
            loader.close()
        assert len({(s["epoch"], s["batch"]) for s in saved}) == 1, "every rank at the same step"
        state = saved[0]
    assert state["epoch"] == 1
    assert sorted(seen) == delivered
