"""Several netassay processes writing one store at once: each succeeds or waits (and says
so), the store ends as a serial run leaves it, readers beside a writer read what is
there; a lock another process does not let go is named with its pid; a store this user
may not write is said to be read-only, never damaged."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import netassay_argv, pastrami_third, stop_all
from tests.integration.test_store_damage import _run_as_user, open_dir  # noqa: F401

from netassay.store.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
IPERF3 = ROOT / "tests" / "data" / "iperf3" / "udp-50M-server.json"
WAITING = "waiting for another"


def _counts(db: Path) -> dict[str, object]:
    """What a store holds, as a serial run would leave it: rows per table, experiments
    and trials per kind, the keys of what was imported (a run's own keys are new each
    time), the migrations recorded, and no (experiment, load, repetition) twice."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name NOT IN ('schema_migrations', 'method_tables')"
        )]  # fmt: skip
        out: dict[str, object] = {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables
        }
        out["experiments per kind"] = dict(
            conn.execute("SELECT kind, count(*) FROM experiments GROUP BY kind").fetchall()
        )
        out["trials per kind"] = dict(conn.execute(
            "SELECT e.kind, count(*) FROM trials t JOIN experiments e"
            " ON e.id = t.experiment_id GROUP BY e.kind"
        ).fetchall())  # fmt: skip
        out["imported keys"] = sorted(r[0] for r in conn.execute(
            "SELECT key FROM experiments WHERE kind NOT IN ('sweep', 'doctor')"))  # fmt: skip
        out["migrations"] = [r[0] for r in conn.execute(
            "SELECT version FROM schema_migrations ORDER BY version")]  # fmt: skip
        out["trial pairs twice"] = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM trials GROUP BY experiment_id, load_index,"
            " repetition HAVING count(*) > 1)"
        ).fetchone()[0]
    finally:
        conn.close()
    return out


def _start(*args: object, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        netassay_argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env,
    )  # fmt: skip


def _writers(pastrami_dir: Path, db: Path) -> list[tuple[object, ...]]:
    """Imports of different PASTRAMI subsets and of the same folder twice, an iperf3
    import, and 'db migrate'."""
    imp = ("import", "pastrami")
    return [
        (*imp, pastrami_dir / "vm", "--db", db),
        (*imp, pastrami_dir, "--db", db),
        (*imp, pastrami_dir, "--db", db),
        (*imp, pastrami_dir / "bare-metal", pastrami_dir / "vm", "--db", db),
        ("import", "iperf3", IPERF3, "--db", db, "--contract", "50M"),
        ("db", "migrate", "--db", db),
    ]


def _old(db: Path, old_store) -> None:
    """A store as an older netassay left it (schema 5, one experiment): every writer
    below finds it to migrate."""
    old_store(db, {1, 2, 3, 4, 5}).close()


@pytest.mark.slow
def test_writers_at_once_all_succeed_and_leave_what_a_serial_run_does(
    pastrami_dir, tmp_path, cli, old_store
):
    serial, together = tmp_path / "serial.db", tmp_path / "together.db"
    _old(serial, old_store)
    _old(together, old_store)
    for args in _writers(pastrami_dir, serial):
        cli(*args, check=True)
    procs = [_start(*args) for args in _writers(pastrami_dir, together)]
    try:
        ended = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    finally:
        stop_all(procs)  # type: ignore[arg-type]
    for (rc, _, err), args in zip(ended, _writers(pastrami_dir, together), strict=True):
        assert rc == 0, (args, err)
        said = [ln for ln in err.splitlines() if WAITING not in ln and "warning" not in ln]
        assert said == [], (args, err)  # a waiting line, else nothing (nor a warning)
    assert _counts(together) == _counts(serial)
    assert _counts(together)["migrations"] == list(range(1, SCHEMA_VERSION + 1))
    assert _counts(together)["trial pairs twice"] == 0
    assert ": ok (" in cli("db", "check", "--db", together, check=True).stdout


HOLD = """
import select, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))  # a line, or the time, lets go
conn.execute("COMMIT")
"""


@pytest.fixture
def holder() -> Iterator:
    """``holder(db, seconds)``: another process holding the store's write lock (started
    once it holds it) until a line on its stdin or ``seconds``; stopped after the test."""
    procs: list[subprocess.Popen[str]] = []

    def hold(db: Path, seconds: float) -> subprocess.Popen[str]:
        p = subprocess.Popen([sys.executable, "-c", HOLD, str(db), str(seconds)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
        procs.append(p)
        assert p.stdout is not None and p.stdout.readline().strip() == "held"
        return p

    yield hold
    for p in procs:
        p.kill()
        p.wait()


@pytest.mark.slow
def test_a_writer_that_waits_says_so_once_and_then_writes(pastrami_dir, tmp_path, cli, holder):
    db = tmp_path / "w.db"
    cli("import", "pastrami", pastrami_dir / "vm", "--db", db, check=True)
    other = holder(db, 120)
    t0 = time.monotonic()
    writer = _start("import", "pastrami", pastrami_third(pastrami_dir), "--db", db)
    try:
        assert writer.stderr is not None
        line = writer.stderr.readline()  # said once it has waited 5 s
        waited = time.monotonic() - t0
        assert other.stdin is not None
        other.stdin.write("let go\n")
        other.stdin.flush()
        out, err = writer.communicate(timeout=120)
    finally:
        stop_all([writer])  # type: ignore[list-item]
    assert writer.returncode == 0, line + err
    assert line.startswith(f"netassay: waiting for another process writing {db} (pid {other.pid},")
    assert "this one goes on when it is done" in line and waited >= 5
    assert err == ""  # said once
    assert re.search(r"imported 1 experiment\(s\), \d+ trial\(s\)", out), out


@pytest.mark.slow
def test_a_lock_not_let_go_is_named_with_its_pid(pastrami_dir, tmp_path, cli, holder):
    db = tmp_path / "l.db"
    cli("import", "pastrami", pastrami_dir / "vm", "--db", db, check=True)
    before = _counts(db)
    other = holder(db, 120)
    cp = cli("import", "pastrami", pastrami_third(pastrami_dir), "--db", db,
             env_extra={"NETASSAY_STORE_WAIT_S": "6"})  # fmt: skip
    assert cp.returncode == 4, cp.stderr
    waiting, line = cp.stderr.strip().splitlines()
    assert WAITING in waiting
    assert line.startswith(f"netassay: {db} is locked by pid {other.pid} (")
    assert "held the store's write lock for over 6 s" in line
    assert "wait for it to end (or stop it), then run the same command again" in line
    assert "damaged" not in line and "restore" not in line and "db check" not in line
    other.kill()
    other.wait()
    assert _counts(db) == before


@pytest.mark.slow
def test_readers_beside_a_writer_read_what_is_stored(pastrami_dir, tmp_path, cli):
    """Five 'assess --json' while an import writes: each reads whole experiments, the
    same as once the import is done, never a warning or an error."""
    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_dir / "vm", "--db", db, check=True)
    writer = _start("import", "pastrami", pastrami_dir, "--db", db)
    readers = [_start("assess", db, "--json") for _ in range(5)]
    try:
        read = [(p.wait(timeout=300), *p.communicate()) for p in readers]
        assert writer.wait(timeout=300) == 0, writer.communicate()
    finally:
        stop_all([writer, *readers])  # type: ignore[list-item]
    final = {}
    for text in cli("assess", db, "--json", check=True).stdout.splitlines():
        obj = json.loads(text)
        final[obj["source"]] = obj
    # every experiment of the folder, as an import alone stores them (the shipped
    # files, or the real ones where NETASSAY_DATA has them)
    alone = tmp_path / "alone.db"
    cli("import", "pastrami", pastrami_dir, "--db", alone, check=True)
    expected = {json.loads(t)["source"] for t in cli("assess", alone, "--json").stdout.splitlines()}
    assert set(final) == expected and len(expected) >= 6
    for rc, out, err in read:
        assert rc == 0 and err == "", err
        seen = [json.loads(text) for text in out.splitlines()]
        assert len(seen) >= 2  # at least what was there before the writer began
        for obj in seen:
            assert obj == final[obj["source"]]


@pytest.mark.slow
def test_a_store_this_user_may_not_write_is_said_to_be_read_only(
    pastrami_dir,
    open_dir,  # noqa: F811 (the fixture, imported)
    cli,
):
    """A read-only file, a read-only folder (its store, and a new one there): one line
    that says which, exit 4, never 'damaged' nor 'restore', the store as it was."""
    ro = open_dir / "ro"
    ro.mkdir()
    in_ro, ro_file = ro / "x.db", open_dir / "y.db"
    for db in (in_ro, ro_file):
        cli("import", "pastrami", pastrami_dir / "vm", "--db", db, check=True)
    in_ro.chmod(0o666)  # the file may be written; its folder not
    ro.chmod(0o555)
    ro_file.chmod(0o444)
    open_dir.chmod(0o777)
    user = 65534 if os.geteuid() == 0 else os.geteuid()  # as _run_as_user runs it
    cases = (
        (ro_file, f"{ro_file}: the file is read-only for user {user}"),
        (in_ro, f"{in_ro}: the folder {ro} is read-only for user {user}"),
        (ro / "new.db", f"{ro / 'new.db'}: the folder {ro} is read-only for user {user} (a new"),
    )
    for db, said in cases:
        before = db.read_bytes() if db.exists() else None
        cp = _run_as_user("import", "pastrami", pastrami_third(pastrami_dir), "--db", db)
        assert cp.returncode == 4, (db, cp.stderr)
        [line] = cp.stderr.strip().splitlines()
        assert line.startswith(f"netassay: {said}"), line
        assert "damaged" not in line and "restore" not in line and "db check" not in line
        assert (db.read_bytes() if db.exists() else None) == before
