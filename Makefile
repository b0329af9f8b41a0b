# netassay: every set-up step a fresh Debian 12 machine needs, then tests and the demo.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages: kernel tools for the testbed, peers for the benchmarks, the browser
# for the HTML report test, and what the generator's build needs.
APT_PKGS := iproute2 nftables ethtool iperf3 netsniff-ng chromium procps kmod \
            clang llvm libbpf-dev libelf-dev pkg-config
GEN_BIN := gen/target/release/netassay-gen
# Python dependencies are installed at the versions the tests passed with, listed in
# constraints.txt (pip freeze of the venv, netassay left out). After adding or upgrading
# a dependency in pyproject.toml (delete a package's line there to let it move), run
# 'make constraints' to regenerate the file, run the tests, and commit it.
CONSTRAINTS := constraints.txt

.PHONY: setup apt venv gen constraints test test-unit test-integration test-system lint demo bench clean

setup: apt venv gen  ## install everything (idempotent); CLI at .venv/bin/netassay

apt:
	@missing=""; for p in $(APT_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "netassay: missing Debian packages:$$missing; run 'sudo make setup'"; exit 1; fi; \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c $(CONSTRAINTS) -e '.[test,scale]'
	touch $@

venv: $(VENV)/.installed

# Rewrites constraints.txt from what the venv holds now (see CONSTRAINTS above).
constraints: venv
	{ echo "# Third-party packages at the versions netassay's tests passed with (pip freeze of the"; \
	  echo "# project's venv, netassay itself left out). 'make setup' installs with -c this file, so"; \
	  echo "# a new upstream release cannot change behaviour unseen. Regenerate: make constraints"; \
	  $(BIN)/pip freeze --exclude-editable --exclude netassay; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)
	touch $(VENV)/.installed

gen: venv
	@if [ -f gen/Cargo.toml ]; then \
	  cargo build --release --quiet --manifest-path gen/Cargo.toml && \
	  install -m 0755 $(GEN_BIN) $(BIN)/netassay-gen; \
	fi

lint: venv
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

test: setup lint
	@if [ -f gen/Cargo.toml ]; then cargo test --release --quiet --manifest-path gen/Cargo.toml; fi
	$(BIN)/pytest -q tests/unit tests/integration tests/system
	@left=$$(ip netns list 2>/dev/null | awk '{print $$1}' | grep '^na-' || true); \
	if [ -n "$$left" ]; then echo "namespaces left behind: $$left"; exit 1; fi

test-unit: venv
	$(BIN)/pytest -q tests/unit

test-integration: venv
	$(BIN)/pytest -q tests/integration

test-system: setup
	$(BIN)/pytest -q tests/system

demo: setup
	$(BIN)/python -m netassay.campaign.demo

bench: setup
	$(BIN)/python bench/analysis.py
	$(BIN)/python bench/generator.py

clean:
	rm -rf $(VENV) gen/target report demo-out
