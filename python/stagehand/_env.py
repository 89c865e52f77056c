"""Which rank this process is, and how many ranks share its node.

The loader gives each rank its share of the samples and the staged-data
reader picks this node's files, so both need the rank, the world size and
the ranks per node. They come, in order, from an initialised
``torch.distributed`` (with the per-node count from the launcher's
variables), or from the variables the launchers set: torchrun (``RANK``,
``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``), Open MPI (``OMPI_COMM_WORLD_*``),
MPICH/Hydra (``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALNRANKS``) and Slurm
(``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_NTASKS_PER_NODE``). Without
any of them the process is rank 0 of 1. ``STAGEHAND_RANKS_PER_NODE``
overrides the ranks per node, as it does for ``stager stage`` (pretend
nodes on one machine).

Nodes are consecutive groups of ``ranks_per_node`` ranks: the block
placement Open MPI (``--map-by slot``, its default) and Slurm
(``--distribution=block``, its default) use.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Mapping, Optional

# (rank, world size, ranks on this node) variables of each launcher, in the
# order they are tried.
_LAUNCHERS = (
    ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"),
    ("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"),
    ("Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE"),
)

RANKS_PER_NODE_ENV = "STAGEHAND_RANKS_PER_NODE"


@dataclass(frozen=True)
class Topology:
    """This process's place in the job."""

    rank: int
    world_size: int
    ranks_per_node: int
    source: str

    @property
    def node(self) -> int:
        """The node index, counting consecutive groups of ``ranks_per_node`` ranks."""
        return self.rank // self.ranks_per_node

    @property
    def local_rank(self) -> int:
        """The rank within the node."""
        return self.rank % self.ranks_per_node


def _integer(environ: Mapping[str, str], name: str) -> Optional[int]:
    value = environ.get(name, "").strip()
    if not value:
        return None
    # Slurm writes per-node counts as "2(x3),1".
    head = value.split(",")[0].split("(")[0]
    try:
        number = int(head)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None
    if number < 0:
        raise ValueError(f"{name}={value!r} is negative")
    return number


def topology(environ: Optional[Mapping[str, str]] = None) -> Topology:
    """The rank, world size and ranks per node of this process (see the module doc)."""
    environ = os.environ if environ is None else environ
    rank = world = local = None
    source = "single process"
    for name, rank_var, world_var, local_var in _LAUNCHERS:
        found = _integer(environ, rank_var), _integer(environ, world_var)
        if found[0] is not None and found[1] is not None:
            rank, world = found
            local = _integer(environ, local_var)
            source = name
            break
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and distributed.is_available() and distributed.is_initialized():
        rank, world, source = distributed.get_rank(), distributed.get_world_size(), "torch.distributed"
    if rank is None or world is None:
        rank, world = 0, 1
    if not 0 <= rank < world:
        raise ValueError(f"{source}: rank {rank} is not below the world size {world}")
    override = _integer(environ, RANKS_PER_NODE_ENV)
    if override is not None:
        if override == 0:
            raise ValueError(f"{RANKS_PER_NODE_ENV}=0: a node has at least one rank")
        local = override
    per_node = min(local or world, world)
    return Topology(rank=rank, world_size=world, ranks_per_node=per_node, source=source)
