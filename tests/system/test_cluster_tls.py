"""A campaign on a cluster that lets no one in: a real 'netassay cluster scheduler' with
mutual TLS and a real root 'netassay worker' on loopback run a small sweep campaign;
every experiment records how the coordinator reached the cluster (``tls``), and the
same campaign over plaintext on loopback with --insecure records
``tcp-insecure-loopback``.

Needs root and netassay-gen (skipped with the reason otherwise; CI runs them).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import netassay_argv, stop_all

from netassay.campaign import certs
from netassay.store.db import Store

pytestmark = pytest.mark.system

RATES, RUNS = ("10k", "20k"), 1


def _spec(tmp_path: Path, name: str) -> Path:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(
        f'[campaign]\nname = "{name}"\nseed = 5\n[fixed]\nrates = "{",".join(RATES)}"\n'
        f'runs = {RUNS}\nduration = "0.5s"\nsettle = "0s"\npeak_check = false\n'
        'pinning = "unpinned"\n[factors]\nbacklog = [1000, 2000]\n'
    )
    return spec


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _started(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as f:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f)


def _wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(log.read_text(errors="replace")[-3000:])


def _campaign(tmp_path: Path, tb: str, name: str, address: str, *flags: str) -> Path:
    """A scheduler at ``address`` and a worker owning testbed ``tb``, both with
    ``flags``, run campaign ``name`` (2 cells) from a coordinator with ``flags``."""
    spec, db = _spec(tmp_path, name), tmp_path / f"{name}.db"
    dash = f"127.0.0.1:{_free_port()}"
    slog, wlog = tmp_path / f"{name}-scheduler.log", tmp_path / f"{name}-worker.log"
    cluster = ["cluster", "scheduler", "--listen", address, "--dashboard", dash, *flags]
    procs = [_started(netassay_argv(*cluster), slog)]
    try:
        _wait_for(slog, "netassay scheduler:", procs[0])
        worker = ["worker", "--scheduler", address, "--name", tb, *flags]
        procs.append(_started(netassay_argv(*worker), wlog))
        _wait_for(wlog, "netassay worker:", procs[1])
        run = netassay_argv(
            "campaign", "run", str(spec), "--db", str(db), "--scheduler", address, *flags
        )
        res = subprocess.run(run, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr + wlog.read_text(errors="replace")[-2000:]
        assert "2 of 2 cells stored" in res.stdout, res.stdout
    finally:
        stop_all(procs)
    return db


def _transports(db: Path) -> set[tuple[str, str]]:
    with Store(db, readonly=True) as st:
        exps = list(st.experiments())
        assert len(exps) == 2 and st.count_trials() == 2 * len(RATES) * RUNS
        return {
            (e.metadata["campaign"]["worker"], e.environment["cluster_transport"]) for e in exps
        }


def test_a_campaign_over_mutual_tls(tb_name, tmp_path, netns_of) -> None:
    tls = tmp_path / "tls"
    certs.make(tls)
    address = f"tls://127.0.0.1:{_free_port()}"
    db = _campaign(tmp_path, tb_name, "tls", address, "--tls-dir", str(tls))
    assert _transports(db) == {(f"netassay-{tb_name}", "tls")}
    assert netns_of(tb_name) == []


@pytest.mark.slow
def test_a_campaign_in_plaintext_on_loopback_is_recorded(tb_name, tmp_path, netns_of) -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    db = _campaign(tmp_path, tb_name, "plain", address, "--insecure")
    assert _transports(db) == {(f"netassay-{tb_name}", "tcp-insecure-loopback")}
    assert netns_of(tb_name) == []
