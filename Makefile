# The two commands a newcomer runs: `make demo` and `make test`.
# Both run deploy/setup.sh first, which installs what a fresh Debian lacks.

SHELL := /bin/bash
CARGO ?= cargo
RANKS ?= 4
RANKS_PER_NODE ?= 2
DEMO_DIR ?= /tmp/stagehand-demo

# Open MPI refuses to run as root unless told (the tests' mpirun; the demo
# sets its own, see demo/run.sh).
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: setup demo test test-python wheel lint check-gpu bench

setup:
	@bash deploy/setup.sh

## demo: one pipeline end to end on $(RANKS) ranks as $(RANKS)/$(RANKS_PER_NODE) pretend nodes
# (generate, stage, train), then a short summary; MODEL=cosmoflow (default),
# deepcam, etalumis, inverse, hepcnn or cosmogan. Reports, logs and pictures stay in
# $(DEMO_DIR). What each pipeline runs: demo/run.sh.
MODEL ?= cosmoflow
demo: setup
	$(CARGO) build --release -p stagehand-demo --bin demo-summary -p stagehand-stager --bin stager \
		-p stagehand-simgen --bin simgen -p stagehand-trainer --bin trainer
	DEMO_DIR=$(DEMO_DIR) RANKS=$(RANKS) RANKS_PER_NODE=$(RANKS_PER_NODE) bash demo/run.sh $(MODEL)

## test: formatting, then every test built through clippy (lints denied), MPI ones under a real mpirun
# The test build itself runs clippy on our crates (clippy-driver wraps rustc
# for workspace members only, as `cargo clippy` does), so CI compiles the
# dependencies once, not in check mode and again in build mode. Measured on
# 2 cores, a clean build took 18m52, about what the check pass and the build
# took together before (9m07 + 9m52), so the saving was small; it paid for
# building the benches and the trainer at opt-level 3. `--all-targets` lints
# and builds the benches too (they are not run), and the cdylibs (the
# Python extension, the preload library) the Python tests use.
# CLIPPY_ARGS is how cargo-clippy hands `-- -D warnings` to the driver.
CLIPPY_BUILD := RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
# The fuzz targets' corpora are replayed through their checks by the
# workspace's own tests (fuzz/checks); the instrumented build that fuzzing
# needs, 3.5 of CI's minutes for 3 seconds per target, is left to
# `bash fuzz/run.sh 600` (docs/reliability.md).
# No incremental compilation in the test build: a clean build (CI's) gains
# nothing from it and its cache took 1.2 GB of target/ beside 3 GB of
# artefacts, on CI machines whose disk the Python venv also has to fit on.
# The Python tests' requirements (torch, TensorFlow, pyprob: about 3.5
# minutes of downloading and unpacking) install beside the cargo build, which
# is bound by the cores, not the network; their log follows the build's.
test: export CARGO_INCREMENTAL := 0
# Every test that cannot run here appends a line (test: why) to this file;
# the run ends with their count and reasons.
test: export STAGEHAND_SKIP_LOG := $(CURDIR)/target/skipped-tests.log
# The test build (target/, about 5 GiB) and the Python test environments
# (python/.venv with torch's CUDA libraries, about 6 GiB) need about 11 GiB
# of disk: a run that will not fit says so first, since pip's "No space
# left on device" comes minutes later and names neither.
TEST_DISK_GIB := 11
test: setup
	@free=$$(df -Pk . | awk 'NR == 2 { print int($$4 / 1048576) }'); \
	if [ "$$free" -lt $(TEST_DISK_GIB) ]; then \
		echo "make test: warning: $$free GiB free on this disk; the build and the Python test environments need about $(TEST_DISK_GIB) GiB" >&2; \
	fi
	$(CARGO) fmt --all -- --check
	$(CARGO) fmt --manifest-path fuzz/Cargo.toml -- --check
	@mkdir -p target
	bash python/setup-venv.sh --requirements-only > target/python-requirements.log 2>&1 \
		&& bash python/setup-pyprob-venv.sh >> target/python-requirements.log 2>&1 & venvs=$$!; \
	$(CLIPPY_BUILD) $(CARGO) build --workspace --all-targets; built=$$?; \
	wait $$venvs; installed=$$?; cat target/python-requirements.log; \
	[ $$installed -eq 0 ] || echo "make test: installing the Python test requirements failed (above)" >&2; \
	[ $$built -eq 0 ] && [ $$installed -eq 0 ]
	rm -f "$$STAGEHAND_SKIP_LOG"
	$(CLIPPY_BUILD) $(CARGO) test --workspace
	$(MAKE) test-python
	@if [ -s "$$STAGEHAND_SKIP_LOG" ]; then \
		echo "skipped on this machine: $$(wc -l < "$$STAGEHAND_SKIP_LOG") test(s)"; \
		sort "$$STAGEHAND_SKIP_LOG" | sed 's/^/  /'; \
	else \
		echo "skipped on this machine: none"; \
	fi

## test-python: build the Python package as a user would (pip install ./python,
# into python/.venv with torch and tensorflow-cpu) and run its tests against
# data the debug binaries of the test build write, the documented examples and
# the docs' runnable snippets (python/tests/test_docs_snippets.py).
# The binaries and the preload library come from the same command `make
# test` builds with (`build --all-targets` is the test build plus the
# cdylibs), so after it nothing is rebuilt: a narrower `cargo build -p ...`
# resolves features without the dev-dependencies and rebuilds much of the
# tree (`-p stagehand-preload` took 2 minutes of CI).
# pyprob 1.5.0 gets a venv of its own (python/setup-pyprob-venv.sh: its pins
# clash with TensorFlow's), borrowing torch from the first: the PPX tests
# (python/tests/test_ppx.py) run pyprob against our simulator server.
# The wheel `make wheel` builds is tested too (python/tests/test_wheel.py:
# installed into a fresh venv with no cargo on the PATH).
# The package and the wheel are built in the `dev` profile here (a user's
# `pip install` and `make wheel` build `release`): the test build has
# compiled their dependencies in it, which saves compiling them all again
# optimised (3.5 of CI's minutes); the packaging path is the same.
test-python: export STAGEHAND_PYTHON_PROFILE := dev
test-python:
	bash python/setup-venv.sh
	bash python/setup-pyprob-venv.sh
	bash python/build-wheel.sh
	$(CLIPPY_BUILD) $(CARGO) build --workspace --all-targets
	python/.venv/bin/pytest -q python/tests

## wheel: the `stagehand` Python package as one abi3 manylinux wheel, with the
# shared libraries it needs bundled, into target/wheels/dist (docs/python.md)
wheel: setup
	bash python/build-wheel.sh

## lint: formatting and clippy alone (what `make test` also checks)
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## check-gpu: type-check the GPU build (burn's Vulkan backend). Not part of
# `test`: it checks about 300 crates the CPU build does not use (wgpu, naga,
# cubecl), 10-11 minutes of a 2-core CI run, for the one module that names
# the GPU (trainer/src/engine/device.rs). Run it when that module or burn's
# version changes.
check-gpu:
	$(CARGO) check -p stagehand-trainer --features gpu

## bench: the benchmarks; each records its rows in bench/results/ and rewrites its table in docs/benchmarks.md
bench: setup
	bash bench/setup-peers.sh
	$(CARGO) build --release -p stagehand-simgen --bin simgen
	$(CARGO) bench -p stagehand-formats --bench formats
	$(CARGO) bench -p stagehand-stager --bench stage
	$(CARGO) bench -p stagehand-stager --bench small_files
	$(CARGO) bench -p stagehand-stager --bench plan
	$(CARGO) bench -p stagehand-stager --bench serve
	$(CARGO) bench -p stagehand-stager --bench peers
	$(CARGO) bench -p stagehand-stager --bench global
	$(CARGO) bench -p stagehand-loader --bench loader-bench
	$(CARGO) bench -p stagehand-loader --bench python-bench
	$(CARGO) bench -p stagehand-loader --bench dlio-bench
	$(CARGO) bench -p stagehand-simgen --bench cosmo-bench
	$(CARGO) bench -p stagehand-simgen --bench multislice-bench
	$(CARGO) bench -p stagehand-simgen --bench climate-bench
	$(CARGO) bench -p stagehand-simgen --bench traces-bench
	bash python/setup-venv.sh && bash python/setup-pyprob-venv.sh
	$(CARGO) bench -p stagehand-simgen --bench ppx-bench
	$(CARGO) bench -p stagehand-trainer --bench allreduce
	$(CARGO) bench -p stagehand-trainer --bench step
	$(CARGO) bench -p stagehand-trainer --bench ops
	$(CARGO) bench -p stagehand-trainer --bench tf_crosscheck
	$(CARGO) bench -p stagehand-trainer --bench segmentation
	$(CARGO) bench -p stagehand-trainer --bench inverse
	$(CARGO) bench -p stagehand-trainer --bench hepcnn
	$(CARGO) bench -p stagehand-trainer --bench cosmogan
	$(CARGO) bench -p stagehand-trainer --bench precision
	$(CARGO) bench -p stagehand-trainer --bench etalumis
	$(CARGO) bench -p stagehand-trainer --bench etalumis_inference
	$(CARGO) bench -p stagehand-trainer --bench etalumis_online
