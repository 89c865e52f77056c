"""Type stubs of the compiled half of the package (python/src)."""

from os import PathLike
from typing import Any, ClassVar, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

_Path = Union[str, PathLike]

__version__: str

class DataError(Exception):
    """A sample or dataset that cannot be read: the message names the file and the byte offset or sample."""

class Dataset:
    """Samples of one dataset, opened for reading (see docs/python.md)."""

    CHOICE_WIDTH: ClassVar[int]

    @staticmethod
    def from_manifest(
        root: _Path,
        *,
        manifest: Optional[_Path] = None,
        prefix: Optional[str] = None,
        files: Optional[Sequence[int]] = None,
        transform: str = "log1p",
    ) -> "Dataset": ...
    @staticmethod
    def staged(
        dest: str,
        *,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        ranks_per_node: Optional[int] = None,
        prefix: Optional[str] = None,
        transform: str = "log1p",
    ) -> "Dataset": ...
    @staticmethod
    def cosmoflow(
        paths: Sequence[_Path],
        *,
        size: int,
        channels: int = 4,
        transform: str = "log1p",
        select: Sequence[int] | None = None,
        targets: Sequence[str] | None = None,
    ) -> "Dataset": ...
    @staticmethod
    def deepcam(paths: Sequence[_Path], stats: _Path) -> "Dataset": ...
    @staticmethod
    def scattering(stores: Sequence[_Path]) -> "Dataset": ...
    @staticmethod
    def traces(stores: Sequence[_Path]) -> "Dataset": ...
    @staticmethod
    def tfrecord(paths: Sequence[_Path], *, feature: Optional[str] = None) -> "Dataset": ...
    @staticmethod
    def npz(paths: Sequence[_Path], *, key: str = "x", axis: str = "last") -> "Dataset": ...
    @staticmethod
    def hdf5(paths: Sequence[_Path], *, name: str = "records") -> "Dataset": ...
    @property
    def kind(self) -> str: ...
    @property
    def x_shape(self) -> List[int]: ...
    @property
    def y_shape(self) -> Optional[List[int]]: ...
    @property
    def paths(self) -> List[PathLike]: ...
    @property
    def addresses(self) -> List[str]: ...
    @property
    def node_files(self) -> Optional[List[int]]: ...
    @property
    def node_samples(self) -> Optional[List[int]]: ...
    @property
    def staged_for(self) -> Optional[Tuple[int, int]]: ...
    def __len__(self) -> int: ...
    def read(self, index: int) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def read_record(self, index: int) -> npt.NDArray[np.uint8]: ...

class BatchBuffers:
    """The owner of one batch's memory: the base object of its arrays."""

    @property
    def x_address(self) -> int: ...

class EpochLoader:
    """The worker pool over one epoch at a time (use ``stagehand.Loader``)."""

    def __init__(
        self,
        dataset: Dataset,
        *,
        batch_size: int,
        workers: int,
        prefetch: int,
        shuffle: bool,
        seed: int,
        drop_last: bool,
        rank: int,
        world_size: int,
        skip_corrupt: bool,
        check_finite: bool = False,
    ) -> None: ...
    def order(self, epoch: int) -> List[int]: ...
    def batches(self) -> int: ...
    def start(self, epoch: int, position: int) -> None: ...
    def next(
        self,
    ) -> Optional[Tuple[npt.NDArray[Any], npt.NDArray[np.float32], Optional[npt.NDArray[np.int64]], List[int]]]: ...
    def position(self) -> int: ...
    def metrics(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...
