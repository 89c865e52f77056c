"""PPX (Etalumis' protocol) against pyprob 1.5.0 itself, for real: pyprob's
RemoteModel runs our served tau simulator, and our `simgen traces --ppx`
records a simulator written in Python with pyprob's own message classes
(tests/ppx/gaussian_simulator.py). pyprob lives in python/.venv-pyprob
(python/setup-pyprob-venv.sh, which `make test-python` runs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import stagehand
from conftest import MPI_ENV, MPIRUN, REPO, binary

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


def trainer_infer_over_ppx(address: str, observations: Path, report: Path, ranks: int = 1) -> str:
    command = [str(binary("trainer")), "infer", "--ppx", address, "--engine", "rmh", "--observations",
               str(observations), "--count", "2", "--chains", "4", "--steps", "2000", "--burn-in", "400",
               "--seed", "3", "--report", str(report)]
    if ranks > 1:
        command = [*MPIRUN, "-np", str(ranks), *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env={**os.environ, **MPI_ENV})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_trainer_infer_over_ppx_recovers_the_closed_form_gaussian_posterior_on_one_rank_and_two(tmp_path):
    n, sigma = 16, 2.0
    simulator, address = gaussian("--n", str(n), "--sigma", str(sigma))
    try:
        held_out = tmp_path / "held-out"
        subprocess.run([str(binary("simgen")), "traces", "--out", str(held_out), "--traces", "2", "--seed", "11",
                        "--ppx", address], capture_output=True, text=True, check=True)
        one = trainer_infer_over_ppx(address, held_out, tmp_path / "one.json")
    finally:
        stop(simulator)
    assert "gaussian unknown mean" in one
    results = json.loads((tmp_path / "one.json").read_text())
    data = stagehand.Dataset.from_manifest(held_out)
    # mu | x ~ N(m, s^2): 1/s^2 = 1 + n/sigma^2, m = s^2 sum(x) / sigma^2.
    s2 = 1.0 / (1.0 + n / sigma**2)
    for r in results:
        x, _ = data.read(r["index"])
        m = s2 * float(np.sum(x)) / sigma**2
        assert r["latents"] == ["mu__Normal__1"]
        (mu,) = r["rmh"]["latents"]
        assert mu["rhat"] < 1.05
        # Five standard errors of the chains' mean, and 10 % on the deviation.
        assert abs(mu["mean"] - m) < 5 * np.sqrt(s2 / mu["ess"]), (mu, m)
        assert abs(mu["std"] - np.sqrt(s2)) < 0.1 * np.sqrt(s2), (mu, np.sqrt(s2))

    # Two ranks, a simulator each: the same chains, observation by observation.
    sockets = tmp_path / "sockets"
    sockets.mkdir()
    simulators = [gaussian_at(f"ipc://{sockets}/sim-{rank}", n, sigma) for rank in range(2)]
    try:
        trainer_infer_over_ppx(f"ipc://{sockets}/sim-{{rank}}", held_out, tmp_path / "two.json", ranks=2)
    finally:
        for s in simulators:
            stop(s)
    two = json.loads((tmp_path / "two.json").read_text())
    assert [r["rank"] for r in two] == [0, 1]
    assert strip(two) == strip(results)


def strip(value):
    """A report without what differs between runs: ranks and seconds."""
    if isinstance(value, list):
        return [strip(v) for v in value]
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in ("rank", "seconds")}
    return value


def test_inference_compilation_over_ppx_recovers_the_closed_form_gaussian_posterior(tmp_path):
    """Train the network on traces `simgen traces --ppx` recorded from the
    Python simulator, then importance-sample with its proposals over PPX."""
    n, sigma = 16, 1.0
    simulator, address = gaussian("--n", str(n), "--sigma", str(sigma))
    try:
        for name, traces, seed in (("train", 2000, 1), ("val", 200, 2), ("held-out", 2, 11)):
            subprocess.run([str(binary("simgen")), "traces", "--out", str(tmp_path / name), "--traces", str(traces),
                            "--seed", str(seed), "--ppx", address], capture_output=True, text=True, check=True)
        trained = subprocess.run(
            [str(binary("trainer")), "train", "--model", "etalumis", "--config", "small", "--data",
             str(tmp_path / "train"), "--val", str(tmp_path / "val"), "--batch", "64", "--optimizer", "adam", "--lr",
             "0.001", "--epochs", "6", "--seed", "1", "--checkpoint", str(tmp_path / "ckpt")],
            capture_output=True, text=True, timeout=600)
        assert trained.returncode == 0, trained.stderr
        samples = 500
        done = subprocess.run(
            [str(binary("trainer")), "infer", "--ppx", address, "--engine", "is", "--checkpoint",
             str(tmp_path / "ckpt"), "--observations", str(tmp_path / "held-out"), "--count", "2", "--samples",
             str(samples), "--seed", "3", "--report", str(tmp_path / "ic.json")],
            capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    finally:
        stop(simulator)
    # The network learned a proposal: validation −log q well under the prior's.
    epochs = json.loads(trained.stdout)["epochs"]
    last = epochs[-1]["validation"]
    assert last["loss"] < last["prior_loss"] - 0.5, last
    data = stagehand.Dataset.from_manifest(tmp_path / "held-out")
    s2 = 1.0 / (1.0 + n / sigma**2)
    for r in json.loads((tmp_path / "ic.json").read_text()):
        x, _ = data.read(r["index"])
        m = s2 * float(np.sum(x)) / sigma**2
        ic = r["network"]
        (mu,) = ic["latents"]
        # Proposals close to the posterior keep most samples effective; the
        # prior's would keep at most s * sqrt(2 - s^2) = 34 % of them here
        # (its ESS share is 1 / ∫ p(mu | x)^2 / p(mu) dmu).
        assert ic["ess"] > 0.6 * samples, ic
        # Five standard errors of the weighted mean, and 10 % on the deviation.
        assert abs(mu["mean"] - m) < 5 * np.sqrt(s2 / ic["ess"]), (mu, m)
        assert abs(mu["std"] - np.sqrt(s2)) < 0.1 * np.sqrt(s2), (mu, np.sqrt(s2))
        assert ic["from_prior"] == 0


def gaussian_at(address: str, n: int, sigma: float) -> subprocess.Popen:
    process, _ = start([pyprob_python(), HERE / "gaussian_simulator.py", address, "--n", str(n), "--sigma",
                        str(sigma)], "gaussian simulator")
    return process


def test_pyprob_runs_its_own_importance_sampling_and_metropolis_hastings_on_our_served_simulator(tmp_path):
    server, address = start([binary("simgen"), "ppx-serve", "--address", "tcp://127.0.0.1:*"], "simgen ppx-serve")
    try:
        done = subprocess.run(
            [str(pyprob_python()), str(HERE / "pyprob_posterior.py"), address, "calorimeter", "20"],
            capture_output=True, text=True, timeout=300)
    finally:
        stop(server)
    assert done.returncode == 0, done.stderr
    # pyprob prints its progress and the socket's close on stdout too.
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("{")]
    result = json.loads(line)
    assert result["IMPORTANCE_SAMPLING"] == {"traces": 20, "finite": True}
    assert result["RANDOM_WALK_METROPOLIS_HASTINGS"]["traces"] == 20
