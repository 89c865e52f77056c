# The two commands a newcomer runs: `make demo` and `make test`.
# Both run deploy/setup.sh first, which installs what a fresh Debian lacks.

SHELL := /bin/bash
CARGO ?= cargo
RANKS ?= 4
RANKS_PER_NODE ?= 2
DEMO_DIR ?= /tmp/stagehand-demo

# Open MPI refuses to run as root unless told; containers often block the
# cross-memory-attach syscalls of its shared-memory transport.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
export OMPI_MCA_btl_vader_single_copy_mechanism := none
export OMPI_MCA_btl_vader_max_send_size := 1048576
export OMPI_MCA_btl_vader_eager_limit := 65536
MPIRUN := mpirun --oversubscribe --bind-to none

.PHONY: setup demo test lint bench

setup:
	@bash deploy/setup.sh

## demo: the pipeline end to end on $(RANKS) ranks as $(RANKS)/$(RANKS_PER_NODE) pretend nodes
demo: setup
	$(CARGO) build --release -p stagehand-tests --bin stagehand-demo
	STAGEHAND_RANKS_PER_NODE=$(RANKS_PER_NODE) $(MPIRUN) -np $(RANKS) -x STAGEHAND_RANKS_PER_NODE \
		target/release/stagehand-demo --out $(DEMO_DIR)/dataset --dest '$(DEMO_DIR)/node{node}' \
		--report $(DEMO_DIR)/report.json

## test: formatting, lints, then every test (MPI ones under a real mpirun)
test: setup lint
	$(CARGO) test --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## bench: criterion benches; results go in docs/benchmarks.md
bench: setup
	$(CARGO) bench -p stagehand-formats --bench formats
