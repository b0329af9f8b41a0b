"""Before a measurement builds anything: can its store be opened and written?

A run writes each result as it ends, into a store it opens after the testbed is up and
the generator probed. A store it cannot open or write (a folder, a text file, another
program's database, a newer netassay's, a damaged one, a read-only file or folder, a
folder that does not exist) is refused here first, in one line, before anything is
built; ``--dry-run`` refuses it too. Nothing is written: a new store is made by the run.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from netassay.errors import StoreError
from netassay.store.check import quick_check, summary
from netassay.store.faults import access_problem
from netassay.store.schema import SCHEMA_VERSION

HEADER = b"SQLite format 3\x00"


def _refuse(path: Path, what: str, why: str, todo: str) -> StoreError:
    return StoreError(f"{path}: {what}", why, f"{todo}; nothing was built")


def check_store(db: str | os.PathLike[str]) -> None:
    """Refuse (StoreError, one line) a store a run could not open or write: what the
    file is first (a folder, a file that is not SQLite, another program's database, a
    newer or damaged store), then whether this user may write it and its folder, said
    as every store error says it (``faults.access_problem``)."""
    path = Path(db)
    if path.is_dir():
        raise _refuse(
            path,
            "is a folder",
            "a store is one SQLite file",
            "give a file path, e.g. --db results.db",
        )
    folder = path.parent
    if not folder.is_dir():
        raise _refuse(
            path,
            "its folder does not exist",
            f"no such directory {folder}",
            "create it, or give a path in a folder that exists",
        )
    _refuse_access(path, writing=False)
    if path.exists():
        _check_file(path)
        if path.stat().st_size > 0:
            _check_content(path)
    _refuse_access(path, writing=True)


def _refuse_access(path: Path, writing: bool) -> None:
    """What keeps this user from reading (or writing) the store or its folder, if any."""
    problem = access_problem(path, writing)
    if problem is not None:
        raise StoreError(problem.what, problem.why, f"{problem.todo}; nothing was built")


def _check_file(path: Path) -> None:
    """An existing file: a regular file this user can read, empty or a SQLite database."""
    if not path.is_file():
        raise _refuse(
            path, "is not a regular file", "a store is one SQLite file", "give a file path"
        )
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(HEADER))
    except OSError as exc:
        raise _refuse(
            path, "cannot be read", exc.strerror or str(exc), "give a store you can read and write"
        ) from exc
    if head and head != HEADER:
        raise _refuse(
            path,
            "not a SQLite database",
            "the file header is wrong (another kind of file, or corrupted)",
            "give a netassay .db file or a new path",
        )


def _check_content(path: Path) -> None:
    """A SQLite file: netassay's (or empty), of a schema this netassay writes, healthy."""
    try:
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise _refuse(path, "cannot be opened", str(exc), "check the file") from exc
    try:
        conn.execute("PRAGMA query_only = ON")  # reads only; SQLite removes its log on close
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if tables and "schema_migrations" not in tables:
            raise _refuse(
                path,
                "not a netassay store",
                "it is an SQLite database with other tables",
                "give a netassay .db file or a new path",
            )
        if tables:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            version = int(row[0] or 0)
            if version > SCHEMA_VERSION:
                raise _refuse(
                    path,
                    f"schema version {version}, this netassay writes {SCHEMA_VERSION}",
                    "the store was written by a newer release",
                    "upgrade netassay, or give another store",
                )
        problems = quick_check(conn)
        if problems:
            raise _refuse(
                path,
                "the store is damaged",
                f"SQLite's quick check: {summary(problems)}",
                f"'netassay db check --db {path}' lists the damage; restore a copy",
            )
    except sqlite3.DatabaseError as exc:
        raise _refuse(
            path,
            "cannot be opened",
            str(exc),
            f"'netassay db check --db {path}' says why; give another store",
        ) from exc
    finally:
        conn.close()
