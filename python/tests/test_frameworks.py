"""The PyTorch and TensorFlow bridges against the real frameworks (CPU)."""

from __future__ import annotations

import numpy as np

import stagehand


def test_torch_tensors_share_the_loaders_memory_and_a_short_training_loop_learns(cosmo):
    import torch

    import stagehand.torch

    torch.manual_seed(0)
    data = stagehand.Dataset.from_manifest(cosmo)
    loader = stagehand.Loader(data, batch_size=4, workers=2, seed=0, rank=0, world_size=1)
    # A tiny CosmoFlow-like regressor: conv, pool, linear to the 4 parameters.
    model = torch.nn.Sequential(
        torch.nn.Conv3d(4, 8, 3, padding=1), torch.nn.LeakyReLU(), torch.nn.AdaptiveAvgPool3d(2),
        torch.nn.Flatten(), torch.nn.Linear(64, 4),
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        total = 0.0
        for x, y in stagehand.torch.tensors(loader):
            # No copy: the tensor is the NumPy array's memory, the loader's buffer.
            assert x.dtype == torch.float32 and x.shape == (4, 8, 8, 8, 4)
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x.permute(0, 4, 1, 2, 3)), y)
            loss.backward()
            optimiser.step()
            total += loss.item()
        losses.append(total / len(loader))
    assert np.isfinite(losses).all() and losses[-1] < 0.5 * losses[0], losses

    batch = next(iter(loader.batches()))
    tensor = stagehand.torch.as_tensor(batch.x)
    assert tensor.data_ptr() == batch.x.ctypes.data == batch.x.base.x_address
    # One batch of that epoch was taken: the next pass continues it.
    assert sum(1 for _ in stagehand.torch.IterableDataset(loader)) == len(loader) - 1
    wrapped = stagehand.torch.IterableDataset(loader)
    batches = torch.utils.data.DataLoader(wrapped, batch_size=None, num_workers=0)
    assert sum(1 for _ in batches) == len(loader) == len(wrapped)


def test_torch_gives_traces_as_lists_of_tensors(traces):
    import torch

    import stagehand.torch

    loader = stagehand.Loader(stagehand.Dataset.from_manifest(traces), batch_size=4, rank=0, world_size=1)
    x, ys = next(stagehand.torch.tensors(loader))
    assert x.shape == (4, 20, 35, 35) and len(ys) == 4
    assert all(isinstance(y, torch.Tensor) and y.shape[1] == stagehand.Dataset.CHOICE_WIDTH for y in ys)


def test_tf_dataset_yields_the_loaders_batches_with_its_signature(cosmo, traces):
    import stagehand.tf

    data = stagehand.Dataset.from_manifest(cosmo)
    options = dict(batch_size=5, seed=2, rank=0, world_size=1)
    expected = list(stagehand.Loader(data, **options).batches())
    dataset = stagehand.tf.dataset(stagehand.Loader(data, **options))
    assert dataset.element_spec[0].shape.as_list() == [None, 8, 8, 8, 4]
    got = list(dataset.as_numpy_iterator())
    assert len(got) == len(expected) == 5
    for (x, y), batch in zip(got, expected):
        np.testing.assert_array_equal(x, batch.x)
        np.testing.assert_array_equal(y, batch.y)
    second_epoch = list(dataset.as_numpy_iterator())
    assert len(second_epoch) == 5 and not np.array_equal(second_epoch[0][0], got[0][0])

    ragged = stagehand.tf.dataset(stagehand.Loader(stagehand.Dataset.from_manifest(traces), **options))
    x, y, offsets = next(iter(ragged.as_numpy_iterator()))
    assert x.shape[0] == 5 and offsets.shape == (6,) and y.shape == (offsets[-1], stagehand.Dataset.CHOICE_WIDTH)
