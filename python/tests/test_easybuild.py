"""deploy/easybuild against EasyBuild itself (the `easybuild` package from
PyPI, in the test environment; Lmod, the module tool it needs, from the
system: deploy/setup.sh installs it).

EasyBuild cannot build here (its toolchain is a GCC, Open MPI and HDF5
built from source: hours), so the easyconfigs are checked as far as it
goes without building: `eb --dry-run --robot` resolves every dependency to
an easyconfig EasyBuild ships or ours, and `eb --extended-dry-run` walks
the Cargo easyblock's steps and prints the commands it would run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EASYBUILD = REPO / "deploy" / "easybuild"
STAGEHAND_EB = EASYBUILD / "Stagehand-0.1.0-foss-2026.1.eb"
LMOD = Path("/usr/share/lmod/lmod/libexec/lmod")


def eb(*args: str, prefix: Path) -> str:
    """Run EasyBuild from the test environment; its output (fails the test on an error)."""
    if not LMOD.is_file():
        pytest.fail(f"{LMOD} is missing: EasyBuild needs Lmod (deploy/setup.sh installs the `lmod` package)")
    venv_bin = Path(sys.executable).parent
    env = {
        **os.environ,
        # eb finds `python` on the PATH.
        "PATH": f"{venv_bin}:{os.environ['PATH']}",
        "LMOD_CMD": str(LMOD),
        # One line per easyconfig: EasyBuild wraps its output to the terminal's width.
        "COLUMNS": "1000",
    }
    command = [str(venv_bin / "eb"), f"--prefix={prefix}", f"--robot-paths={EASYBUILD}:", *args]
    if os.geteuid() == 0:
        command.insert(1, "--allow-use-as-root-and-accept-consequences")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    output = done.stdout + done.stderr
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    # An extended dry run removes its temporary directory before the log in
    # it, then says so and exits 1: that alone is no failure.
    quirk = ["ERROR: Failed to remove log file" in line for line in errors]
    if (done.returncode != 0 and quirk != [True]) or (done.returncode == 0 and errors):
        pytest.fail(f"{' '.join(command)} exited {done.returncode}:\n{output}")
    return output


def test_the_easyconfig_lists_every_crate_of_cargo_lock_with_its_checksum():
    done = subprocess.run([sys.executable, str(EASYBUILD / "easyconfig.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = STAGEHAND_EB.read_text()
    lock = (REPO / "Cargo.lock").read_text()
    crates = text[text.index("crates = [") : text.index("checksums = [")]
    assert crates.count("    ('") == lock.count('source = "registry+')


def test_eb_dry_run_resolves_every_dependency_to_an_easyconfig(tmp_path):
    output = eb("--dry-run", "--robot", str(STAGEHAND_EB), prefix=tmp_path)
    planned = [line for line in output.splitlines() if line.startswith(" * [")]
    # Ours: Stagehand and the Rust it needs, which EasyBuild does not ship yet.
    assert any(str(STAGEHAND_EB) in line for line in planned), output
    assert any(str(EASYBUILD / "Rust-1.95.0-GCCcore-15.2.0.eb") in line for line in planned), output
    for module in ("HDF5/2.1.1-gompi-2026.1", "OpenMPI/5.0.10-GCC-15.2.0", "LLVM/21.1.8-GCCcore-15.2.0",
                   "maturin/1.13.1-GCCcore-15.2.0", "SciPy-bundle/2026.05-gfbf-2026.1"):
        assert any(f"(module: {module})" in line for line in planned), f"{module} missing:\n{output}"


def test_eb_extended_dry_run_builds_the_binaries_and_the_wheel_and_checks_them(tmp_path):
    output = eb("--extended-dry-run", str(STAGEHAND_EB), prefix=tmp_path)
    assert "[SUCCESS] Stagehand/0.1.0-foss-2026.1" in output, output
    assert "cargo build --profile=release" in output and "-p stagehand-stager -p stagehand-simgen -p stagehand-trainer" in output
    for crate in ("stager", "simgen"):
        assert f"--path={crate}" in output, output
    assert "cd trainer &&  cargo install" in output, output
    assert "maturin build --release --locked --offline" in output, output
    for check in ("stager --help", "simgen --help", "trainer --help", "python -c 'import stagehand'"):
        assert check in output, output
