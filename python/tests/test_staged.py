"""Node-local reads of what `stager stage` placed, under a real mpirun."""

from __future__ import annotations

import json
import shutil

import pytest

import stagehand
from conftest import MPI_ENV, MPIRUN, binary, run

RANKS, PER_NODE = 4, 2


@pytest.fixture(scope="module")
def staged(cosmo, tmp_path_factory):
    """`cosmo` sharded onto 2 pretend nodes of 2 ranks each."""
    dest = tmp_path_factory.mktemp("staged")
    template = str(dest / "node{node}")
    run(*MPIRUN, "-np", RANKS, "-x", "STAGEHAND_RANKS_PER_NODE", binary("stager"), "stage", "--source", cosmo,
        "--dest", template, "--policy", "shard", "--seed", "3",
        env={**MPI_ENV, "STAGEHAND_RANKS_PER_NODE": str(PER_NODE)})
    return template, dest


def open_rank(cosmo, template, rank, **overrides):
    """What `stager stage` placed on `rank`'s node: nothing but the template
    and where the rank is; the placement record says the rest."""
    options = dict(rank=rank, world_size=RANKS, ranks_per_node=PER_NODE)
    options.update(overrides)
    return stagehand.Dataset.staged(template, **options)


def test_each_node_reads_exactly_the_files_the_stager_put_there(cosmo, staged):
    template, dest = staged
    manifest = json.loads((cosmo / "manifest.json").read_text())
    paths = [f["path"] for f in manifest["files"]]
    for rank in range(RANKS):
        node = rank // PER_NODE
        on_disk = {p.name for p in (dest / f"node{node}").iterdir() if not p.name.startswith(".")}
        data = open_rank(cosmo, template, rank)
        placed = {paths[i] for i in data.node_files}
        assert placed == on_disk, f"rank {rank}: placement says {placed}, node {node} holds {on_disk}"
        assert {p.parent.name for p in data.paths} == {f"node{node}"}
    nodes = [set(open_rank(cosmo, template, r).node_samples) for r in (0, PER_NODE)]
    assert not nodes[0] & nodes[1] and nodes[0] | nodes[1] == set(range(24))


@pytest.mark.parametrize("drop_last", [False, True])
def test_every_rank_takes_the_same_steps_over_its_nodes_samples(cosmo, staged, drop_last):
    template, _ = staged
    counts, seen = set(), []
    for rank in range(RANKS):
        data = open_rank(cosmo, template, rank)
        loader = stagehand.Loader(data, batch_size=2, seed=3, rank=rank, world_size=RANKS, drop_last=drop_last)
        batches = list(loader.batches())
        counts.add(len(batches))
        ids = [i for b in batches for i in b.indices]
        assert set(ids) <= set(data.node_samples)
        seen += ids
        # The values are those of the source dataset's samples with these ids.
        source = stagehand.Dataset.from_manifest(cosmo)
        first = batches[0]
        assert (first.x[0].ravel() == source.read(first.indices[0])[0]).all()
    assert len(counts) == 1
    if drop_last:
        # Shares of the node with fewest samples: none repeats.
        assert len(seen) == len(set(seen))
    else:
        # Padded to the node with most samples: every sample is read.
        assert set(seen) == set(range(24))


def test_the_topology_defaults_come_from_the_environment(cosmo, staged, monkeypatch):
    template, _ = staged
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", str(RANKS))
    monkeypatch.setenv("STAGEHAND_RANKS_PER_NODE", str(PER_NODE))
    data = stagehand.Dataset.staged(template)
    assert data.node_files == open_rank(cosmo, template, 3).node_files
    assert "node 1 of 2" in repr(data)
    with pytest.raises(ValueError, match="opened for rank 3 of 4"):
        stagehand.Loader(data, batch_size=2, rank=0, world_size=RANKS)


def test_a_loader_over_a_staged_dataset_takes_the_rank_it_was_opened_for(cosmo, staged):
    template, _ = staged
    data = open_rank(cosmo, template, 2)
    assert data.staged_for == (2, RANKS)
    assert stagehand.Dataset.from_manifest(cosmo).staged_for is None
    loader = stagehand.Loader(data, batch_size=2, seed=3)
    assert (loader.rank, loader.world_size) == (2, RANKS)
    explicit = stagehand.Loader(data, batch_size=2, seed=3, rank=2, world_size=RANKS)
    assert [b.indices for b in loader.batches()] == [b.indices for b in explicit.batches()]


def test_a_staged_loader_resumes_only_at_the_world_size_it_was_placed_for(cosmo, staged):
    template, _ = staged
    state = stagehand.Loader(open_rank(cosmo, template, 1), batch_size=2, seed=3).state_dict()
    fewer = stagehand.Loader(open_rank(cosmo, template, 0, world_size=2, ranks_per_node=1), batch_size=2, seed=3)
    with pytest.raises(ValueError, match="placed for its world size"):
        fewer.load_state_dict(state)


def test_a_destination_without_its_files_or_staged_for_other_nodes_is_a_data_error(cosmo, staged, tmp_path):
    template, dest = staged
    with pytest.raises(stagehand.DataError, match="no placement record"):
        open_rank(cosmo, str(tmp_path / "empty{node}"), 0)
    # Four nodes of one rank each, where the stager placed two.
    with pytest.raises(stagehand.DataError, match="staged as node 0 of 2.*node 0 of 4"):
        open_rank(cosmo, template, 0, ranks_per_node=1)
    # A copy of node 1's destination that lost a file.
    copy = tmp_path / "copy1"
    shutil.copytree(dest / "node1", copy)
    next(p for p in copy.iterdir() if p.is_file() and not p.name.startswith(".")).unlink()
    with pytest.raises(stagehand.DataError, match=f"{copy}.*files present"):
        open_rank(cosmo, str(tmp_path / "copy{node}"), 2)
