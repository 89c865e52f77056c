# The two commands a newcomer runs: `make demo` and `make test`.
# Both run deploy/setup.sh first, which installs what a fresh Debian lacks.

SHELL := /bin/bash
CARGO ?= cargo
RANKS ?= 4
RANKS_PER_NODE ?= 2
DEMO_DIR ?= /tmp/stagehand-demo

# Open MPI refuses to run as root unless told. The demo runs on one machine,
# so only the shared-memory transport is allowed: if it cannot start, the run
# fails instead of silently moving every byte through TCP loopback.
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
MPIRUN := mpirun --oversubscribe --bind-to none --mca btl self,vader

.PHONY: setup demo test lint bench

setup:
	@bash deploy/setup.sh

## demo: the pipeline end to end on $(RANKS) ranks as $(RANKS)/$(RANKS_PER_NODE) pretend nodes
demo: setup
	$(CARGO) build --release -p stagehand-tests --bin stagehand-demo -p stagehand-stager --bin stager
	rm -rf $(DEMO_DIR)
	@echo "== 1. write, scan and verify a CosmoFlow dataset (the 'parallel file system')"
	STAGEHAND_RANKS_PER_NODE=$(RANKS_PER_NODE) $(MPIRUN) -np $(RANKS) -x STAGEHAND_RANKS_PER_NODE \
		target/release/stagehand-demo --out $(DEMO_DIR)/dataset --dest '$(DEMO_DIR)/node{node}' \
		--report $(DEMO_DIR)/report.json
	@echo "== 2. stage it into node-local directories, each file read once"
	STAGEHAND_RANKS_PER_NODE=$(RANKS_PER_NODE) $(MPIRUN) -np $(RANKS) -x STAGEHAND_RANKS_PER_NODE \
		target/release/stager stage --source $(DEMO_DIR)/dataset --dest '$(DEMO_DIR)/node{node}' \
		--policy replicate --report $(DEMO_DIR)/stage.json
	@echo "== 3. verify what every node holds against the manifest"
	STAGEHAND_RANKS_PER_NODE=$(RANKS_PER_NODE) $(MPIRUN) -np $(RANKS) -x STAGEHAND_RANKS_PER_NODE \
		target/release/stager verify --source $(DEMO_DIR)/dataset --dest '$(DEMO_DIR)/node{node}' --policy replicate

## test: formatting, lints, then every test (MPI ones under a real mpirun)
test: setup lint
	$(CARGO) test --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## bench: the benchmarks; results go in docs/benchmarks.md
bench: setup
	$(CARGO) bench -p stagehand-formats --bench formats
	$(CARGO) bench -p stagehand-stager --bench stage
	$(CARGO) bench -p stagehand-loader --bench loader-bench
