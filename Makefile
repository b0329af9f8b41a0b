# netassay: every set-up step a fresh Debian 12 machine needs, then tests and the demo.
# 'make demo' and 'make test' work as root and as a user with sudo: the steps that need
# root (Debian packages, the testbed's demo and system tests) run through $(SUDO), empty
# for root and 'sudo' otherwise; the venv and the generator's build stay the user's.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
ifeq ($(shell id -u),0)
SUDO :=
else
SUDO := sudo
endif
# What runs as root through sudo leaves no root-owned caches in the user's tree.
AS_ROOT := $(if $(SUDO),$(SUDO) env PYTHONDONTWRITEBYTECODE=1)
ROOT_PYTEST := $(AS_ROOT) $(BIN)/pytest $(if $(SUDO),-p no:cacheprovider)
# Debian packages: kernel tools for the testbed (tcpdump: the captures --pcap replays
# in its tests and bench), peers for the benchmarks, the browser
# for the HTML report test, and what the generator's build needs.
APT_PKGS := iproute2 nftables ethtool iperf3 netsniff-ng chromium procps kmod tcpdump \
            clang llvm libbpf-dev libelf-dev pkg-config python3-venv bpftool
GEN_BIN := gen/target/release/netassay-gen
# The XDP router SUT (--sut xdp-router): built from bpf/ with clang, installed in the venv.
BPF_OBJ := bpf/build/xdp_router.o
# The pass program `batching --xdp on` attaches to the receiver's veth (NAPI batches).
PASS_OBJ := bpf/build/xdp_pass.o
BPF_INCLUDES := -I/usr/include/$(shell $(CC) -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
# Python dependencies are installed at the versions the tests passed with, listed in
# constraints.txt (pip freeze of the venv, netassay left out). After adding or upgrading
# a dependency in pyproject.toml (delete a package's line there to let it move), run
# 'make constraints' to regenerate the file, run the tests, and commit it.
CONSTRAINTS := constraints.txt

.PHONY: setup root apt venv gen rust-tools bpf constraints test test-slow test-unit test-integration test-system \
        lint docs reference demo bench clean

setup: apt venv gen bpf  ## install everything (idempotent); CLI at .venv/bin/netassay

# Stops early, with one line, when a step needing root can run neither as root nor via sudo.
root:
ifneq ($(SUDO),)
	@command -v sudo >/dev/null 2>&1 || { \
	  echo "netassay: 'make $(or $(MAKECMDGOALS),setup)' needs root (Debian packages, network namespaces) and sudo is not installed: run it as root" >&2; \
	  exit 1; }
endif

apt:
	@missing=""; for p in $(APT_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ -n "$(SUDO)" ] && ! command -v sudo >/dev/null 2>&1; then \
	    echo "netassay: missing Debian packages:$$missing; installing them needs root and sudo is not installed: run 'make $(or $(MAKECMDGOALS),setup)' as root" >&2; \
	    exit 1; \
	  fi; \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c $(CONSTRAINTS) -e '.[test,scale,docs]'
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

# netassay rtt: the capture points' tc BPF programs (one source, built for requests and
# for replies) and netassay-probe (the probes and the echo), built from bpf/rtt/ into
# bpf/rtt/build/ (ignored by git) and installed in the venv; the peers bench/rtt.py
# compares with (ping, irtt) and the background CPU load (stress-ng).
APT_PKGS += stress-ng iputils-ping irtt bpftool
RTT_SRC := bpf/rtt
RTT_BUILD := $(RTT_SRC)/build
RTT_SHARE := $(VENV)/share/netassay/rtt
RTT_BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf \
                  -I/usr/include/$(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
.PHONY: rtt
setup: rtt

rtt: $(RTT_SHARE)/capture_request.o $(RTT_SHARE)/capture_reply.o $(BIN)/netassay-probe

$(RTT_BUILD)/capture_request.o: $(RTT_SRC)/capture.bpf.c | apt
	@mkdir -p $(@D)
	clang $(RTT_BPF_CFLAGS) -DNA_REPLY=0 -c $< -o $@

$(RTT_BUILD)/capture_reply.o: $(RTT_SRC)/capture.bpf.c | apt
	@mkdir -p $(@D)
	clang $(RTT_BPF_CFLAGS) -DNA_REPLY=1 -c $< -o $@

$(RTT_BUILD)/netassay-probe: $(RTT_SRC)/probe.c | apt
	@mkdir -p $(@D)
	cc -O2 -Wall -Wextra -Werror -o $@ $< -lm

$(RTT_SHARE)/%.o: $(RTT_BUILD)/%.o | venv
	install -D -m 0644 $< $@

$(BIN)/netassay-probe: $(RTT_BUILD)/netassay-probe | venv
	install -m 0755 $< $@

# netassay-noise: who holds each CPU, one run at a time (a sched_switch tracer; the
# doctor's CPU check and each pinned trial's note on other threads use it)
NOISE_SRC := bpf/noise
NOISE_BUILD := $(NOISE_SRC)/build
.PHONY: noise
setup: noise

noise: $(VENV)/share/netassay/noise/noise.bpf.o $(BIN)/netassay-noise

$(NOISE_BUILD)/noise.bpf.o: $(NOISE_SRC)/noise.bpf.c | apt
	@mkdir -p $(@D)
	clang $(RTT_BPF_CFLAGS) -c $< -o $@

$(NOISE_BUILD)/netassay-noise: $(NOISE_SRC)/noise.c | apt
	@mkdir -p $(@D)
	cc -O2 -Wall -Wextra -Werror -o $@ $< -lbpf

$(VENV)/share/netassay/noise/noise.bpf.o: $(NOISE_BUILD)/noise.bpf.o | venv
	install -D -m 0644 $< $@

$(BIN)/netassay-noise: $(NOISE_BUILD)/netassay-noise | venv
	install -m 0755 $< $@

# The data planes of --sut ovs, testpmd and l3fwd (docs/dataplanes.md): Debian's Open
# vSwitch (its userspace datapath: no kernel module, no service: netassay starts its
# daemons per testbed) and DPDK 22.11 with its AF_XDP driver; l3fwd is built from the
# dpdk-doc example sources with one patch (the receive offloads masked to what af_xdp and
# af_packet ports offer) into dpdk/build/ and installed in the venv as netassay-l3fwd
# (with gcc: a fresh Debian has no C compiler). Packages already installed are left as they are.
APT_PKGS += openvswitch-switch dpdk dpdk-dev librte-net-af-xdp23 librte-net-af-packet23 dpdk-doc \
            patch gcc libc6-dev make
DPDK_EXAMPLES := /usr/share/dpdk/examples
L3FWD_BUILD := dpdk/build
L3FWD_BIN := $(L3FWD_BUILD)/netassay-l3fwd
.PHONY: dpdk
setup: dpdk

dpdk: $(BIN)/netassay-l3fwd

$(L3FWD_BIN): dpdk/l3fwd-af-xdp.patch | apt
	rm -rf $(L3FWD_BUILD)/src && mkdir -p $(L3FWD_BUILD)/src
	cp -r $(DPDK_EXAMPLES)/l3fwd $(DPDK_EXAMPLES)/common $(L3FWD_BUILD)/src/
	patch --quiet -d $(L3FWD_BUILD)/src/l3fwd -p1 < dpdk/l3fwd-af-xdp.patch
	$(MAKE) --no-print-directory -s -C $(L3FWD_BUILD)/src/l3fwd shared
	install -m 0755 $(L3FWD_BUILD)/src/l3fwd/build/l3fwd-shared $@

$(BIN)/netassay-l3fwd: $(L3FWD_BIN) | venv
	install -m 0755 $< $@


# The generator's linters (make lint): clippy and rustfmt, added to the Rust toolchain
# when it lacks them (offline, nothing is fetched once they are there).
rust-tools:
	@for c in clippy fmt; do \
	  cargo $$c --version >/dev/null 2>&1 && continue; \
	  command -v rustup >/dev/null 2>&1 || { \
	    echo "netassay: 'cargo $$c' is missing and rustup is not installed: install the Rust toolchain's $$c" >&2; \
	    exit 1; }; \
	  rustup component add $$( [ $$c = fmt ] && echo rustfmt || echo clippy ); \
	done

gen: venv rust-tools
	@if [ -f gen/Cargo.toml ]; then \
	  cargo build --release --quiet --manifest-path gen/Cargo.toml && \
	  install -m 0755 $(GEN_BIN) $(BIN)/netassay-gen; \
	fi

$(BPF_OBJ): bpf/xdp_router.c | apt
	mkdir -p $(dir $@)
	clang -O2 -g -Wall -Werror -target bpf $(BPF_INCLUDES) -c $< -o $@

$(PASS_OBJ): bpf/xdp_pass.c | apt
	mkdir -p $(dir $@)
	clang -O2 -g -Wall -Werror -target bpf $(BPF_INCLUDES) -c $< -o $@

bpf: venv $(BPF_OBJ) $(PASS_OBJ)
	install -D -m 0644 $(BPF_OBJ) $(VENV)/share/netassay/xdp_router.o
	install -D -m 0644 $(PASS_OBJ) $(VENV)/share/netassay/xdp_pass.o

lint: venv rust-tools
	cargo fmt --manifest-path gen/Cargo.toml --check
	cargo clippy --quiet --manifest-path gen/Cargo.toml --all-targets -- -D warnings
	$(BIN)/ruff check src tests bench docs
	$(BIN)/ruff format --check src tests bench docs
	$(BIN)/lint-imports
	$(BIN)/mypy  # the types: [tool.mypy] in pyproject.toml, its cache in .mypy_cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir site  # the manual: a broken link fails

# The manual (docs/, mkdocs.yml) as a site in site/: open site/index.html.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# docs/reference.md, the command-line reference, written from the commands' own
# declarations (what --help shows); tests/unit/test_docs.py fails when it is stale.
reference: venv
	$(BIN)/python docs/reference.py

# The suite in two parts (docs/development.md, "How long the tests take"): 'make test'
# runs every test not marked slow, 'make test-slow' the slow ones (@pytest.mark.slow:
# a system test over ~10 s on a quiet host, another over ~4 s); CI (.ci/run) runs both. Every pytest run prints its
# 40 slowest tests and writes each test's time to test-results/<part>.xml (JUnit XML,
# ignored by git): 'python tests/durations.py OLD.xml NEW.xml' compares two runs.
# pytest exits 5 when a part selects no test (a tier with no slow test): no failure.
DURATIONS = --durations=40 --junitxml=test-results/$(1).xml
NO_TESTS_OK := rc=$$?; [ $$rc -eq 5 ] && rc=0
# The root part's report belongs to whoever asked, as the demo's does.
OWN_RESULTS := $(if $(SUDO),$(SUDO) chown -R $$(id -u):$$(id -g) test-results;)
NETNS_LEFT := left=$$(ip netns list 2>/dev/null | awk '{print $$1}' | grep '^na-' || true); \
	if [ -n "$$left" ]; then echo "namespaces left behind: $$left"; exit 1; fi

test: root setup lint
	@if [ -f gen/Cargo.toml ]; then cargo test --release --quiet --manifest-path gen/Cargo.toml; fi
	@mkdir -p test-results
	$(BIN)/pytest -q -n auto -m "not slow" $(call DURATIONS,unit-integration) tests/unit tests/integration  # one worker per CPU (pytest-xdist)
	$(ROOT_PYTEST) -q -m "not slow" $(call DURATIONS,system) tests/system; \
	rc=$$?; $(OWN_RESULTS) exit $$rc
	@$(NETNS_LEFT)

test-slow: root setup
	@mkdir -p test-results
	$(BIN)/pytest -q -n auto -m slow $(call DURATIONS,unit-integration-slow) tests/unit tests/integration; \
	$(NO_TESTS_OK); exit $$rc
	$(ROOT_PYTEST) -q -m slow $(call DURATIONS,system-slow) tests/system; \
	$(NO_TESTS_OK); $(OWN_RESULTS) exit $$rc
	@$(NETNS_LEFT)

test-unit: venv
	$(BIN)/pytest -q -n auto tests/unit

test-integration: venv
	$(BIN)/pytest -q -n auto tests/integration

test-system: root setup
	$(ROOT_PYTEST) -q tests/system

demo: root setup
	$(AS_ROOT) $(BIN)/python -m netassay.cli.demo
ifneq ($(SUDO),)
	$(SUDO) chown -R $$(id -u):$$(id -g) demo-out  # the report belongs to whoever asked
endif

bench: setup root
	$(BIN)/python bench/analysis.py
	$(BIN)/python bench/store.py
	$(BIN)/python bench/export.py
	$(BIN)/python bench/report.py
	$(SUDO) $(BIN)/python bench/generator.py
	$(SUDO) $(BIN)/python bench/sink.py
	$(SUDO) $(BIN)/python bench/sut.py
	$(SUDO) $(BIN)/python bench/search.py
	$(SUDO) $(BIN)/python bench/rtt.py
	$(SUDO) $(BIN)/python bench/accept.py
	$(SUDO) $(BIN)/python bench/campaign.py
	$(SUDO) $(BIN)/python bench/busy.py
	$(SUDO) $(BIN)/python bench/scale.py
	$(SUDO) $(BIN)/python bench/pcap.py

clean:
	rm -rf $(VENV) gen/target bpf/build dpdk/build report demo-out site .mypy_cache test-results
