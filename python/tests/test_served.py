"""`stagehand.Dataset.staged` on a destination `stager serve` still fills,
under a real mpirun: the same batches as from a fully staged destination."""

from __future__ import annotations

import numpy as np

import stagehand
from conftest import MPI_ENV, MPIRUN, binary, run, start_service

NODES = 2


def stager_args(command, cosmo, template):
    return [command, "--source", str(cosmo), "--dest", template, "--policy", "shard", "--seed", "3"]


def batches(template, rank):
    data = stagehand.Dataset.staged(template, rank=rank, world_size=NODES, ranks_per_node=1)
    loader = stagehand.Loader(data, batch_size=2, seed=3, rank=rank, world_size=NODES, workers=2)
    return [(b.indices, b.x.copy(), b.y.copy()) for b in loader.batches()]


def test_reading_while_the_service_stages_gives_the_batches_of_a_staged_destination(cosmo, tmp_path):
    env = {**MPI_ENV, "STAGEHAND_RANKS_PER_NODE": "1"}
    reference = str(tmp_path / "ref{node}")
    run(*MPIRUN, "-np", NODES, "-x", "STAGEHAND_RANKS_PER_NODE", binary("stager"), *stager_args("stage", cosmo, reference),
        env=env)
    expected = [batches(reference, rank) for rank in range(NODES)]

    served = str(tmp_path / "sv{node}")
    node0 = tmp_path / "sv0"
    service = start_service(cosmo, served, node0, tmp_path / "serve.err", "--policy", "shard", "--seed", "3",
                            "--source-bandwidth", "20KB/s")
    try:
        status = run(binary("stager"), "status", node0, "--json")
        got = [batches(served, rank) for rank in range(NODES)]
        for rank in range(NODES):
            assert [b[0] for b in got[rank]] == [b[0] for b in expected[rank]]
            for (_, x, y), (_, ex, ey) in zip(got[rank], expected[rank]):
                assert np.array_equal(x, ex) and np.array_equal(y, ey)
        assert '"phase":"staging"' in status, f"read while files still moved: {status}"
        run(binary("stager"), "stop", node0)
        assert service.wait(timeout=60) == 0, (tmp_path / "serve.err").read_text()
    finally:
        if service.poll() is None:
            service.kill()
