#!/usr/bin/env bash
# Regenerates src/generated.rs from schema/ppx.fbs (pyprob's PPX 1.0.0 schema,
# copied unchanged from https://github.com/pyprob/ppx) with planus, the
# flatbuffers compiler whose runtime crate this one uses. The generated file
# is committed (as arrow-rs commits its flatbuffers code), so building needs
# no schema compiler; run this only when the schema changes.
set -euo pipefail
cd "$(dirname "$0")"
version=1.3.0
if ! planus --version 2>/dev/null | grep -q "$version"; then
    cargo install --locked planus-cli --version "$version"
fi
planus rust -o src/generated.rs schema/ppx.fbs
