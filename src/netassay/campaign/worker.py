"""A campaign cell, run on a Dask worker that owns one testbed; and that worker.

A cell is the method's own command (``netassay sweep``, ``search`` or ``accept
--embedded``; an accept cell's scenario knobs in a one-scenario file) run as a child
process on the worker's testbed, writing a scratch store of its own; the cell
returns the experiments and trial records it stored, and the coordinator alone writes the
campaign's store. The child dies with the worker (PR_SET_PDEATHSIG: SIGTERM, on which a
sweep removes its testbed), and a cell whose worker died is rerun from the start: its
partial trials stay in the scratch store, never in the campaign's. A testbed such a cell
left behind (its process gone before it could remove it) is removed before the next cell
runs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netassay import methods as registry
from netassay.campaign.cluster import Access
from netassay.errors import NetassayError, TestbedError
from netassay.names import validate_name
from netassay.proc import die_with_parent
from netassay.store.db import Store
from netassay.store.rows import ExperimentRows
from netassay.testbed import state, topology
from netassay.testbed.bed import orphaned, require_root

TOPIC = "netassay-campaign"  # worker -> coordinator: trials stored so far in a cell
RESOURCE = "testbed"  # the worker resource: one cell at a time per testbed
WORKER_PREFIX = "netassay-"  # a netassay worker's Dask name: netassay-<testbed>
LOCK_WAIT_S = 60.0  # a cell waits this long for its testbed's previous user to let go


class CellFailed(NetassayError):
    """A cell's command failed; the campaign goes on and a resume runs the cell again."""

    exit_code = 10


@dataclass(frozen=True)
class CellJob:
    key: str  # the experiment's key in the campaign store
    method: str  # sweep | search | accept
    args: tuple[str, ...]  # the command's flags (cell settings)
    label: str
    testbed: str  # the testbed name when the worker does not own one by name
    scenario: dict[str, Any] = field(default_factory=dict)  # an accept cell's scenario


@dataclass(frozen=True)
class CellResult:
    key: str
    testbed: str
    worker: str
    wall_s: float
    experiments: list[ExperimentRows]  # the cell's own experiment first, each whole


def testbed_of(default: str) -> tuple[str, str]:
    """(testbed name, worker name): a netassay worker owns the testbed in its name."""
    try:
        from distributed import get_worker  # deferred: Dask (1 s), only where cells run

        w = str(get_worker().name)
    except ValueError:  # not on a worker (called directly)
        return default, "local"
    return (w[len(WORKER_PREFIX) :] if w.startswith(WORKER_PREFIX) else default), w


def _wait_for_testbed(name: str, wait_s: float = LOCK_WAIT_S) -> None:
    """A cell rerun after its worker died may find the old cell's child still removing
    the testbed: wait until its lock is free."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            state.Lock(name).acquire().release()
            return
        except TestbedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _remove_orphan(name: str) -> bool:
    """Remove testbed ``name`` when a dead cell left it: built for one command (not by
    'testbed up') by a process that is gone, e.g. a cell killed with its coordinator
    while it built its testbed. True when something was removed."""
    st = state.read_state(name)
    if st is None or not orphaned(st):
        return False
    topology.cleanup({name})
    return True


def _count(db: Path, table: str = "trials") -> int | None:
    """Rows of ``table`` (the cell method's progress rows: trials, accept_runs) stored
    so far."""
    if not db.exists():
        return None
    try:
        with contextlib.closing(
            sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        ) as c:
            return int(c.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.Error:
        return None


def _scenario_file(scratch: Path, scenario: dict[str, Any]) -> list[str]:
    """``--scenarios FILE`` holding an accept cell's one scenario ([] when it has none)."""
    if not scenario:
        return []
    path = scratch / "scenario.toml"
    lines = ["[[scenario]]"] + [f"{k} = {json.dumps(v)}" for k, v in scenario.items()]
    path.write_text("\n".join(lines) + "\n")
    return ["--scenarios", str(path)]


def _publish(key: str, trials: int) -> None:
    with contextlib.suppress(ValueError):
        from distributed import get_worker  # deferred: Dask (1 s), only where cells run

        get_worker().log_event(TOPIC, {"key": key, "trials": trials})


def run_cell(job: CellJob) -> CellResult:
    """Run one cell on this worker's testbed and return what it stored."""
    name, worker = testbed_of(job.testbed)
    validate_name(name)
    _wait_for_testbed(name)
    _remove_orphan(name)
    scratch = Path(tempfile.mkdtemp(prefix="netassay-cell-"))
    db = scratch / "cell.db"
    argv = [
        sys.executable,
        "-m",
        "netassay",
        job.method,
        "--db",
        str(db),
        "--name",
        name,
        "--label",
        job.label,
        *job.args,
        *_scenario_file(scratch, job.scenario),
    ]
    env = {k: v for k, v in os.environ.items() if k != "NETASSAY_CONFIG"}
    t0 = time.monotonic()
    try:
        with open(scratch / "stderr", "w+") as err:
            proc = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=err, env=env, preexec_fn=die_with_parent
            )
            last = -1
            try:
                while proc.poll() is None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=0.5)  # returns as soon as the cell ends
                    n = _count(db, registry.method(job.method).comparison.progress_rows)
                    if n is not None and n != last:
                        last = n
                        _publish(job.key, n)
            finally:
                if proc.poll() is None:  # this thread is being torn down: end the cell
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=60)
            err.seek(0)
            tail = [ln for ln in err.read().splitlines() if ln.strip()]
        # a search that ran but missed a goal (time cap: exit 9) stored what it found
        if proc.returncode not in (0, 9):
            raise CellFailed(
                f"cell {job.key} failed on testbed '{name}' ({worker})",
                (tail[-1] if tail else f"exit {proc.returncode}").removeprefix("netassay: "),
                "fix it and rerun the campaign with --resume",
            )
        return CellResult(job.key, name, worker, time.monotonic() - t0, read_scratch(db))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def read_scratch(db: Path) -> list[ExperimentRows]:
    """Every experiment of a cell's scratch store, each with every row that refers to
    it (trials, runs, a method's own rows: verbatim output included), oldest first."""
    with Store(db, readonly=True) as store:
        return [store.experiment_rows(exp.id) for exp in store.experiments()]


def serve(scheduler: Access, name: str) -> None:
    """Run a Dask worker that owns testbed ``name`` on this host until it is stopped;
    it reaches ``scheduler`` (and serves its peers) with mutual TLS, or in plaintext on
    loopback only (``campaign.cluster.access`` decided which); its own HTTP pages are
    served on loopback only."""
    from distributed import Worker  # deferred: Dask (1 s), only where cells run

    validate_name(name)
    require_root("a campaign worker (its cells build the testbed)")

    async def main() -> None:
        async with Worker(
            scheduler.address,
            nthreads=1,
            resources={RESOURCE: 1},
            name=f"{WORKER_PREFIX}{name}",
            security=scheduler.security("worker"),
            host=None if scheduler.tls_dir else "127.0.0.1",
            dashboard_address="127.0.0.1:0",
        ) as w:
            sys.stderr.write(
                f"netassay worker: testbed '{name}' at {w.address}, scheduler "
                f"{scheduler.address} ({scheduler.transport})\n"
            )
            sys.stderr.flush()
            await w.finished()

    asyncio.run(main())
