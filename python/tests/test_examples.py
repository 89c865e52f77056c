"""The examples docs/python.md shows: the same text as the files, and they run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

EXAMPLES = REPO / "python" / "examples"
VENV_BIN = Path(sys.executable).parent


def documented_blocks() -> dict:
    """Every ```python block of docs/python.md that follows `<!-- example: NAME -->`."""
    text = (REPO / "docs" / "python.md").read_text()
    return dict(re.findall(r"<!-- example: (\S+) -->\n```python\n(.*?)```", text, flags=re.S))


def test_the_documented_examples_are_the_files_that_run():
    blocks = documented_blocks()
    assert sorted(blocks) == ["tf_keras.py", "torch_ddp.py"]
    for name, code in blocks.items():
        assert code == (EXAMPLES / name).read_text(), f"docs/python.md shows another {name} than python/examples"


def run_example(command, cwd) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "2"})
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def test_the_pytorch_ddp_example_trains_on_two_ranks(cosmo, tmp_path):
    out = run_example([VENV_BIN / "torchrun", "--standalone", "--nproc_per_node", "2",
                       EXAMPLES / "torch_ddp.py", cosmo], tmp_path)
    assert re.search(r"epoch 1: loss \d+\.\d+, \d+ samples/s on rank 0", out), out
    assert (tmp_path / "checkpoint.pt").is_file()


def test_the_keras_example_trains(cosmo, tmp_path):
    out = run_example([sys.executable, EXAMPLES / "tf_keras.py", cosmo], tmp_path)
    assert re.search(r"epoch 1: loss \d+\.\d+", out), out
