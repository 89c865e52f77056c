#!/usr/bin/env python3
"""Writes docs/licenses.md: the licences of what we ship besides our code.

- The shared libraries the wheel bundles (`make wheel` puts them in
  `stagehand.libs/`), by the Debian package each came from and the licences
  its copyright file names.
- The shared libraries the binaries link (what the container image carries
  for them, beside Open MPI from the site or the image), the same way.
- The Rust crates compiled into the binaries and the wheel, with the
  licence each declares (`cargo metadata`).

    python3 deploy/licenses.py > docs/licenses.md

Run on the Debian machine that built the wheel and the binaries
(`make wheel`, `cargo build --release`). python/tests/test_wheel.py checks
that the wheel's bundled libraries are the ones the page lists.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BINARIES = ["stager", "simgen", "trainer"]
# The packages whose crates ship: the binaries' and the wheel's.
SHIPPED = ["stagehand-stager", "stagehand-simgen", "stagehand-trainer", "stagehand-python"]


def bundled_sonames(wheel: Path) -> list[str]:
    """The sonames of the libraries in the wheel, without auditwheel's hash."""
    names = [Path(n).name for n in zipfile.ZipFile(wheel).namelist() if ".libs/" in n]
    return sorted({re.sub(r"-[0-9a-f]{8}(?=\.)", "", n) for n in names})


def linked_sonames(binary: Path) -> list[str]:
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[0] for line in out.splitlines() if "=>" in line})


def library_path(soname: str) -> str | None:
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.strip().split(" => ")
        if len(parts) == 2 and parts[0].split()[0] == soname and "x86-64" in parts[0]:
            return parts[1]
    return None


def debian_package(path: str) -> str | None:
    real = str(Path(path).resolve())
    for candidate in (path, real, real.replace("/usr/lib/", "/lib/"), path.replace("/lib/", "/usr/lib/", 1)):
        done = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout.split(":")[0].strip()
    return None


def debian_licences(package: str) -> str:
    copyright_file = Path("/usr/share/doc") / package.split(":")[0] / "copyright"
    try:
        text = copyright_file.read_text(errors="replace")
    except OSError:
        return "see the package's copyright file"
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("License:"):
            name = line.removeprefix("License:").strip()
            if name and name not in names:
                names.append(name)
    return ", ".join(names[:6]) + (" and others" if len(names) > 6 else "") if names else "see its copyright file"


def library_rows(sonames: list[str]) -> list[str]:
    rows = []
    for soname in sonames:
        path = library_path(soname)
        package = debian_package(path) if path else None
        licences = debian_licences(package) if package else "not from a Debian package"
        rows.append(f"| `{soname}` | {package or '?'} | {licences} |")
    return rows


def crate_rows() -> list[str]:
    metadata = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"], cwd=REPO,
                                         capture_output=True, text=True, check=True).stdout)
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    members = set(metadata["workspace_members"])
    start = [pid for pid, p in packages.items() if p["name"] in SHIPPED and pid in members]
    seen, stack = set(), list(start)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            if any(kind["kind"] in (None, "build") for kind in dep["dep_kinds"]):
                stack.append(dep["pkg"])
    rows = []
    for pid in sorted(seen - members, key=lambda p: (packages[p]["name"], packages[p]["version"])):
        p = packages[pid]
        rows.append(f"| {p['name']} | {p['version']} | {p.get('license') or p.get('license_file') or '?'} |")
    return rows


def main() -> None:
    wheels = sorted((REPO / "target" / "wheels" / "dist").glob("stagehand-*.whl"))
    if not wheels:
        sys.exit("deploy/licenses.py: no wheel in target/wheels/dist: run `make wheel` first")
    binaries = [REPO / "target" / "release" / b for b in BINARIES]
    missing = [str(b) for b in binaries if not b.is_file()]
    if missing:
        sys.exit(f"deploy/licenses.py: missing {', '.join(missing)}: run `cargo build --release` first")
    linked = sorted({s for b in binaries for s in linked_sonames(b)})
    crates = crate_rows()
    print("# Licences of what we ship\n")
    print("Stagehand itself is licensed under either of [Apache License, Version 2.0](../LICENSE-APACHE) or")
    print("[MIT license](../LICENSE-MIT). What it ships besides its own code is listed here,")
    print("as `python3 deploy/licenses.py` writes it on the Debian 12 machine that builds")
    print("the wheel and the binaries (each Debian package's full terms are in")
    print("`/usr/share/doc/PACKAGE/copyright`).\n")
    print("## Libraries the wheel bundles\n")
    print("`make wheel` copies these into the wheel's `stagehand.libs/` (HDF5, and what")
    print("Debian's HDF5 links):\n")
    print("| library | Debian package | licences |\n|---|---|---|")
    print("\n".join(library_rows(bundled_sonames(wheels[-1]))))
    print("\n## Libraries the binaries link\n")
    print("`stager`, `simgen` and `trainer` link these; the container image")
    print("(`deploy/apptainer/stagehand.def`) carries them from Debian, and its MPI from")
    print("the site or Debian's Open MPI:\n")
    print("| library | Debian package | licences |\n|---|---|---|")
    print("\n".join(library_rows(linked)))
    print(f"\n## Rust crates compiled in ({len(crates)})\n")
    print("Every crate the binaries and the wheel are built from, with the licence it declares:\n")
    print("| crate | version | licence |\n|---|---|---|")
    print("\n".join(crates))


if __name__ == "__main__":
    main()
