"""Campaigns survive SIGKILL: of the coordinator (then --resume), and of a netassay worker
mid-cell on the distributed path (a real 'netassay cluster scheduler' and 'netassay
worker' processes on loopback, with mutual TLS; the worker restarted). Every planned trial
is stored exactly once.

Needs root and netassay-gen (skipped with the reason otherwise; CI runs them).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from tests.conftest import netassay_argv, stop_all

from netassay.campaign import certs
from netassay.store.db import Store

pytestmark = pytest.mark.system

RATES, RUNS = ("10k", "20k", "30k"), 2
CELL_TRIALS = len(RATES) * RUNS


def _spec(tmp_path: Path, name: str, cells: int) -> Path:
    spec = tmp_path / f"{name}.toml"
    levels = ", ".join(str(1000 * (i + 1)) for i in range(cells))
    spec.write_text(
        f'[campaign]\nname = "{name}"\nseed = 11\n[fixed]\nrates = "{",".join(RATES)}"\n'
        f'runs = {RUNS}\nduration = "0.5s"\nsettle = "0s"\npeak_check = false\n'
        f'pinning = "unpinned"\n[factors]\nbacklog = [{levels}]\n'
    )
    return spec


def _exactly_once(db: Path, cells: int) -> None:
    with Store(db, readonly=True) as st:
        exps = [e for e in st.experiments() if e.metadata.get("role") == "cell"]
        assert len(exps) == cells, [e.key for e in exps]
        assert len({e.key for e in exps}) == cells
        for e in exps:
            done = [(t["load_index"], t["repetition"]) for t in st.trials(e.id)]
            assert sorted(done) == [(i, k) for i in range(len(RATES)) for k in range(RUNS)], e.key
        assert st.count_trials() == cells * CELL_TRIALS


def _argv(*args: str) -> list[str]:
    return [*netassay_argv(), *args]


class _Lines:
    """The lines a process writes to a pipe, collected by a thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self.lines.append(line)

    def wait_for(self, pred, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            for line in self.lines[seen:]:
                if pred(line):
                    return line
            seen = len(self.lines)
            time.sleep(0.1)
        raise AssertionError("".join(self.lines[-20:]))


def _progress(cells: int, lo: int, hi: int):
    """A progress line with ``cells`` cells done and between lo and hi trials done."""
    pattern = re.compile(r"\[cells (\d+)/\d+\] \[trials (\d+)")

    def pred(line: str) -> bool:
        m = pattern.search(line)
        return bool(m) and int(m.group(1)) == cells and lo <= int(m.group(2)) <= hi

    return pred


def _stored_cells(db: Path) -> int:
    if not db.exists():
        return 0
    with Store(db, readonly=True) as st:
        return sum(1 for e in st.experiments() if e.metadata.get("role") == "cell")


@pytest.mark.slow
def test_sigkill_of_the_coordinator_then_resume(tb_name, tmp_path, cli, netns_of):
    spec, db = _spec(tmp_path, "kc", 3), tmp_path / "kc.db"
    run = _argv("campaign", "run", str(spec), "--db", str(db), "--name", tb_name)
    proc = subprocess.Popen(run, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines = _Lines(proc)
        # killed in the middle of the second cell: one cell stored, trials of the next done
        lines.wait_for(_progress(1, 7, 10))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _stored_cells(db) == 1  # the cell in progress was not stored

    again = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name)
    assert again.returncode == 2 and "already in" in again.stderr and "--resume" in again.stderr
    res = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, "--resume")
    assert res.returncode == 0, res.stderr
    assert "3 of 3 cells stored (1 before this run)" in res.stdout
    _exactly_once(db, 3)
    done = cli("campaign", "run", str(spec), "--db", str(db), "--name", tb_name, "--resume")
    assert done.returncode == 0 and "0 cells and 0 trials written" in done.stdout

    res = cli("testbed", "cleanup", "--name", tb_name)
    assert res.returncode == 0, res.stderr
    assert netns_of(tb_name) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_worker(address: str, name: str, tls: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _argv("worker", "--scheduler", address, "--name", name, "--tls-dir", str(tls)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


@pytest.mark.slow
def test_distributed_worker_killed_mid_cell_and_restarted(tb_name, tmp_path, netns_of):
    spec, db = _spec(tmp_path, "kw", 2), tmp_path / "kw.db"
    tls = tmp_path / "tls"
    certs.make(tls)
    address = f"tls://127.0.0.1:{_free_port()}"
    dashboard = f"http://127.0.0.1:{_free_port()}/status"
    sched = subprocess.Popen(
        _argv("cluster", "scheduler", "--listen", address, "--tls-dir", str(tls),
              "--dashboard", dashboard.split("/")[2]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    procs: list[subprocess.Popen] = [sched]
    try:
        worker = _start_worker(address, tb_name, tls)
        procs.append(worker)
        run = _argv(
            "campaign", "run", str(spec), "--db", str(db), "--scheduler", address,
            "--tls-dir", str(tls),
        )  # fmt: skip
        coord = subprocess.Popen(run, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(coord)
        lines = _Lines(coord)
        lines.wait_for(_progress(0, 2, 4))
        assert any(f"; dashboard {dashboard}" in line for line in lines.lines), lines.lines
        with urllib.request.urlopen(dashboard, timeout=10) as page:  # Dask's own dashboard
            assert page.status == 200
        worker.send_signal(signal.SIGKILL)  # mid-cell: its cell's child ends with it
        worker.wait(timeout=10)
        time.sleep(1.0)
        assert _stored_cells(db) == 0
        procs.append(_start_worker(address, tb_name, tls))
        assert coord.stdout is not None  # stderr is the thread's: read stdout alone
        out = coord.stdout.read()
        coord.wait(timeout=300)
        lines.thread.join(timeout=5)
        assert coord.returncode == 0, out + "".join(lines.lines[-20:])
        assert "2 of 2 cells stored" in out
    finally:
        stop_all(procs)
    _exactly_once(db, 2)
    with Store(db, readonly=True) as st:
        workers = {e.metadata["campaign"]["worker"] for e in st.experiments()}
        transports = {e.environment["cluster_transport"] for e in st.experiments()}
    assert workers == {f"netassay-{tb_name}"} and transports == {"tls"}
    deadline = time.monotonic() + 30
    while netns_of(tb_name) and time.monotonic() < deadline:  # the killed cell's teardown
        time.sleep(0.5)
    assert netns_of(tb_name) == [], os.listdir("/run/netns")
