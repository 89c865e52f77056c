"""The documentation's runnable snippets run, as a reader would paste them.

A fenced ```sh or ```python block right after a `<!-- runnable -->` line is
run; the blocks of one page run in order, in one fresh directory, so a page
can generate data in one block and read it in the next. Shell blocks run
under `bash -euo pipefail` with the test build's binaries (`simgen`,
`stager`, `trainer`) first on PATH; Python blocks run in this virtual
environment (numpy, h5py, lmdb, tensorflow, torch, stagehand).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BIN_DIR, MPI_ENV, REPO

RUNNABLE = re.compile(r"^<!-- runnable -->\n```(sh|bash|python)\n(.*?)^```$", flags=re.S | re.M)


def pages() -> list[Path]:
    return sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])


def runnable_blocks(page: Path) -> list[tuple[str, str]]:
    return RUNNABLE.findall(page.read_text())


PAGES_WITH_SNIPPETS = [page for page in pages() if runnable_blocks(page)]


def test_the_pages_a_newcomer_follows_have_runnable_snippets():
    names = {str(page.relative_to(REPO)) for page in PAGES_WITH_SNIPPETS}
    for page in ["docs/quickstart.md", "docs/formats.md"]:
        assert page in names, f"{page} has no <!-- runnable --> block"


def snippet_env() -> dict:
    for name in ["simgen", "stager", "trainer"]:
        if not (BIN_DIR / name).is_file():
            pytest.fail(f"{BIN_DIR / name} is missing: the snippets run the test build's binaries "
                        f"(`cargo build -p stagehand-simgen -p stagehand-stager -p stagehand-trainer`)")
    return {
        **os.environ,
        **MPI_ENV,
        "PATH": f"{BIN_DIR}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        # Shared memory between the ranks of this one machine, and more
        # ranks than cores allowed: what docs/troubleshooting.md tells a
        # reader on a laptop, set here so the snippets show plain mpirun.
        "OMPI_MCA_btl": "self,vader",
        "OMPI_MCA_pml": "ob1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_hwloc_base_binding_policy": "none",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


@pytest.mark.parametrize("page", PAGES_WITH_SNIPPETS, ids=lambda page: str(page.relative_to(REPO)))
def test_the_runnable_snippets_of_the_page_run(page, tmp_path):
    env = snippet_env()
    for number, (language, code) in enumerate(runnable_blocks(page), start=1):
        command = [sys.executable, "-c", code] if language == "python" else ["bash", "-euo", "pipefail", "-c", code]
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.fail(f"{page.relative_to(REPO)}, runnable block {number} ({language}) exited {done.returncode}:\n"
                        f"{code}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}")
