"""What a store error means (``store/faults.py``), on SQLite's own errors: a full
database, a constraint, a file that is not a database; who holds a lock, read from
``/proc/locks``'s lines; the wait for another writer's lock; a resumable run's error
naming its --resume."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path

import pytest

from netassay.cli import _said
from netassay.errors import StoreDamaged, StoreError, StoreFull, StoreLocked, StoreWaiting
from netassay.store import Store, faults


def _full_error(tmp_path: Path) -> sqlite3.OperationalError:
    """SQLite's own 'database or disk is full' (SQLITE_FULL): a page limit reached."""
    conn = sqlite3.connect(tmp_path / "f.db")
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.execute("PRAGMA max_page_count = 8")
    try:
        with pytest.raises(sqlite3.OperationalError) as caught:
            conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
    finally:
        conn.close()
    return caught.value


def test_a_full_database_is_no_space_with_nothing_lost(tmp_path):
    exc = _full_error(tmp_path)
    assert faults.primary(exc) == faults.FULL
    err = faults.cause(exc, tmp_path / "f.db")
    assert isinstance(err, StoreFull) and err.exit_code == 4
    assert err.line() == (
        f"no space left on the device holding {tmp_path / 'f.db'}: what it holds is intact, "
        "nothing lost (the write in progress was undone); free space and run the same "
        "command again (what is stored is kept)"
    )


def test_a_constraint_is_never_called_damage(tmp_path):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE e (key TEXT UNIQUE)")
    conn.execute("INSERT INTO e VALUES ('a')")
    with pytest.raises(sqlite3.IntegrityError) as caught:
        conn.execute("INSERT INTO e VALUES ('a')")
    for err in (faults.cause(caught.value, tmp_path / "p.db"),):
        assert not isinstance(err, StoreDamaged)
        line = err.line()
        assert "conflicts with one already stored" in line and "not damaged" in line
        assert "restore" not in line and "db check" not in line
    line, code = _said(caught.value)  # raised where no store was named
    assert code == 4 and "restore" not in line and "not damaged" in line


def test_only_a_file_sqlite_calls_damaged_is_said_to_be_damaged(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    conn = sqlite3.connect(bad)
    with pytest.raises(sqlite3.DatabaseError) as caught:
        conn.execute("SELECT * FROM sqlite_master").fetchall()
    conn.close()
    assert faults.primary(caught.value) in (faults.CORRUPT, faults.NOTADB)
    err = faults.cause(caught.value, bad)
    assert isinstance(err, StoreDamaged) and faults.is_damage(err)
    assert f"'netassay db check --db {bad}' lists the damage; restore a copy" in err.line()
    assert not faults.is_damage(faults.cause(_full_error(tmp_path), bad))


def test_the_lock_holder_is_read_from_proc_locks(tmp_path):
    db = tmp_path / "p.db"
    Store(db).close()
    shm = Path(f"{db}-shm")
    shm.write_bytes(b"\0" * 32768)
    st, sh = os.stat(db), os.stat(shm)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
    locks = "\n".join([
        f"1: POSIX  ADVISORY  READ 111 {dev}:{sh.st_ino} 128 128",  # a reader
        f"2: POSIX  ADVISORY  WRITE 222 {dev}:{sh.st_ino} 120 120",  # the WAL writer
        f"3: -> POSIX  ADVISORY  WRITE 333 {dev}:{sh.st_ino} 120 120",  # one waiting
        f"4: POSIX  ADVISORY  WRITE 444 {dev}:{st.st_ino + 999} 120 120",  # another file
        f"5: POSIX  ADVISORY  WRITE 555 {dev}:{st.st_ino} 1073741825 1073741825",  # RESERVED
        f"6: FLOCK  ADVISORY  WRITE 666 {dev}:{st.st_ino} 0 EOF",  # not SQLite's
        f"7: POSIX  ADVISORY  WRITE {os.getpid()} {dev}:{sh.st_ino} 120 120",  # this one
    ])  # fmt: skip
    assert faults.lock_holders(db, locks) == [222, 555]
    assert faults.lock_holders(tmp_path / "none.db", locks) == []


def test_a_writer_waits_for_another_says_so_once_and_writes(tmp_path, monkeypatch):
    db = tmp_path / "w.db"
    Store(db).close()
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(faults, "SAY_AFTER_S", 0.3)
    threading.Timer(1.5, lambda: other.execute("COMMIT")).start()
    t0 = time.monotonic()
    with warnings.catch_warnings(record=True) as said, Store(db) as st:
        warnings.simplefilter("always")
        _, created = st.add_experiment(key="k", kind="sweep", source="s", label="l", config={})
    assert created and time.monotonic() - t0 >= 1.4
    waits = [w for w in said if issubclass(w.category, StoreWaiting)]
    assert len(waits) == 1 and f"waiting for another netassay writing {db}" in str(waits[0].message)
    other.close()


def test_a_lock_held_past_the_wait_is_refused_with_nothing_written(tmp_path, monkeypatch):
    db = tmp_path / "l.db"
    Store(db).close()
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    monkeypatch.setenv("NETASSAY_STORE_WAIT_S", "0.5")
    monkeypatch.setattr(faults, "SAY_AFTER_S", 0.2)
    try:
        with (
            warnings.catch_warnings(record=True),
            Store(db) as st,
            pytest.raises(StoreLocked) as caught,
        ):
            warnings.simplefilter("always")
            st.add_experiment(key="k", kind="sweep", source="s", label="l", config={})
    finally:
        other.execute("ROLLBACK")
        other.close()
    line = caught.value.line()
    assert "locked by another process" in line  # (this process: not named)
    assert "held the store's write lock for over 0.5 s" in line
    assert "wait for it to end (or stop it), then run the same command again" in line
    with Store(db, readonly=True) as st:
        assert list(st.experiments()) == []


def test_a_resumable_run_s_store_error_names_its_resume():
    err = faults.full("p.db", "3 of 20 trials of experiment 2 stored, nothing lost")
    err.path, err.experiment, err.kind = "p.db", 2, "sweep"
    line, code = _said(err)
    assert code == 4
    assert line == (
        "no space left on the device holding p.db: 3 of 20 trials of experiment 2 stored, "
        "nothing lost; free space and continue with 'netassay sweep --db p.db --resume "
        "--experiment 2' (what is stored is kept)"
    )
    err.kind = "doctor"  # a method that does not resume: the same command again
    assert "run the same command again" in _said(err)[0]
    plain = StoreError("p.db: x", "y", "z")
    assert _said(plain)[0] == "p.db: x: y; z"
