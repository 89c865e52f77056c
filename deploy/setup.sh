#!/usr/bin/env bash
# Installs the system packages Stagehand builds and runs against, on Debian 12
# (or Ubuntu): Open MPI, HDF5, libclang (for the MPI bindings), pkg-config,
# ZeroMQ (the PPX protocol's transport) and Lmod.
# Idempotent: when everything is present it only checks and returns.
# Works as root, or as a user with sudo.
set -euo pipefail

# lmod: the module tool EasyBuild needs (the tests check deploy/easybuild with it).
# libzmq3-dev: the Etalumis PPX protocol runs over ZeroMQ (crate `zmq`, linked
# against the system library through pkg-config).
PACKAGES=(openmpi-bin libopenmpi-dev libhdf5-dev libclang-dev pkg-config libzmq3-dev lmod)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

if ! command -v dpkg-query >/dev/null 2>&1; then
    # Not Debian: check for the tools instead and say what is missing.
    for tool in mpirun mpicc pkg-config; do
        command -v "$tool" >/dev/null 2>&1 || die "no dpkg and no $tool: install Open MPI, HDF5 (dev), libclang and pkg-config with your package manager"
    done
    pkg-config --exists hdf5 2>/dev/null || [ -d /usr/include/hdf5 ] || say "warning: HDF5 not found by pkg-config; set HDF5_DIR if the build cannot find it"
else
    missing=()
    for package in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$package")
        fi
    done
    if [ ${#missing[@]} -eq 0 ]; then
        say "system packages present (${PACKAGES[*]})"
    else
        if [ "$(id -u)" -eq 0 ]; then
            sudo=()
        elif command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            die "missing ${missing[*]}; run this script as root or install sudo"
        fi
        say "installing ${missing[*]}"
        "${sudo[@]}" apt-get update -q
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
        say "installed ${missing[*]}"
    fi
fi

if ! command -v cargo >/dev/null 2>&1; then
    die "cargo not found: install Rust 1.95 or newer (https://rustup.rs) and re-run"
fi
# `make test` formats-checks and builds through clippy.
if ! command -v clippy-driver >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        say "adding the clippy and rustfmt components"
        rustup component add clippy rustfmt
    else
        say "warning: clippy-driver or rustfmt missing; \`make test\` needs both (rustup component add clippy rustfmt)"
    fi
fi
say "toolchain: $(cargo --version)"
say "MPI: $(mpirun --version 2>/dev/null | head -n 1)"
