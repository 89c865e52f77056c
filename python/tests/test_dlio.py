"""`stagehand.dlio.StagehandDataLoader` inside DLIO 2.0.0 itself (from
PyPI, installed without its DALI/torchaudio/torchvision requirements, see
docs/dlio.md): reduced `cosmoflow_h100` and `unet3d_h100` workloads whose
files DLIO generates, run with DLIO's TensorFlow reader and with ours.

A probe subclass of our loader records what each batch held, so the test
checks the bytes DLIO's loop received, not only that DLIO reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MPI_ENV, MPIRUN

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "deploy" / "dlio"

PROBE = '''
import json, os
from dlio_benchmark.utils.config import ConfigArguments
from stagehand.dlio import StagehandDataLoader as Base


class ProbedLoader(Base):
    """Our loader, writing what every batch of every epoch held."""

    def next(self):
        # Written at every batch: DLIO breaks out of the epoch at its step
        # count, so nothing after the last batch runs.
        epoch, seen = self.epoch_number, []
        args = ConfigArguments.get_instance()
        out = os.path.join(os.environ["PROBE_DIR"], f"rank{args.my_rank}_epoch{epoch}.json")
        for batch in super().next():
            seen.append([len(sample) for sample in batch])
            with open(out, "w") as f:
                json.dump(seen, f)
            yield batch
'''

# Small records, as many steps as the workload's files (one sample each).
COSMOFLOW = [
    "workload=cosmoflow_h100",
    "++workload.dataset.num_files_train=16",
    "++workload.dataset.record_length=65536",
    "++workload.dataset.record_length_stdev=4096",
    "++workload.train.epochs=2",
]


def dlio(tmp_path: Path, out: str, *overrides: str, ranks: int = 1, **env: str) -> dict:
    """Run DLIO in `tmp_path`; its summary.json (fails the test on an error)."""
    venv_bin = Path(sys.executable).parent
    command = [str(venv_bin / "dlio_benchmark"), *overrides, f"++workload.output.folder={tmp_path / out}"]
    if ranks > 1:
        command = [*MPIRUN, "-np", str(ranks), "-x", "PATH", "-x", "PYTHONPATH", "-x", "PROBE_DIR", *command]
    environment = {
        **os.environ,
        **MPI_ENV,
        # DALI's tfrecord2idx, which DLIO's TFRecord generator runs, from deploy/dlio.
        "PATH": f"{SHIM}:{venv_bin}:{os.environ['PATH']}",
        "PYTHONPATH": str(tmp_path),
        **env,
    }
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=environment, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads((tmp_path / out / "summary.json").read_text())


def ours(probe_dir: Path) -> list:
    probe_dir.mkdir(exist_ok=True)
    return [
        "++workload.reader.data_loader_classname=probe.ProbedLoader",
        "++workload.reader.data_loader_sampler=iterative",
    ]


def test_cosmoflow_runs_with_dlios_tensorflow_reader_and_with_ours_reading_every_image(tmp_path):
    import tensorflow as tf

    (tmp_path / "probe.py").write_text(PROBE)
    data = f"++workload.dataset.data_folder={tmp_path / 'data'}"
    theirs = dlio(tmp_path, "tf", *COSMOFLOW, data, "++workload.workflow.generate_data=True")
    probes = tmp_path / "probes"
    mine = dlio(tmp_path, "ours", *COSMOFLOW, data, *ours(probes), PROBE_DIR=str(probes))
    for summary in (theirs, mine):
        metric = summary["metric"]
        assert summary["num_accelerators"] == 1 and summary["epochs"] == 2
        assert 0 < metric["train_au_mean_percentage"] <= 100
        assert metric["train_throughput_mean_samples_per_second"] > 0

    # What DLIO wrote: one Example per file, its image of differing length.
    files = sorted((tmp_path / "data" / "train").glob("*.tfrecord"))
    assert len(files) == 16
    lengths = []
    for path in files:
        for record in tf.data.TFRecordDataset(str(path)):
            example = tf.train.Example.FromString(record.numpy())
            lengths.append(len(example.features.feature["image"].bytes_list.value[0]))
    assert len(set(lengths)) > 1
    epochs = [json.loads((probes / f"rank0_epoch{e}.json").read_text()) for e in (1, 2)]
    for seen in epochs:
        assert len(seen) == 16 and all(len(batch) == 1 for batch in seen)
        assert sorted(n for batch in seen for n in batch) == sorted(lengths)
    assert epochs[0] != epochs[1], "the two epochs came in the same order: no shuffle"


def test_two_ranks_of_dlio_share_every_image_of_an_epoch_in_equal_steps(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    data = f"++workload.dataset.data_folder={tmp_path / 'data'}"
    probes = tmp_path / "probes"
    generate = "++workload.workflow.generate_data=True"
    summary = dlio(tmp_path, "ours", *COSMOFLOW, data, generate, *ours(probes), ranks=2, PROBE_DIR=str(probes))
    assert summary["num_accelerators"] == 2
    for epoch in (1, 2):
        per_rank = [json.loads((probes / f"rank{r}_epoch{epoch}.json").read_text()) for r in (0, 1)]
        assert [len(seen) for seen in per_rank] == [8, 8]
        assert sum(len(batch) for seen in per_rank for batch in seen) == 16


def test_unet3d_npz_files_generated_by_dlio_run_with_our_loader(tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    probes = tmp_path / "probes"
    summary = dlio(
        tmp_path,
        "ours",
        "workload=unet3d_h100",
        f"++workload.dataset.data_folder={tmp_path / 'data'}",
        "++workload.dataset.num_files_train=14",
        "++workload.dataset.record_length=16384",
        "++workload.dataset.record_length_stdev=2048",
        "++workload.dataset.record_length_resize=16384",
        "++workload.train.epochs=1",
        "++workload.train.computation_time=0.01",
        "++workload.workflow.checkpoint=False",
        "++workload.workflow.generate_data=True",
        *ours(probes),
        PROBE_DIR=str(probes),
    )
    assert summary["metric"]["train_throughput_mean_samples_per_second"] > 0
    import numpy as np

    sizes = sorted(np.load(path)["x"].size for path in (tmp_path / "data" / "train").glob("*.npz"))
    (seen,) = [json.loads((probes / "rank0_epoch1.json").read_text())]
    # batch_size 7: two steps of seven whole volumes.
    assert [len(batch) for batch in seen] == [7, 7]
    assert sorted(n for batch in seen for n in batch) == sizes


def test_batches_in_flight_are_as_many_as_dlios_pytorch_reader_keeps():
    from stagehand.dlio import batches_in_flight

    # DLIO's DataLoader: read_threads workers, each prefetch_factor batches
    # ahead, the factor ceil(prefetch_size / read_threads) or 2 when 0.
    assert batches_in_flight(0, 4) == 8  # unet3d_h100 and cosmoflow_h100
    assert batches_in_flight(2, 4) == 4
    assert batches_in_flight(9, 4) == 12
    assert batches_in_flight(0, 0) == 2  # no workers: read in the main loop
