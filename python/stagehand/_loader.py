"""``Loader``: batches of a ``Dataset`` for one rank, epoch after epoch."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

import numpy as np

from ._env import topology
from ._stagehand import Dataset, EpochLoader

#: ``state_dict()`` layout version (1 is read too).
STATE_VERSION = 2


class Batch(NamedTuple):
    """One batch: inputs, targets and the ids of its samples.

    ``x`` is float32 ``(n, *dataset.x_shape)``. ``y`` is float32
    ``(n, *dataset.y_shape)``, or for traces a list of ``n`` arrays of
    ``(choices, Dataset.CHOICE_WIDTH)``. Both are views of the loader's
    buffers, which go back to the loader when the arrays are freed.

    For a dataset of records (``Dataset.tfrecord``, ``.npz``, ``.hdf5``)
    ``x`` holds each sample's bytes as uint8: ``(n, length)`` when every
    record of the batch has the same length, else a list of ``n`` arrays;
    ``y`` is ``None``.
    """

    x: Union[np.ndarray, List[np.ndarray]]
    y: Union[np.ndarray, List[np.ndarray], None]
    indices: List[int]


class Loader:
    """Batches of ``dataset`` for this rank, decoded ahead by Rust workers.

    Iterating runs one epoch (``for x, y in loader``); the next iteration
    runs the next epoch. Every rank gets ``len(loader)`` batches. Breaking
    out of an epoch keeps its place: the next iteration continues it
    (``set_epoch`` starts an epoch over).

    Args:
        dataset: a ``stagehand.Dataset``.
        batch_size: samples per batch.
        workers: decoding threads.
        prefetch: batches decoded ahead of the consumer.
        shuffle: a new permutation every epoch (seeded), else file order.
        seed: seed of the permutations; the order depends only on the
            seed, the epoch and the rank, never on ``workers``.
        drop_last: leave out samples beyond equal shares and the last
            short batch; otherwise shares are padded from the start of the
            epoch and the last batch may be short.
        rank, world_size: this rank and the number of ranks; by default
            those a staged dataset was opened for, otherwise from
            ``stagehand.topology()``. A staged dataset must be read with
            the rank it was opened for.
        skip_corrupt: skip (and count in ``metrics()["skipped"]``) samples
            that fail to decode instead of raising ``DataError``.
        check_finite: check every sample's input and target for NaN and
            infinity; one that holds any raises ``DataError`` naming its
            file and position (or is skipped with ``skip_corrupt``). Costs
            one pass over each sample's values.
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        workers: int = 2,
        prefetch: int = 4,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        skip_corrupt: bool = False,
        check_finite: bool = False,
    ) -> None:
        if (rank is None or world_size is None) and dataset.staged_for is not None:
            staged_rank, staged_world = dataset.staged_for
            rank = staged_rank if rank is None else rank
            world_size = staged_world if world_size is None else world_size
        if rank is None or world_size is None:
            found = topology()
            rank = found.rank if rank is None else rank
            world_size = found.world_size if world_size is None else world_size
        self.dataset = dataset
        self.batch_size = batch_size
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.drop_last = drop_last
        self._inner = EpochLoader(
            dataset,
            batch_size=batch_size,
            workers=workers,
            prefetch=prefetch,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
            rank=rank,
            world_size=world_size,
            skip_corrupt=skip_corrupt,
            check_finite=check_finite,
        )
        #: The epoch the next iteration runs (or the one running).
        self.epoch = 0
        self._resume_at = 0
        self._running = False
        # An epoch begun at another world size: (its world size, samples of
        # its sequence all ranks had taken when this loader took it over).
        self._origin: Optional[Tuple[int, int]] = None

    def __len__(self) -> int:
        """Batches of the current epoch, the same on every rank."""
        if self._origin is not None:
            return self._resumed_steps(*self._origin)
        return self._inner.batches()

    def _sequence_len(self, world_size: int) -> int:
        """Samples an epoch begun on ``world_size`` ranks visits over all of them."""
        n = len(self.dataset)
        if self.drop_last:
            return (n // world_size) // self.batch_size * self.batch_size * world_size
        return -(-n // world_size) * world_size

    def _resumed_steps(self, world_size: int, taken: int) -> int:
        """Steps of the rest of an epoch begun on ``world_size`` ranks, ``taken`` samples in."""
        return self._dealt_steps(self._sequence_len(world_size) - taken, self.world_size)

    def _dealt_steps(self, left: int, world_size: int) -> int:
        """Steps of ``left`` samples dealt to ``world_size`` ranks (``loader::elastic::dealt_steps``)."""
        return -(-left // (world_size * self.batch_size))

    def set_epoch(self, epoch: int) -> None:
        """Run ``epoch`` next, from its first batch."""
        self.epoch = epoch
        self._resume_at = 0
        self._origin = None

    def order(self, epoch: Optional[int] = None) -> List[int]:
        """This rank's sample ids of ``epoch`` (default: the current one), in order."""
        return self._inner.order(self.epoch if epoch is None else epoch)

    def raw_batches(self) -> Iterator[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray], List[int]]]:
        """One epoch of ``(x, y, offsets, indices)`` as the Rust side gives them.

        ``offsets`` is ``None`` unless targets are ragged (traces): then ``y``
        holds every choice of the batch and sample ``k``'s are rows
        ``offsets[k]:offsets[k + 1]``. For records of differing lengths
        ``x`` holds every byte of the batch and sample ``k`` is
        ``x[offsets[k]:offsets[k + 1]]``.
        """
        if self._origin is None:
            self._inner.start(self.epoch, self._resume_at)
        else:
            world_size, taken = self._origin
            self._inner.start_resumed(self.epoch, taken, world_size, self._resume_at)
        self._running = True
        try:
            while True:
                item = self._inner.next()
                if item is None:
                    break
                yield item
        finally:
            # Also when the consumer breaks out: the next iteration (or a
            # state_dict) continues the epoch where it stopped.
            self._running = False
            self._resume_at = self._inner.position()
        self.epoch += 1
        self._resume_at = 0
        self._origin = None

    def batches(self) -> Iterator[Batch]:
        """One epoch of ``Batch`` (inputs, targets, sample ids)."""
        records = self.dataset.kind == "records"
        for x, y, offsets, indices in self.raw_batches():
            if records:
                if offsets is not None:
                    x = [x[offsets[k] : offsets[k + 1]] for k in range(len(indices))]
                yield Batch(x, None, indices)
                continue
            if offsets is not None:
                y = [y[offsets[k] : offsets[k + 1]] for k in range(len(indices))]
            yield Batch(x, y, indices)

    def __iter__(self) -> Iterator[Tuple[np.ndarray, Any]]:
        """One epoch of ``(x, y)``."""
        for batch in self.batches():
            yield batch.x, batch.y

    def state_dict(self) -> Dict[str, int]:
        """Where this loader is: the epoch and the batches of it already taken.

        ``load_state_dict`` on a new loader over the same data (any number
        of workers) continues with exactly the batches this one would have
        given next; on a loader of another world size (an unstaged
        dataset), with this rank's share of the samples the epoch has left.
        """
        position = self._inner.position() if self._running else self._resume_at
        origin_world, taken_before = self._origin if self._origin is not None else (self.world_size, 0)
        return {
            "version": STATE_VERSION,
            "epoch": self.epoch,
            "batch": position,
            "seed": self.seed,
            "batch_size": self.batch_size,
            "samples": len(self.dataset),
            "rank": self.rank,
            "world_size": self.world_size,
            "drop_last": int(self.drop_last),
            "origin_world_size": origin_world,
            "taken_before": taken_before,
        }

    def load_state_dict(self, state: Dict[str, int]) -> None:
        """Continue where ``state`` (from ``state_dict()``) left off.

        At the same world size, with exactly the batches the saved loader
        would have given next. At another (4 ranks to 2 or 8, say; unstaged
        datasets only), every rank takes its share of the samples the epoch
        has left, each exactly once, all ranks the same number of steps;
        shares differ by a sample, so the last batches may be shorter.
        Raises ``ValueError`` if the state belongs to a loader with another
        seed, batch size, dataset size or ``drop_last``, or to another rank
        of the same world size.
        """
        version = state.get("version")
        if version not in (1, STATE_VERSION):
            raise ValueError(f"loader state version {version!r}, this loader reads 1 and {STATE_VERSION}")
        mine = self.state_dict()
        same_world = state.get("world_size") == self.world_size
        keys = ("seed", "batch_size", "samples", "drop_last") + (("rank", "world_size") if same_world else ())
        differ = [f"{key} {state.get(key)!r} (this loader: {mine[key]!r})" for key in keys if state.get(key) != mine[key]]
        if differ:
            raise ValueError("the saved loader state does not fit this loader: " + ", ".join(differ))
        saved_world = int(state["world_size"])
        origin_world = int(state.get("origin_world_size", saved_world))
        taken_before = int(state.get("taken_before", 0))
        elastic = (origin_world, taken_before) != (saved_world, 0)
        batch = int(state["batch"])
        self.epoch = int(state["epoch"])
        if same_world and not elastic:
            if not 0 <= batch <= len(self):
                raise ValueError(f"saved batch position {batch} is outside the epoch's {len(self)} batches")
            self._origin = None
            self._resume_at = batch
            return
        if self.dataset.staged_for is not None:
            raise ValueError(
                f"the saved state is for {saved_world} ranks; a staged dataset is placed for its world size "
                f"({self.world_size} here): resume it at the world size it was saved at"
            )
        total = self._sequence_len(origin_world)
        left = total - taken_before
        steps = self._dealt_steps(left, saved_world)
        if not 0 <= batch <= steps:
            raise ValueError(f"saved batch position {batch} is outside the epoch's {steps} batches")
        if same_world:
            self._origin = (origin_world, taken_before)
            self._resume_at = batch
            return
        # Each step of a deal takes the next batch_size * world_size positions
        # of the epoch's sequence (loader::elastic), so the steps taken are a
        # prefix of it.
        taken = taken_before + batch * self.batch_size * saved_world
        taken = min(taken, total)
        if taken >= total:
            self.epoch += 1
            self._origin = None
        else:
            self._origin = (origin_world, taken)
        self._resume_at = 0

    def make_buffers(self) -> int:
        """Make the buffers of the batches in flight now, while the job sets up.

        A loader otherwise makes each buffer as its first batch arrives, and
        the kernel then maps and zeroes the fresh memory page by page while
        the bytes are read into it: for batches of large records (DLIO's
        UNet3D, about 1 GB a batch) that is most of the first epoch's reading
        time. No more buffers than an epoch has batches, nor than the
        machine's free memory holds less 1 GiB or one buffer, whichever is
        more (memory beyond what is free would come out of the page cache,
        where the dataset's files are). The loader then keeps to these
        buffers: during an epoch it makes one only for a batch the consumer
        waits for. For datasets of records whose lengths are known (NumPy
        ``.npz`` members, HDF5 rows); others are left as they are. Returns
        the bytes made.
        """
        return self._inner.stock_buffers()

    def metrics(self) -> Dict[str, float]:
        """Samples, bytes, seconds, the consumer's waiting share and skipped samples so far."""
        return self._inner.metrics()

    def close(self) -> None:
        """Stop the workers (also done when the loader is freed)."""
        self._inner.close()

    def __repr__(self) -> str:
        return (
            f"Loader({self.dataset!r}, batch_size={self.batch_size}, rank={self.rank} of {self.world_size}, "
            f"epoch={self.epoch}, batches={len(self)})"
        )
