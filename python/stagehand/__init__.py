"""Stagehand's loader for PyTorch and TensorFlow trainers.

Batches are decoded by Rust worker threads (the GIL is released while the
trainer waits and never taken by the workers) and arrive as NumPy arrays
over the loader's own buffers, without a copy. Every rank gets the same
number of batches, the order depends only on the seed, the epoch and the
rank (not on the number of workers), and ``state_dict()`` /
``load_state_dict()`` resume mid-epoch with exactly the batches an
uninterrupted run would have produced.

>>> import stagehand
>>> data = stagehand.Dataset.from_manifest("/data/cosmo")      # doctest: +SKIP
>>> loader = stagehand.Loader(data, batch_size=4, workers=2)    # doctest: +SKIP
>>> for x, y in loader:                                         # doctest: +SKIP
...     train_step(x, y)

``stagehand.torch`` and ``stagehand.tf`` bridge to the frameworks.
"""

from ._env import Topology, topology
from ._loader import Batch, Loader
from ._stagehand import DataError, Dataset, __version__

__all__ = ["Batch", "DataError", "Dataset", "Loader", "Topology", "topology", "__version__"]
