#!/usr/bin/env python3
"""Write deploy/easybuild/Stagehand-<version>-foss-2026.1.eb from the
workspace's Cargo.lock: EasyBuild's Cargo easyblock builds offline from a
`crates` list with a checksum for each crate, and Cargo.lock already holds
every crate's version and sha256 (crates.io's). `--check` only compares
and exits 1 when the easyconfig is out of date (CI runs it).

    python3 deploy/easybuild/easyconfig.py          # rewrite
    python3 deploy/easybuild/easyconfig.py --check  # is it current?
"""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = "registry+https://github.com/rust-lang/crates.io-index"
TOOLCHAIN = ("foss", "2026.1")

# The part a maintainer edits. %(...)s are EasyBuild's templates; {...}
# are this script's.
TEMPLATE = '''\
# Written by deploy/easybuild/easyconfig.py from Cargo.lock: edit the
# template there, not this file.
easyblock = 'Cargo'

name = 'Stagehand'
version = '{version}'

homepage = '{repository}'
description = """Moves scientific training data for deep learning on supercomputers: stager
 copies a dataset from the shared file system to node-local storage over MPI (and serves it
 during training), simgen generates physics data on the nodes, trainer runs the published
 scientific models data-parallel, and the stagehand Python package feeds PyTorch and
 TensorFlow trainers."""

toolchain = {{'name': '{toolchain}', 'version': '{toolchain_version}'}}

# A release tarball of the repository, made with
#   git archive --format=tar.gz --prefix=stagehand-{version}/ -o stagehand-{version}.tar.gz HEAD
# and put where EasyBuild looks for sources (--sourcepath). Its checksum is
# not pinned here (this file lives in the tree it would describe).
sources = ['stagehand-%(version)s.tar.gz']

builddependencies = [
    ('Rust', '1.95.0', '', ('GCCcore', '15.2.0')),  # deploy/easybuild/Rust-1.95.0-GCCcore-15.2.0.eb
    ('LLVM', '21.1.8', '', ('GCCcore', '15.2.0')),  # libclang: bindgen of the MPI and HDF5 headers
    ('pkgconf', '2.5.1', '', ('GCCcore', '15.2.0')),
    ('maturin', '1.13.1', '', ('GCCcore', '15.2.0')),  # the Python package's wheel
]
dependencies = [
    ('HDF5', '2.1.1', '', ('gompi', '{toolchain_version}')),
    ('ZeroMQ', '4.3.5', '', ('GCCcore', '15.2.0')),  # libzmq: the PPX protocol (crate zmq, via pkg-config)
    ('Python', '3.14.2', '', ('GCCcore', '15.2.0')),
    ('SciPy-bundle', '2026.05', '', ('gfbf', '{toolchain_version}')),  # NumPy
]

# The tests need mpirun with several ranks, Python virtual environments
# and an hour; `make test` in the source tree runs them.
enable_tests = False

# The build finds the site's MPI through mpicc (toolchain), HDF5 through
# HDF5_DIR and libclang through LIBCLANG_PATH.
local_env = 'export HDF5_DIR=$EBROOTHDF5 LIBCLANG_PATH=$EBROOTLLVM/lib MPICC=mpicc && '
prebuildopts = local_env
buildopts = '--locked -p stagehand-stager -p stagehand-simgen -p stagehand-trainer'
# The workspace has no root package: `cargo install --path` each binary
# crate (reusing the build's target directory), the last one by the
# easyblock's own install command.
local_install = 'cargo install --offline --locked --profile=release --root=%(installdir)s --path='
preinstallopts = local_env + local_install + 'stager && ' + local_install + 'simgen && cd trainer && '
installopts = '--locked'
postinstallcmds = [
    local_env + 'cd %(start_dir)s/python && '
    'maturin build --release --locked --offline --compatibility linux --out %(builddir)s/wheels && '
    'pip install --no-deps --no-build-isolation --prefix=%(installdir)s %(builddir)s/wheels/stagehand-*.whl',
]

modextrapaths = {{'PYTHONPATH': 'lib/python%(pyshortver)s/site-packages'}}

sanity_check_paths = {{
    'files': ['bin/stager', 'bin/simgen', 'bin/trainer'],
    'dirs': ['lib/python%(pyshortver)s/site-packages/stagehand'],
}}
sanity_check_commands = [
    'stager --help',
    'simgen --help',
    'trainer --help',
    "python -c 'import stagehand'",
]

moduleclass = 'data'

# Every crate of Cargo.lock, with crates.io's sha256 of each.
crates = [
{crates}
]
checksums = [
    None,  # the release tarball (see sources)
{checksums}
]
'''


def render() -> tuple[Path, str]:
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]
    lock = tomllib.loads((ROOT / "Cargo.lock").read_text())
    crates = []
    for package in lock["package"]:
        source = package.get("source")
        if source is None:
            continue  # a member of the workspace
        if source != REGISTRY:
            sys.exit(f"error: {package['name']} {package['version']} comes from {source}; "
                     "the easyconfig lists crates.io crates only")
        crates.append((package["name"], package["version"], package["checksum"]))
    crates.sort()
    text = TEMPLATE.format(
        version=workspace["version"],
        repository=workspace["repository"],
        toolchain=TOOLCHAIN[0],
        toolchain_version=TOOLCHAIN[1],
        crates="\n".join(f"    ('{name}', '{version}')," for name, version, _ in crates),
        checksums="\n".join(f"    {{'{name}-{version}.tar.gz': '{sha}'}}," for name, version, sha in crates),
    )
    path = ROOT / "deploy" / "easybuild" / f"Stagehand-{workspace['version']}-{TOOLCHAIN[0]}-{TOOLCHAIN[1]}.eb"
    return path, text


def main() -> None:
    path, text = render()
    if "--check" in sys.argv[1:]:
        current = path.read_text() if path.exists() else ""
        if current != text:
            sys.exit(f"error: {path.relative_to(ROOT)} is not what Cargo.lock gives; "
                     "run python3 deploy/easybuild/easyconfig.py and commit it")
        print(f"{path.relative_to(ROOT)} is current")
        return
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
