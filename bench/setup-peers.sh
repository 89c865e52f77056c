#!/usr/bin/env bash
# Creates bench/.venv with the peer tools (tf.data, h5py, abTEM, PyTorch) from PyPI. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    echo "setup-peers: creating $venv"
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import tensorflow, h5py, numpy, abtem, pyfftw, torch" 2>/dev/null; then
    echo "setup-peers: installing $(grep -v '^#' "$here/peers/requirements.txt" | xargs)"
    "$venv/bin/pip" install -q --no-cache-dir -r "$here/peers/requirements.txt"
    bash "$here/../deploy/pip-install-torch.sh" "$venv"
fi
echo "setup-peers: ready ($("$venv/bin/python" --version))"
