"""Fixtures of the testbed and sweep system tests (root, real namespaces, real traffic).

Every testbed these tests build is named ``sy`` + 6 hex digits and is removed after
each test, even on failure; a session finalizer removes any ``sy*`` testbed left over.
Testbed state goes to a private run directory, so a user's testbeds are never touched.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from netassay.errors import GeneratorError

OURS = "sy"


def _why_skip() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth, nft, sysctls); run: sudo make test-system"
    try:
        from netassay.traffic.generator import find_generator

        find_generator()
    except (ImportError, GeneratorError) as exc:
        return f"netassay-gen is not available ({exc}); run: make gen"
    return None


@pytest.fixture(scope="session")
def lab_env(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A private NETASSAY_RUN_DIR for this session (inherited by CLI subprocesses)."""
    why = _why_skip()
    if why:
        pytest.skip(why)
    run_dir = tmp_path_factory.mktemp("netassay-run")
    old = os.environ.get("NETASSAY_RUN_DIR")
    os.environ["NETASSAY_RUN_DIR"] = str(run_dir)
    try:
        yield {**os.environ}
    finally:
        from netassay.testbed import topology as T

        ours = {ns.split("-")[1] for ns in T.list_netns() if ns.startswith(f"na-{OURS}")}
        T.cleanup(ours or {"-"})
        if old is None:
            os.environ.pop("NETASSAY_RUN_DIR", None)
        else:
            os.environ["NETASSAY_RUN_DIR"] = old


@pytest.fixture
def tb_name(lab_env) -> Iterator[str]:
    """A fresh testbed name; its namespaces and state are removed after the test."""
    from netassay.testbed import topology as T

    name = OURS + secrets.token_hex(3)
    try:
        yield name
    finally:
        T.cleanup({name})
        assert not [ns for ns in T.list_netns() if ns.startswith(f"na-{name}-")]


def _netassay(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "netassay", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def _netns_of(name: str) -> list[str]:
    from netassay.testbed import topology as T

    return [ns for ns in T.list_netns() if ns.startswith(f"na-{name}-")]


def _backlog() -> str:
    return Path("/proc/sys/net/core/netdev_max_backlog").read_text().strip()


@pytest.fixture
def cli():
    """Run ``python -m netassay ARGS`` and capture its output."""
    return _netassay


@pytest.fixture
def netns_of():
    """The namespaces of one testbed that exist right now."""
    return _netns_of


@pytest.fixture
def backlog():
    """The host's net.core.netdev_max_backlog, as text."""
    return _backlog
