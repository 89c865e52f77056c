#!/usr/bin/env bash
# Installs PyTorch from PyPI into the virtual environment $1, for the CPU,
# taking as little disk as PyPI's wheel allows. Used by python/setup-venv.sh
# (the package's framework bridges are tested against real torch) and
# bench/setup-peers.sh (the PyTorch peers of the trainer benches).
#
# Why not a plain `pip install torch`: PyPI has no CPU-only torch for
# x86_64 Linux. Its wheel loads the CUDA libraries at import (they are
# NEEDED entries of libtorch_cpu.so and libtorch_cuda.so), so those must be
# installed, but it also pulls triton (1 GB unpacked), which only
# torch.compile uses; nothing here compiles. All of it at once held about
# 3.5 GB of downloaded wheels on top of the 6 GB they unpack to, and a CI
# machine ran out of disk in that step. So pip resolves torch's
# dependencies without downloading them (PyPI serves their metadata apart),
# then installs each package of that resolution but triton in its own call
# (its download is freed before the next one), with pip's cache off.
set -euo pipefail
venv="${1:?usage: deploy/pip-install-torch.sh VENV}"
# No bytecode compiled at install: Python compiles the modules a program
# imports when it first imports them, and most of torch's never are.
pip=("$venv/bin/pip" install -q --no-cache-dir --no-compile)

# Resolving from metadata alone needs a recent pip.
"${pip[@]}" --upgrade pip
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
"${pip[@]}" --dry-run --report "$report" torch
mapfile -t pins < <("$venv/bin/python" - "$report" <<'PYTHON'
import json
import sys

with open(sys.argv[1]) as report:
    resolution = json.load(report)["install"]
# torch last, so that an interrupted install leaves no torch to import.
for item in sorted(resolution, key=lambda item: item["metadata"]["name"] == "torch"):
    name, version = item["metadata"]["name"], item["metadata"]["version"]
    if name != "triton":
        print(f"{name}=={version}")
PYTHON
)
for pin in "${pins[@]}"; do
    echo "deploy/pip-install-torch: $pin"
    "${pip[@]}" --no-deps "$pin"
done
"$venv/bin/python" -c "import torch; torch.ones(2).sum()"
