"""`trainer train --tensorboard DIR`, read by TensorBoard's own reader.

TensorBoard's `EventAccumulator` (the `tensorboard` package from PyPI)
reads the event files the trainer writes and finds every scalar at the
steps and with the values of the run's JSON report.
"""

from __future__ import annotations

import json

import pytest
from conftest import binary, run, simgen
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("tensorboard")
    data, board = root / "cosmo", root / "board"
    simgen("cosmo", "--out", data, "--boxes", "3", "--grid", "64", "--particles", "64", "--split", "2")
    report = run(binary("trainer"), "train", "--config", "mlperf-small", "--data", data, "--epochs", "2",
                 "--batch", "2", "--tensorboard", board)
    accumulator = EventAccumulator(str(board))
    accumulator.Reload()
    return json.loads(report), accumulator


def scalars(accumulator, tag):
    return [(e.step, e.value) for e in accumulator.Scalars(tag)]


def test_tensorboard_reads_the_loss_of_every_step(trained):
    report, accumulator = trained
    expected = [(k + 1, pytest.approx(loss, rel=1e-6)) for k, loss in enumerate(report["losses"])]
    assert scalars(accumulator, "train/loss") == expected


def test_tensorboard_reads_each_epochs_figures_at_its_last_step(trained):
    report, accumulator = trained
    steps = report["steps_per_epoch"]
    tags = set(accumulator.Tags()["scalars"])
    for k, epoch in enumerate(report["epochs"]):
        at = (k + 1) * steps
        figures = {
            "train/epoch": epoch["epoch"],
            "train/epoch_loss": epoch["train_loss"],
            "train/learning_rate": epoch["lr"],
            "perf/samples_per_sec": epoch["samples_per_sec"],
            "perf/gflops_per_sec": epoch["flops_per_sec"] / 1e9,
            "perf/step_median_ms": 1e3 * epoch["step_time"]["median_secs"],
            "perf/step_imbalance": epoch["step_time"]["imbalance"],
        }
        absent = set()
        for name, value in epoch["validation"].items():
            if name == "samples":
                continue
            if value is None:
                # Undefined (relative_mae when the validation targets are all
                # the same): no scalar rather than a made-up number.
                absent.add(f"validation/{name}")
                continue
            if isinstance(value, list):
                figures.update({f"validation/{name}/{i}": x for i, x in enumerate(value)})
            else:
                figures[f"validation/{name}"] = value
        assert not absent & tags, f"{absent & tags} written though the report has no value"
        for tag, value in figures.items():
            assert tag in tags, f"{tag} missing from {sorted(tags)}"
            assert scalars(accumulator, tag)[k] == (at, pytest.approx(value, rel=1e-6)), tag
    for tag in ["perf/data_wait_percent", "perf/communication_percent"]:
        assert [step for step, _ in scalars(accumulator, tag)] == [steps, 2 * steps]
