"""The wheel `make wheel` builds, installed where no Rust toolchain is.

A fresh virtual environment gets the wheel (`pip install stagehand-*.whl`,
nothing else from the network: the test environment's packages are put
on its path after its own, so numpy and pytest come from there while
`stagehand` is the wheel's), and the loader and dataset tests run in it
with `cargo` and `rustc` off the PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "target" / "wheels" / "dist"


def wheel() -> Path:
    wheels = sorted(DIST.glob("stagehand-*.whl"))
    if not wheels:
        pytest.fail(f"no wheel in {DIST}: build it with `make wheel` (what `make test-python` runs first)")
    return wheels[-1]


def without_rust(path: str) -> str:
    """PATH without any directory holding cargo or rustc."""
    keep = [d for d in path.split(os.pathsep)
            if d and not any((Path(d) / tool).exists() for tool in ("cargo", "rustc", "rustup"))]
    return os.pathsep.join(keep)


def test_the_wheel_is_abi3_manylinux_and_bundles_what_it_links():
    name = wheel().name
    assert "-cp39-abi3-manylinux_" in name, name
    listing = subprocess.run([sys.executable, "-m", "zipfile", "-l", str(wheel())], capture_output=True, text=True,
                             check=True).stdout
    assert "stagehand.libs/libhdf5" in listing, listing


def test_docs_licenses_lists_every_library_the_wheel_bundles():
    """docs/licenses.md (deploy/licenses.py) names what `make wheel` bundled."""
    sys.path.insert(0, str(REPO / "deploy"))
    try:
        import licenses
    finally:
        sys.path.pop(0)
    page = (REPO / "docs" / "licenses.md").read_text()
    section = page.split("## Libraries the wheel bundles")[1].split("## ")[0]
    listed = sorted(line.split("`")[1] for line in section.splitlines() if line.startswith("| `"))
    assert listed == licenses.bundled_sonames(wheel()), "rerun `python3 deploy/licenses.py > docs/licenses.md`"


def test_the_wheel_installs_and_its_tests_pass_without_a_rust_toolchain(tmp_path):
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True)
    python = fresh / "bin" / "python"
    env = {**os.environ, "PATH": without_rust(os.environ["PATH"])}
    env.pop("VIRTUAL_ENV", None)
    assert shutil.which("cargo", path=env["PATH"]) is None and shutil.which("rustc", path=env["PATH"]) is None
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel())], check=True,
                   env=env, cwd=tmp_path)
    # The test environment's packages after the fresh one's own. Every
    # command runs outside the checkout, whose python/stagehand would
    # otherwise be imported from the working directory.
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    imported = subprocess.run([python, "-c", "import stagehand; print(stagehand.__file__)"], capture_output=True,
                              text=True, env=env, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    where = imported.stdout.strip()
    assert where.startswith(str(fresh)), f"stagehand imported from {where}, not the wheel"
    tests = REPO / "python" / "tests"
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests / "test_loader.py"),
                           str(tests / "test_datasets.py")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout, done.stdout[-2000:]
