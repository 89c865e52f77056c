"""Fixtures: small datasets of every kind, written by the real `simgen`.

The binaries come from the cargo build `make test` does first
(`target/debug`, or the directory in STAGEHAND_BIN_DIR). A missing binary
fails the test run with the command that builds it; nothing is skipped.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN_DIR = Path(os.environ.get("STAGEHAND_BIN_DIR", REPO / "target" / "debug"))

# Open MPI refuses root without these; shared memory only (see the Makefile).
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "--mca", "pml", "ob1"]


def binary(name: str) -> Path:
    path = BIN_DIR / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: build it with `cargo test --workspace --all-targets --no-run` "
                    f"(what `make test-python` runs), or set STAGEHAND_BIN_DIR")
    return path


def run(*args, env=None) -> str:
    """Run a command; on failure, fail the test with its output."""
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def simgen(*args) -> str:
    return run(binary("simgen"), *args)


@pytest.fixture(scope="session")
def cosmo(tmp_path_factory) -> Path:
    """24 CosmoFlow samples of 8^3 x 4 in 3 TFRecord files, with index sidecars."""
    out = tmp_path_factory.mktemp("data") / "cosmo"
    simgen("cosmo", "--out", out, "--boxes", "3", "--grid", "16", "--particles", "16")
    return out


@pytest.fixture(scope="session")
def cosmo_gzip(tmp_path_factory) -> Path:
    """The same kind of samples, GZIP-compressed, without index sidecars."""
    out = tmp_path_factory.mktemp("data") / "cosmo-gzip"
    simgen("cosmo", "--out", out, "--boxes", "2", "--grid", "16", "--particles", "16", "--gzip")
    for sidecar in out.glob("*.idx"):
        sidecar.unlink()
    return out


@pytest.fixture(scope="session")
def climate(tmp_path_factory) -> Path:
    """6 DeepCAM samples of 16 x 128 x 256 in train/ and validation/, with stats.h5."""
    out = tmp_path_factory.mktemp("data") / "climate"
    simgen("climate", "--out", out, "--samples", "6", "--height", "128", "--width", "256",
           "--cyclones", "1-3", "--rivers", "1-2", "--seed", "9", "--val-fraction", "0.34")
    return out


@pytest.fixture(scope="session")
def scattering(tmp_path_factory) -> Path:
    """3 multislice samples (1024 CBED patterns of 32 x 32) in one LMDB store."""
    out = tmp_path_factory.mktemp("data") / "scattering"
    simgen("multislice", "--out", out, "--samples", "3", "--grid", "32", "--sampling", "0.17A",
           "--thickness", "16A..40A", "--offset", "none")
    return out


@pytest.fixture(scope="session")
def jets(tmp_path_factory) -> Path:
    """24 HEP-CNN collision events of 3 x 32 x 32 in 3 files, one of them in validation/."""
    out = tmp_path_factory.mktemp("data") / "jets"
    simgen("jets", "--out", out, "--events", "24", "--per-file", "8", "--size", "32", "--val-fraction", "0.34",
           "--seed", "3")
    return out


@pytest.fixture(scope="session")
def massmaps(tmp_path_factory) -> Path:
    """36 CosmoGAN mass maps of 16 x 16 (three boxes) in 3 files, one of them in validation/."""
    out = tmp_path_factory.mktemp("data") / "massmaps"
    simgen("massmaps", "--out", out, "--maps", "36", "--per-file", "12", "--size", "16", "--depth", "4",
           "--val-fraction", "0.34", "--seed", "6")
    return out


@pytest.fixture(scope="session")
def traces(tmp_path_factory) -> Path:
    """20 simulator traces in one LMDB store."""
    out = tmp_path_factory.mktemp("data") / "traces"
    simgen("traces", "--out", out, "--traces", "20", "--seed", "5")
    return out


def pytest_runtest_logreport(report):
    """A skipped test is recorded where `make test` counts skips (the file
    STAGEHAND_SKIP_LOG names), as the Rust tests' `e2e::skip` does."""
    log = os.environ.get("STAGEHAND_SKIP_LOG")
    if log and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        with open(log, "a") as out:
            out.write(f"python {report.nodeid}: {reason}\n")


def start_service(source, template, node0, log, *extra, nodes=2):
    """`stager serve` of `source` into `template` on `nodes` pretend nodes of
    one rank each, returned once node 0's service answers (stderr to `log`)."""
    env = {**os.environ, **MPI_ENV, "STAGEHAND_RANKS_PER_NODE": "1"}
    service = subprocess.Popen(
        [*map(str, MPIRUN), "-np", str(nodes), "-x", "STAGEHAND_RANKS_PER_NODE", str(binary("stager")), "serve",
         "--source", str(source), "--dest", template, *map(str, extra)],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)
    deadline = time.monotonic() + 60
    while subprocess.run([binary("stager"), "status", node0], capture_output=True).returncode != 0:
        if service.poll() is not None or time.monotonic() > deadline:
            service.kill()
            pytest.fail(f"the service never answered:\n{Path(log).read_text()}")
        time.sleep(0.1)
    return service
