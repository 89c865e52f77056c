"""Rank, world size and ranks per node from the launchers' variables."""

from __future__ import annotations

import pytest

from stagehand import topology


def test_a_process_without_a_launcher_is_rank_0_of_1():
    found = topology({})
    assert (found.rank, found.world_size, found.ranks_per_node, found.source) == (0, 1, 1, "single process")


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"}, (3, 8, 4, "torchrun")),
        ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6", "OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, (5, 6, 3, "Open MPI")),
        ({"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALNRANKS": "1"}, (1, 2, 1, "MPICH")),
        ({"SLURM_PROCID": "7", "SLURM_NTASKS": "12", "SLURM_NTASKS_PER_NODE": "4(x3)"}, (7, 12, 4, "Slurm")),
        # No per-node count: one node holds every rank.
        ({"SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, (2, 4, 4, "Slurm")),
        # The stager's pretend nodes win over the launcher's count.
        ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_SIZE": "4",
          "STAGEHAND_RANKS_PER_NODE": "2"}, (3, 4, 2, "Open MPI")),
    ],
)
def test_each_launchers_variables_give_the_rank_and_its_node(environ, expected):
    found = topology(environ)
    assert (found.rank, found.world_size, found.ranks_per_node, found.source) == expected
    assert found.node == found.rank // found.ranks_per_node


@pytest.mark.parametrize(
    "environ, message",
    [
        ({"RANK": "two", "WORLD_SIZE": "4"}, "RANK='two' is not an integer"),
        ({"RANK": "4", "WORLD_SIZE": "4"}, "rank 4 is not below the world size 4"),
        ({"STAGEHAND_RANKS_PER_NODE": "0"}, "at least one rank"),
    ],
)
def test_bad_variables_are_errors_naming_them(environ, message):
    with pytest.raises(ValueError, match=message):
        topology(environ)
