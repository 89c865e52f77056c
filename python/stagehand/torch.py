"""PyTorch bridge: batches as ``torch.Tensor`` over the loader's buffers.

``torch.from_numpy`` shares memory with the NumPy array, so no batch is
copied on its way to the model; the buffers return to the loader when the
tensors are freed.

>>> import stagehand, stagehand.torch                                  # doctest: +SKIP
>>> loader = stagehand.Loader(data, batch_size=4)                        # doctest: +SKIP
>>> for x, y in stagehand.torch.tensors(loader):                         # doctest: +SKIP
...     loss = model(x).sub(y).pow(2).mean()

``IterableDataset`` wraps a loader for code that expects a
``torch.utils.data`` dataset; give it to ``DataLoader`` with
``batch_size=None`` (the loader batches) and ``num_workers=0`` (the
loader's Rust workers decode; Python worker processes would only copy).
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple, Union

import numpy as np
import torch
from torch.utils.data import IterableDataset as _IterableDataset

from ._loader import Loader

Target = Union[torch.Tensor, List[torch.Tensor]]


def as_tensor(array: np.ndarray) -> torch.Tensor:
    """The array as a tensor over the same memory (no copy)."""
    return torch.from_numpy(array)


def _tensors(value):
    """An array, a list of arrays or ``None``, as tensors over the same memory."""
    if value is None:
        return None
    if isinstance(value, list):
        return [torch.from_numpy(v) for v in value]
    return torch.from_numpy(value)


def tensors(loader: Loader) -> Iterator[Tuple[Target, Optional[Target]]]:
    """One epoch of ``(x, y)`` tensors (traces: ``y`` a list of tensors;
    records: ``x`` uint8, a list of tensors when their lengths differ, and
    ``y`` ``None``)."""
    for x, y in loader:
        yield _tensors(x), _tensors(y)


class IterableDataset(_IterableDataset):
    """A ``torch.utils.data.IterableDataset`` of a loader's batches.

    Each iteration is one epoch of the loader; ``len()`` is its batches.
    """

    def __init__(self, loader: Loader) -> None:
        super().__init__()
        self.loader = loader

    def __iter__(self) -> Iterator[Tuple[Target, Optional[Target]]]:
        return tensors(self.loader)

    def __len__(self) -> int:
        return len(self.loader)
