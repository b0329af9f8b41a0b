"""A campaign cell, run on a Dask worker that owns one testbed; and that worker.

A cell is its method run through the protocol (``METHOD.run(request, options,
progress)``) in a child process of the worker, on the worker's testbed, into a scratch
store of its own. The worker builds the cell's Request and RunOptions from its settings
(``invoke.cell``: the same steps a command takes from its flags; a setting the method
refuses is refused there, before the child starts) and starts the child with
multiprocessing's ``spawn`` (the Dask worker is threaded: no fork). The child dies with
the worker (PR_SET_PDEATHSIG, set first thing: SIGTERM, on which its run ends as Ctrl-C
would end a command and removes its testbed), and sends back through a pipe either what
it stored (``CellDone``: its experiments read back from its scratch store, each whole)
or its error, typed (``CellError``: the error's class, exit code and its one line's
parts), which the worker raises as ``CellFailed``; a child that dies without a word
(killed, crashed) is a ``CellFailed`` naming its signal or exit code. The coordinator
alone writes the campaign's store. A cell whose worker died is rerun from the start:
its partial trials stay in the scratch store, never in the campaign's. A testbed such a
cell left behind (its process gone before it could remove it) is removed before the next
cell runs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from types import FrameType
from typing import Any

from netassay import invoke
from netassay import methods as registry
from netassay.campaign.cluster import Access
from netassay.errors import Interrupted, NetassayError, Terminated, TestbedError
from netassay.methods.base import RunOptions
from netassay.names import validate_name
from netassay.proc import die_with_parent
from netassay.store import faults
from netassay.store.db import Store
from netassay.store.rows import ExperimentRows
from netassay.testbed import state, topology
from netassay.testbed.bed import orphaned, require_root

TOPIC = "netassay-campaign"  # worker -> coordinator: trials stored so far in a cell
RESOURCE = "testbed"  # the worker resource: one cell at a time per testbed
WORKER_PREFIX = "netassay-"  # a netassay worker's Dask name: netassay-<testbed>
LOCK_WAIT_S = 60.0  # a cell waits this long for its testbed's previous user to let go
STOP_WAIT_S = 60.0  # a stopped cell's child gets this long to remove its testbed
INTERNAL = 70  # the exit code of an error netassay did not foresee (as the command line's)


@dataclass(frozen=True)
class CellError:
    """A cell's error as its child sends it: the error's class, its exit code (as the
    method's command would exit) and its one line's parts (what, why, what to do)."""

    kind: str
    exit_code: int
    what: str
    why: str = ""
    todo: str = ""

    @staticmethod
    def of(exc: BaseException) -> CellError:
        """The error a cell's run raised (netassay's own, SQLite's said as the store's,
        a stop, or one not foreseen)."""
        if isinstance(exc, sqlite3.DatabaseError):
            exc = faults.cause(exc, faults.store_named())
        if isinstance(exc, Interrupted) and isinstance(exc.__cause__, KeyboardInterrupt):
            exc = exc.__cause__  # a method's run says what it stored: a cell is stopped
        if isinstance(exc, NetassayError):
            return CellError(type(exc).__name__, exc.exit_code, exc.what, exc.why, exc.todo)
        if isinstance(exc, KeyboardInterrupt):  # SIGTERM (Terminated) or Ctrl-C
            stopped = "SIGTERM" if isinstance(exc, Terminated) else "an interrupt"
            code = 143 if isinstance(exc, Terminated) else 130
            return CellError(type(exc).__name__, code, "cell stopped", f"by {stopped}",
                             "the campaign's store has none of it; a resume runs it")  # fmt: skip
        return CellError(
            type(exc).__name__, INTERNAL, f"internal error: {type(exc).__name__}: {exc}", "",
            "report it with the campaign file",
        )  # fmt: skip

    def line(self) -> str:
        """The error's one line, as the method's command says it."""
        return NetassayError(self.what, self.why, self.todo).line()


@dataclass(frozen=True)
class CellDone:
    """What a cell's child stored: every experiment of its scratch store, each whole."""

    experiments: list[ExperimentRows]


class CellFailed(NetassayError):
    """A cell failed; the campaign goes on and a resume runs the cell again. ``error``:
    its method's own error as the cell's child sent it (None: the child said nothing, or
    the cell never started); ``signal``: the signal that killed a child that said nothing."""

    exit_code = 10

    def __init__(
        self, what: str, why: str = "", todo: str = "", error: CellError | None = None,
        signal: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(what, why, todo)
        self.error = error
        self.signal = signal

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt whole on the coordinator (a remote worker's error is pickled)."""
        return (CellFailed, (self.what, self.why, self.todo, self.error, self.signal))


@dataclass(frozen=True)
class CellJob:
    key: str  # the experiment's key in the campaign store
    method: str  # a campaign method (registry.campaign_methods)
    settings: dict[str, Any]  # the cell's settings, keys as its campaign file writes them
    label: str
    testbed: str  # the testbed name when the worker does not own one by name


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


def _publish(key: str, trials: int) -> None:
    with contextlib.suppress(ValueError):
        from distributed import get_worker  # deferred: Dask (1 s), only where cells run

        get_worker().log_event(TOPIC, {"key": key, "trials": trials})


def run_cell(job: CellJob) -> CellResult:
    """Run one cell on this worker's testbed and return what it stored; CellFailed,
    carrying its method's error (``CellError``), when it failed."""
    name, worker = testbed_of(job.testbed)
    validate_name(name)
    _wait_for_testbed(name)
    _remove_orphan(name)
    scratch = Path(tempfile.mkdtemp(prefix="netassay-cell-"))
    db = scratch / "cell.db"
    failed = f"cell {job.key} failed on testbed '{name}' ({worker})"
    todo = "fix it and rerun the campaign with --resume"
    t0 = time.monotonic()
    kept = False
    try:
        try:
            request, options = invoke.cell(
                job.method, job.settings, db=str(db), name=name, label=job.label
            )
        except NetassayError as exc:  # refused before anything is built
            error = CellError.of(exc)
            raise CellFailed(failed, error.line(), todo, error) from exc
        outcome, code = _in_child(job, request, options, db, scratch / "output")
        if isinstance(outcome, CellDone):
            return CellResult(job.key, name, worker, time.monotonic() - t0, outcome.experiments)
        kept = bool(_count(db, registry.method(job.method).comparison.progress_rows))
        where = _kept(db) if kept else ""
        if outcome is None:  # it died without a word: killed, or crashed
            raise _silent(failed, todo, code, where)
        raise CellFailed(failed, outcome.line() + where, todo, outcome)
    finally:
        if not kept:
            shutil.rmtree(scratch, ignore_errors=True)


def _kept(db: Path) -> str:
    """What a failed cell's line adds when its scratch store holds trials (or its
    method's progress rows): it is kept where the method's own line may have named it
    (a resume runs the cell again from the start, never from there)."""
    return (
        f"; what the cell stored before it failed is kept apart in {db} on "
        f"{socket.gethostname()}, not in the campaign's store"
    )


def _silent(failed: str, todo: str, code: int | None, where: str = "") -> CellFailed:
    """A cell whose child died without sending a word: by which signal, or exit code."""
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        return CellFailed(failed, f"its process was killed by {name}{where}", todo, signal=-code)
    return CellFailed(failed, f"its process ended (exit {code}) without a word{where}", todo)


def _in_child(
    job: CellJob, request: Any, options: RunOptions, db: Path, output: Path
) -> tuple[CellDone | CellError | None, int | None]:
    """Run the cell in a child process (spawned) and wait for what it sends, publishing
    its stored rows as they grow: (what it sent, None when it died without a word; its
    exit code, negative for a signal)."""
    spawn = multiprocessing.get_context("spawn")
    mine, theirs = spawn.Pipe(duplex=False)
    child = spawn.Process(
        target=_child,
        args=(job.method, request, options, theirs, str(output), os.getpid()),
        name=f"netassay-cell-{job.key}",
        daemon=True,
    )
    child.start()
    theirs.close()  # the child's end: a child gone leaves the pipe at its end (EOF)
    rows = registry.method(job.method).comparison.progress_rows
    outcome: CellDone | CellError | None = None
    last = -1
    try:
        while True:
            if mine.poll(0.5):  # returns as soon as the child says something, or ends
                with contextlib.suppress(EOFError):
                    outcome = mine.recv()
                break
            n = _count(db, rows)
            if n is not None and n != last:
                last = n
                _publish(job.key, n)
        child.join(STOP_WAIT_S)  # it said its last word: it ends now
    finally:
        if child.is_alive():  # this thread is being torn down, or the child hangs on
            child.terminate()  # SIGTERM: its run ends and removes its testbed
            child.join(STOP_WAIT_S)
        mine.close()
    n = _count(db, rows)
    if n is not None and n != last:
        _publish(job.key, n)
    return outcome, child.exitcode


def _child(
    method: str, request: Any, options: RunOptions, out: Connection, output: str, parent: int
) -> None:
    """A cell's child process: dies with the worker, runs the method, sends what it
    stored or its error. Its output (lines a method writes itself) goes to ``output``."""
    die_with_parent()
    if os.getppid() != parent:  # the worker died before the line above
        os._exit(1)
    signal.signal(signal.SIGTERM, _terminate)
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.environ.pop("NETASSAY_CONFIG", None)  # a cell runs what its campaign file says
    try:
        invoke.run(method, request, options, lambda line: None)
        assert options.db is not None  # a cell stores into its scratch store
        sent: CellDone | CellError = CellDone(read_scratch(Path(options.db)))
    except BaseException as exc:  # its error, typed; the worker says it
        sent = CellError.of(exc)
    out.send(sent)
    out.close()
    if isinstance(sent, CellError):
        sys.exit(sent.exit_code)


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (the worker stopped the cell, or died): the run ends as on Ctrl-C, what
    ended is stored, the testbed is removed."""
    raise Terminated()


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
