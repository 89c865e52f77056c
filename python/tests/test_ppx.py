"""PPX (Etalumis' protocol) against pyprob 1.5.0 itself, for real: pyprob's
RemoteModel runs our served tau simulator, and our `simgen traces --ppx`
records a simulator written in Python with pyprob's own message classes
(tests/ppx/gaussian_simulator.py). pyprob lives in python/.venv-pyprob
(python/setup-pyprob-venv.sh, which `make test-python` runs)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import stagehand
from conftest import REPO, binary

PYPROB_PYTHON = REPO / "python" / ".venv-pyprob" / "bin" / "python"
HERE = Path(__file__).resolve().parent / "ppx"


def pyprob_python() -> Path:
    if not PYPROB_PYTHON.is_file():
        pytest.fail(f"{PYPROB_PYTHON} is missing: run `bash python/setup-pyprob-venv.sh`")
    return PYPROB_PYTHON


def start(args, banner: str) -> tuple[subprocess.Popen, str]:
    """Start a PPX server on a free port; return it and its address, read
    from the first line it prints (on stdout or stderr)."""
    stream = "stderr" if banner.startswith("simgen") else "stdout"
    process = subprocess.Popen([str(a) for a in args], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = getattr(process, stream).readline()
    if not line.startswith(banner):
        process.kill()
        pytest.fail(f"{args[0]} did not start: {line}{process.communicate()}")
    return process, line.split()[-1]


def stop(process: subprocess.Popen):
    process.kill()
    process.communicate()


def test_pyprob_draws_prior_traces_from_our_served_simulator_with_our_addresses_values_and_log_probs(tmp_path):
    log = tmp_path / "served.jsonl"
    server, address = start(
        [binary("simgen"), "ppx-serve", "--address", "tcp://127.0.0.1:*", "--log", log], "simgen ppx-serve")
    try:
        out = tmp_path / "pyprob.jsonl"
        done = subprocess.run([str(pyprob_python()), str(HERE / "pyprob_prior.py"), address, "8", str(out)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    finally:
        stop(server)
    theirs = [json.loads(line) for line in out.read_text().splitlines()]
    ours = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(theirs) == len(ours) == 8
    for trace, (pyprob_trace, served) in enumerate(zip(theirs, ours)):
        sampled = [v for v in pyprob_trace if not v["observed"]]
        assert len(sampled) == len(served["choices"]), f"trace {trace}"
        for v, c in zip(sampled, served["choices"]):
            # pyprob names a categorical by its size: Categorical(len_probs:9).
            assert re.sub(r"Categorical\(len_probs:\d+\)", "Categorical", v["address"]) == c["address"]
            assert v["value"] == c["value"], c["address"]
            assert v["control"] == c["controlled"], c["address"]
            # pyprob scores in float32.
            assert v["log_prob"] == pytest.approx(c["log_prob"], rel=1e-5, abs=1e-5), c["address"]
        (observed,) = [v for v in pyprob_trace if v["observed"]]
        assert observed["address"] == served["observation_address"] == "calorimeter__Normal__1"
        assert observed["size"] == 20 * 35 * 35
        assert observed["log_prob"] == pytest.approx(served["log_likelihood"], rel=1e-4)


def gaussian(*flags) -> tuple[subprocess.Popen, str]:
    return start([pyprob_python(), HERE / "gaussian_simulator.py", "tcp://127.0.0.1:*", *flags], "gaussian simulator")


def test_simgen_traces_records_a_python_ppx_simulator(tmp_path):
    simulator, address = gaussian("--n", "16", "--sigma", "2.0")
    try:
        out = tmp_path / "gaussian"
        report = json.loads(subprocess.run(
            [str(binary("simgen")), "traces", "--out", str(out), "--traces", "300", "--ppx", address],
            capture_output=True, text=True, check=True).stdout)
    finally:
        stop(simulator)
    assert report["simulator"]["model_name"] == "gaussian unknown mean"
    data = stagehand.Dataset.from_manifest(out)
    assert len(data) == 300 and tuple(data.x_shape) == (16,)
    position = data.addresses.index("mu__Normal__1")
    mus, means = [], []
    for index in range(len(data)):
        x, y = data.read(index)
        rows = y.reshape(-1, stagehand.Dataset.CHOICE_WIDTH)
        (mu,) = rows[rows[:, 0] == position][:, 1]
        mus.append(mu)
        means.append(x.mean())
    mus, means = np.array(mus), np.array(means)
    # mu ~ N(0, 1); the observations' mean ~ N(mu, 2 / 4): both as drawn.
    assert abs(mus.mean()) < 0.25 and 0.8 < mus.std() < 1.2
    assert np.abs(means - mus).max() < 4 * 0.5 and 0.35 < (means - mus).std() < 0.65


@pytest.mark.parametrize("flag, message", [
    ("--unknown-distribution", r"at mu: a Weibull distribution, which traces cannot hold"),
    ("--die-mid-run", r"closed the connection"),
])
def test_a_ppx_simulator_that_breaks_the_protocol_is_one_clear_error(tmp_path, flag, message):
    simulator, address = gaussian(flag)
    started = time.monotonic()
    try:
        done = subprocess.run(
            [str(binary("simgen")), "traces", "--out", str(tmp_path / "t"), "--traces", "5", "--ppx", address,
             "--ppx-timeout", "120"], capture_output=True, text=True, timeout=120)
    finally:
        stop(simulator)
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and re.search(message, errors[0]), done.stderr
    assert time.monotonic() - started < 30
