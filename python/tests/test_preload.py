"""The preload library: unmodified programs (`cat`, h5py) read files of a
destination `stager serve` is still filling, under a real mpirun."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import BIN_DIR, binary, run, start_service


def test_cat_and_h5py_read_files_still_being_staged(climate, tmp_path):
    library = BIN_DIR / "libstagehand_preload.so"
    assert library.exists(), f"{library} is missing: build it with `cargo build -p stagehand-preload`"
    served = str(tmp_path / "sv{node}")
    node0 = tmp_path / "sv0"
    # Slow enough that the files read below are not there when asked for.
    service = start_service(climate, served, node0, tmp_path / "serve.err", "--policy", "replicate",
                            "--source-bandwidth", "2MB/s")
    try:
        deadline = time.monotonic() + 60
        samples = sorted(p.relative_to(climate) for p in climate.rglob("*.h5") if p.name != "stats.h5")
        waiting = [str(p) for p in samples if not (node0 / p).exists()]
        assert len(waiting) >= 2, f"staged before they were asked for ({waiting}): slow the source down"
        late, other = waiting[-1], waiting[-2]
        preload = {**os.environ, "LD_PRELOAD": str(library), "STAGEHAND_DEST": str(node0)}
        copied = subprocess.run(["cat", str(node0 / late)], capture_output=True, env=preload, check=True).stdout
        assert copied == (climate / late).read_bytes()
        script = f"import h5py; f = h5py.File({str(node0 / other)!r}, 'r'); print(sorted(f['climate'].keys()))"
        keys = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=preload)
        assert keys.returncode == 0, keys.stderr
        assert "data" in keys.stdout
        missing = subprocess.run(["cat", str(node0 / "no-such-file.h5")], capture_output=True, text=True, env=preload)
        assert missing.returncode != 0 and "not a file the staging service places" in missing.stderr
        while '"phase":"staged"' not in run(binary("stager"), "status", node0, "--json"):
            assert time.monotonic() < deadline + 60, "staging never finished"
            time.sleep(0.2)
        run(binary("stager"), "stop", node0)
        assert service.wait(timeout=60) == 0, (tmp_path / "serve.err").read_text()
    finally:
        if service.poll() is None:
            service.kill()
