# ferrometal: two commands for a fresh machine.
#   make lab    the local lab: Kubernetes, Ironic and emulated BMCs, with hosts provisioned
#   make test   installs what is missing, builds, and runs every test
SHELL := /bin/bash
.DEFAULT_GOAL := help
CARGO ?= cargo
# Every nextest run of `make test` builds the same packages and targets, and the subsets choose
# their tests by filter: with `-p` alone, cargo unifies other features and compiles the operator
# and the tests again (70 s on a warm machine, minutes on a fresh one).
NEXTEST_ALL = $(CARGO) nextest run --workspace --all-targets --profile ci --locked

.PHONY: help install build test test-oldest-ironic test-oldest-kubernetes test-unit bench lint fuzz faults lab lab-up lab-down crds manifests bundle release

help:
	@echo "make lab    start the local lab (foreground; Ctrl-C stops it)"
	@echo "make test   install what is missing, build, run every test"
	@echo "make fuzz   fuzz every parser (FUZZ_RUNS executions per target, default 1000000)"
	@echo "make bench  the scale benchmark: the operator against the floor, one table"
	@echo "make faults the fault scenarios at full length, one table of figures"

install:
	scripts/install.sh

# install.sh and the workspace's compile side by side (scripts/build.sh says why).
build:
	CARGO="$(CARGO)" scripts/build.sh

# The servers' logs of the previous run (kept for failed tests) go first, with whatever a killed
# run left running or mounted there (scripts/clean-tests.sh).
test: build
	scripts/clean-tests.sh
	scripts/check-crypto-provider.sh
	$(NEXTEST_ALL)
	$(MAKE) test-oldest-ironic
	$(MAKE) test-oldest-kubernetes
	$(CARGO) test --workspace --doc --locked
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

# The ironic-client suite, the BareMetalHost lifecycle and the crash before a status write again,
# against the oldest Ironic release the operator offers (scripts/python-venv.sh oldest); only this
# subset runs twice, to keep CI's time in bounds.
test-oldest-ironic:
	FERROMETAL_IRONIC=oldest $(NEXTEST_ALL) -E 'package(ironic-client)'
	FERROMETAL_IRONIC=oldest $(NEXTEST_ALL) -E 'binary_id(ferrometal-tests::host) & test(/^(lifecycle|crash_before_status)::/)'

# The CRD install, the CEL rules and the webhooks again, against the oldest Kubernetes release
# ferrometal supports (scripts/build-kubernetes.sh oldest; design/testing.md).
test-oldest-kubernetes:
	FERROMETAL_KUBERNETES=oldest $(NEXTEST_ALL) -E 'binary_id(ferrometal-tests::api) | binary_id(ferrometal-tests::cel) | binary_id(ferrometal-tests::webhooks)'

# Unit tests only: no servers, no install step.
test-unit:
	$(CARGO) nextest run --workspace --lib --bins

# The fault scenarios at full length (tests/tests/faults.rs; FERROMETAL_FAULTS_FULL=1), one at
# a time, then one table of their figures. FERROMETAL_FAULT_SEED replays a run's kill moments.
FAULTS_TABLE ?= $${TMPDIR:-/tmp}/ferrometal-faults.md

faults: install
	rm -f "$(FAULTS_TABLE)"
	FERROMETAL_FAULTS_FULL=1 FERROMETAL_FAULTS_TABLE="$(FAULTS_TABLE)" \
		$(CARGO) nextest run -p ferrometal-tests --test faults --locked --no-fail-fast --no-capture; \
	status=$$?; \
	echo; echo "Fault figures ($$(date -u +%FT%TZ), $$(git rev-parse --short HEAD), $$(nproc) cores):"; \
	cat "$(FAULTS_TABLE)"; \
	exit $$status

# The scale benchmark (issue 17, design/performance.md): the operator as its own process
# against a minimal ironic-client driver on the same Ironic, at N = 100, 300, 1000 hosts, P1 in
# both orders (FERROMETAL_BENCH_ALTERNATE=0: the first pair only).
# FERROMETAL_BENCH_HOSTS=100,300 chooses the counts. The operator measured is the release
# binary (`make release`, built first); FERROMETAL_BENCH_OPERATOR names another (the debug
# build: target/debug/ferrometal). The dev profile spares a release build of the harness; the
# short form runs in `make test`. Then the
# NodeSet planner at 1000 hosts x 16 services among 5000 BareMetalHosts (design/nodeset.md,
# "Scale"): planning time, status size, the record's ConfigMaps. Last, the host controller's
# per-reconcile bookkeeping at 1000 and 10,000 cached hosts, in instructions (callgrind).
# Between them, the sharded run: a pre-registered fleet of 1000 and 10,000 hosts
# (FERROMETAL_BENCH_SHARD_HOSTS) served by two replicas dividing four shards, against one
# Ironic API and two conductors over MariaDB, a NodeSet edited among the fleet, one replica
# killed (FERROMETAL_BENCH_FLEET_ONE_TIME=1: the fleet's nodes all written at one second).
# The scale benchmark runs twice: with baremetal-operator's provisioning limit of 20
# on both sides (the wall time), then at N = 1000 with a limit of 1000, where Ironic alone
# paces P1 and the floor keeps it busy enough for the Ironic CPU ratio (design/performance.md).
bench: install release
	FERROMETAL_BENCH_OPERATOR=$${FERROMETAL_BENCH_OPERATOR:-$(CURDIR)/dist/ferrometal} \
		$(CARGO) bench --locked --profile dev -p ferrometal-tests --bench scale
	FERROMETAL_BENCH_OPERATOR=$${FERROMETAL_BENCH_OPERATOR:-$(CURDIR)/dist/ferrometal} \
		FERROMETAL_BENCH_HOSTS=1000 FERROMETAL_BENCH_PROVISIONING_LIMIT=1000 FERROMETAL_BENCH_ROLLOUT_HOSTS=0 \
		$(CARGO) bench --locked --profile dev -p ferrometal-tests --bench scale
	FERROMETAL_BENCH_OPERATOR=$${FERROMETAL_BENCH_OPERATOR:-$(CURDIR)/dist/ferrometal} \
		$(CARGO) bench --locked --profile dev -p ferrometal-tests --bench shards
	$(CARGO) test --locked -p operator --lib nodeset::scale_bench -- --ignored --nocapture
	CARGO=$(CARGO) scripts/host-costs.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Coverage-guided fuzzing of the crds parsers and validators (fuzz/, its own workspace, so
# `make test` never builds it): installs cargo-fuzz when missing, runs every target for
# FUZZ_RUNS executions (default 1000000; FUZZ_TARGETS picks some) and prints one table of
# executions, crashes and time, with two more rows: the NodeSet model at 100000 runs
# (MODEL_CASES) and its end-to-end short form at 40 steps (MODEL_E2E_STEPS; needs `install`'s
# servers). Fails when a target crashed or the model found a violation.
fuzz: install
	fuzz/run.sh

lab: build
	scripts/lab.sh run

lab-up: build
	scripts/lab.sh up

lab-down:
	scripts/lab.sh down

# The generated install files (checked in; unit tests fail when they are stale).
VERSION ?= $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' Cargo.toml | head -n1)

manifests:
	$(CARGO) run --quiet --locked -p operator --bin ferrometal -- manifests --out config

bundle:
	$(CARGO) run --quiet --locked -p operator --bin ferrometal -- bundle --version $(VERSION)

# The release binary in dist/, as the operator image builds it.
release:
	scripts/build-release.sh dist
