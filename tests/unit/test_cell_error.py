"""A campaign cell's error crosses two process boundaries (child -> worker -> coordinator,
a remote worker's pickled by Dask) and stays typed: its class, exit code and line."""

from __future__ import annotations

import pickle
import signal
import sqlite3

from netassay.campaign.worker import CellError, CellFailed, _silent
from netassay.errors import Interrupted, Terminated, TestbedError, UsageError


def test_a_methods_error_is_sent_with_its_class_exit_code_and_line():
    exc = TestbedError("cannot build testbed 'camp'", "veth exists", "run testbed cleanup")
    e = CellError.of(exc)
    assert (e.kind, e.exit_code) == ("TestbedError", 5)
    assert e.line() == exc.line()
    assert pickle.loads(pickle.dumps(e)) == e


def test_a_cell_failure_pickles_whole():
    error = CellError.of(UsageError("bad --runs 0", "1..1000", "e.g. 3"))
    f = CellFailed("cell k failed on testbed 'camp' (local)", error.line(), "rerun", error)
    back = pickle.loads(pickle.dumps(f))
    assert isinstance(back, CellFailed) and back.error == error and back.signal is None
    assert (back.what, back.why, back.todo, back.line()) == (f.what, f.why, f.todo, f.line())
    assert back.exit_code == 10


def test_a_child_killed_without_a_word_names_the_signal():
    f = pickle.loads(pickle.dumps(_silent("cell k failed", "rerun", -signal.SIGKILL)))
    assert f.signal == signal.SIGKILL and f.error is None
    assert "its process was killed by SIGKILL" in f.line()
    ended = _silent("cell k failed", "rerun", 3)
    assert ended.signal is None and "exit 3" in ended.line()


def test_a_stop_sqlite_and_the_unforeseen_are_typed_too():
    stopped = CellError.of(Terminated())
    assert (stopped.kind, stopped.exit_code) == ("Terminated", 143)
    assert CellError.of(KeyboardInterrupt()).exit_code == 130
    store = CellError.of(sqlite3.OperationalError("disk I/O error"))  # said as the store's
    assert store.kind == "StoreError" and store.exit_code == 4
    other = CellError.of(ZeroDivisionError("division by zero"))
    assert (other.kind, other.exit_code) == ("ZeroDivisionError", 70)
    assert other.what == "internal error: ZeroDivisionError: division by zero"


def test_a_run_that_says_what_it_stored_when_stopped_is_a_stopped_cell():
    """A method's run turns a stop into Interrupted (what it stored, how to go on): a
    cell is stopped all the same, by the signal that stopped it; an Interrupted of its
    own (no signal under it) stays what it is."""

    def stopped_run(stop: BaseException) -> BaseException:
        try:
            try:
                raise stop
            except KeyboardInterrupt as exc:
                raise Interrupted("sweep interrupted", "2 trial(s) of this run are stored") from exc
        except Interrupted as said:
            return said

    by_term = CellError.of(stopped_run(Terminated()))
    assert (by_term.kind, by_term.exit_code, by_term.what) == ("Terminated", 143, "cell stopped")
    assert by_term.why == "by SIGTERM"
    by_ctrl_c = CellError.of(stopped_run(KeyboardInterrupt()))
    assert (by_ctrl_c.kind, by_ctrl_c.exit_code) == ("KeyboardInterrupt", 130)
    own = CellError.of(Interrupted("campaign interrupted", "", ""))
    assert (own.kind, own.exit_code, own.what) == ("Interrupted", 130, "campaign interrupted")
