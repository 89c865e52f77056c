"""A DLIO data loader backed by ``stagehand.Loader``.

DLIO (Argonne's deep-learning I/O benchmark, the engine of MLPerf Storage)
takes a custom loader class by name; give it this one::

    dlio_benchmark workload=cosmoflow_h100 \\
        ++workload.reader.data_loader_classname=stagehand.dlio.StagehandDataLoader \\
        ++workload.reader.data_loader_sampler=iterative

DLIO hands the loader its file list, batch size, ``read_threads``,
``prefetch_size``, seed and sample shuffle; the loader reads DLIO's
TFRecord (the ``image`` feature of each Example), ``.npz`` (array ``x``,
samples on its last axis) and HDF5 (dataset ``records``, samples on its
first axis) files with Rust worker threads, every rank the same number of
batches, and yields each batch's bytes as uint8 arrays (DLIO's own readers
yield a fixed stand-in image; its training step only sleeps). See
docs/dlio.md.

Importing this module needs DLIO installed (``pip install --no-deps
dlio_benchmark==2.0.0`` plus what its code imports; docs/dlio.md).
"""

from __future__ import annotations

from typing import Iterator, Optional

from dlio_benchmark.common.enumerations import DataLoaderType, DatasetType, FormatType, Shuffle
from dlio_benchmark.data_loader.base_data_loader import BaseDataLoader
from dlio_benchmark.utils.utility import DLIOMPI

from ._loader import Batch, Loader
from ._stagehand import Dataset

#: The DLIO formats this loader reads, and how each is opened.
FORMATS = {
    FormatType.TFRECORD: lambda paths: Dataset.tfrecord(paths, feature="image"),
    FormatType.NPZ: lambda paths: Dataset.npz(paths, key="x", axis="last"),
    FormatType.HDF5: lambda paths: Dataset.hdf5(paths, name="records"),
}


def batches_in_flight(prefetch_size: int, read_threads: int) -> int:
    """Batches read ahead, as many as DLIO's own PyTorch reader keeps.

    DLIO gives ``torch.utils.data.DataLoader`` a prefetch factor of
    ``ceil(prefetch_size / read_threads)`` batches per worker, 2 when
    ``prefetch_size`` is 0 (``torch_data_loader.py``), so ``read_threads``
    times that are in flight. Fewer leave a workload of large samples
    (UNet3D: batches of about 1 GB) waiting after the first step, which
    DLIO leaves out of its accelerator utilisation.
    """
    workers = max(1, read_threads)
    per_worker = -(-prefetch_size // workers) if prefetch_size > 0 else 2
    return workers * per_worker


class StagehandDataLoader(BaseDataLoader):
    """DLIO's loader interface (``read``, ``next``, ``finalize``) over ``stagehand.Loader``.

    ``read`` opens the files once; each ``next`` is one epoch, in an order
    that depends only on DLIO's seed, the epoch and the rank. Samples past
    equal whole batches per rank are left out, as DLIO's step count
    (samples / batch size / ranks, rounded down) leaves them out.
    """

    def __init__(self, format_type: FormatType, dataset_type: DatasetType, epoch: int) -> None:
        super().__init__(format_type, dataset_type, epoch, DataLoaderType.CUSTOM)
        if format_type not in FORMATS:
            readable = ", ".join(sorted(str(f) for f in FORMATS))
            raise ValueError(f"stagehand.dlio reads DLIO's {readable} files, not {format_type}")
        self._loader: Optional[Loader] = None

    def _files(self):
        args = self._args
        files = args.file_list_train if self.dataset_type is DatasetType.TRAIN else args.file_list_eval
        # DLIO reshuffles its list in place every epoch (reconfigure); the
        # loader shuffles samples itself, from a list every rank sorts alike.
        return sorted(str(f) for f in files)

    def read(self) -> None:
        """Open DLIO's files for this rank (called once, before the first epoch)."""
        args = self._args
        dataset = FORMATS[self.format_type](self._files())
        self._loader = Loader(
            dataset,
            batch_size=self.batch_size,
            workers=max(1, args.read_threads),
            prefetch=batches_in_flight(args.prefetch_size, args.read_threads),
            shuffle=args.sample_shuffle is not Shuffle.OFF,
            seed=args.seed,
            drop_last=True,
            rank=args.my_rank,
            world_size=args.comm_size,
        )
        # Before DLIO's first epoch, as its own readers open their files
        # and start their workers before the first step.
        self._loader.make_buffers()
        # Making them takes a rank as long as its memory takes to map (on a
        # VM whose fresh memory is slow, seconds for UNet3D's 1.8 GB
        # batches) and the ranks finish apart; DLIO ends every step in a
        # barrier, so a rank still making buffers would hold the others'
        # first steps, counted against their accelerator utilisation.
        DLIOMPI.get_instance().comm().barrier()

    def next(self) -> Iterator[Batch]:
        """One epoch of batches.

        DLIO's loop breaks out at its step count, so nothing after the last
        batch runs: the epoch number moves on before the first.
        """
        super().next()
        if self._loader is None:
            self.read()
        loader = self._loader
        assert loader is not None
        loader.set_epoch(self.epoch_number)
        self.epoch_number += 1
        for batch in loader.batches():
            yield batch.x

    def finalize(self) -> None:
        """Nothing to release between epochs: the workers stop with each epoch."""
