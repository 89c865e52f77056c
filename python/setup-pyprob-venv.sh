#!/usr/bin/env bash
# Creates python/.venv-pyprob: pyprob 1.5.0 (Etalumis' probabilistic
# programming system, from PyPI) for the tests that put our PPX ends
# against pyprob's (python/tests/test_ppx.py).
#
# A venv of its own because pyprob pins flatbuffers 2.0 and termcolor 1.1.0,
# which the main venv's TensorFlow cannot share. It borrows torch and numpy
# from python/.venv (run python/setup-venv.sh first) through a .pth file,
# which Python appends to the search path after the venv's own packages:
# pyprob's pins win, and torch's 3 GB are not downloaded a second time.
# pyprob is installed without its declared requirements (they would pull a
# torch of their own), then what `import pyprob` needs by name. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
main="$here/.venv"
venv="$here/.venv-pyprob"
[ -x "$main/bin/python" ] || { echo "python/setup-pyprob-venv: run python/setup-venv.sh first (torch comes from $main)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
    echo "python/setup-pyprob-venv: creating $venv"
    python3 -m venv "$venv"
fi
borrowed="$("$main/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
own="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$borrowed" > "$own/stagehand-main-venv.pth"
if ! "$venv/bin/python" -c "import pyprob, zmq, flatbuffers, sklearn, pydotplus" 2>/dev/null; then
    echo "python/setup-pyprob-venv: installing pyprob 1.5.0 and what its import needs"
    "$venv/bin/pip" install -q --no-cache-dir --no-compile \
        "flatbuffers==2.0" "termcolor==1.1.0" "pyzmq>=19.0.0" sqlitedict pyyaml matplotlib scikit-learn pydotplus
    "$venv/bin/pip" install -q --no-cache-dir --no-compile --no-deps "pyprob==1.5.0"
fi
"$venv/bin/python" -c "import pyprob, flatbuffers; print('python/setup-pyprob-venv: pyprob', pyprob.__version__, 'ready')"
