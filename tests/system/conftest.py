"""Fixtures of the testbed and sweep system tests (root, real namespaces, real traffic).

Every testbed these tests build is named ``sy`` + 6 hex digits and is removed after
each test, even on failure; a session finalizer removes any ``sy*`` testbed left over.
Testbed state goes to a private run directory, so a user's testbeds are never touched.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli

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
    """A private NETASSAY_RUN_DIR for this session, and a private NETASSAY_STATE_DIR: what
    netassay keeps of the host (the delay line's limit, which the session's first tcp
    cell measures) is the session's, never the host's (both inherited by CLI
    subprocesses)."""
    why = _why_skip()
    if why:
        pytest.skip(why)
    mine = {"NETASSAY_RUN_DIR": tmp_path_factory.mktemp("netassay-run"),
            "NETASSAY_STATE_DIR": tmp_path_factory.mktemp("netassay-state")}  # fmt: skip
    old = {k: os.environ.get(k) for k in mine}
    os.environ.update({k: str(v) for k, v in mine.items()})
    try:
        yield {**os.environ}
    finally:
        from netassay.testbed import topology

        ours = {ns.split("-")[1] for ns in topology.list_netns() if ns.startswith(f"na-{OURS}")}
        topology.cleanup(ours or {"-"})
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def tb_name(lab_env) -> Iterator[str]:
    """A fresh testbed name; its namespaces and state are removed after the test."""
    from netassay.testbed import topology

    name = OURS + secrets.token_hex(3)
    try:
        yield name
    finally:
        topology.cleanup({name})
        assert not [ns for ns in topology.list_netns() if ns.startswith(f"na-{name}-")]


def _netns_of(name: str) -> list[str]:
    from netassay.testbed import topology

    return [ns for ns in topology.list_netns() if ns.startswith(f"na-{name}-")]


def _backlog() -> str:
    return Path("/proc/sys/net/core/netdev_max_backlog").read_text().strip()


def _assess(db: Path) -> dict[str, Any]:
    res = run_cli("assess", str(db), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[0])


def _stored(db: Path) -> tuple[Any, list[dict[str, Any]]]:
    from netassay.store.db import Store

    with Store(db) as st:
        exp = next(iter(st.experiments()))
        return exp, st.trials(exp.id)


CAP_PPS = 50_000


def _cap_sweep(name: str, db: Path, *flags: str) -> tuple[Any, list[dict[str, Any]]]:
    res = run_cli(
        "sweep", "--name", name, *flags, "--sut-cap", "50k", "--pinning", "unpinned",
        "--rates", "30k,40k,45k,48k,50k,52k,55k,60k,70k",
        "--runs", "3", "--duration", "1s", "--settle", "0.1s", "--db", str(db),
        "--json", "--fail-on", "inconclusive",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr  # GOOD: --fail-on inconclusive lets it pass
    ended = json.loads(res.stdout)  # the sweep's own assessment, the same as assess's
    a = _assess(db)
    assert ended == a
    assert abs(a["pdr_pps"] - CAP_PPS) <= 0.05 * CAP_PPS, a
    assert a["verdict"] == "GOOD", (a["reason"], a["loads"])
    return _stored(db)


@pytest.fixture
def netns_of():
    """The namespaces of one testbed that exist right now."""
    return _netns_of


@pytest.fixture
def backlog():
    """The host's net.core.netdev_max_backlog, as text."""
    return _backlog


@pytest.fixture
def assess():
    """``netassay assess DB --json`` (it must succeed): the first experiment's assessment."""
    return _assess


@pytest.fixture
def stored():
    """The first experiment in a store and every trial of it: (experiment, trials)."""
    return _stored


@pytest.fixture
def cap_sweep():
    """Sweep testbed NAME [FLAGS] with a 50 kpps SUT cap (--sut-cap 50k, unpinned) from
    30k to 70k, 3 runs of 1 s, into DB; check that its PDR@0.5% is within 5% of the cap
    and GOOD; return (experiment, trials) as stored. Nine loads: dense at the cap (48k,
    50k, 52k), where the PDR is decided, 5-10k apart below it (each carried whole) and
    past it (each saturated), where a load between two shows nothing new."""
    return _cap_sweep
