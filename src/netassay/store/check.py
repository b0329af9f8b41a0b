"""A store's health: SQLite's quick check before anything is written to it (a damaged
store is refused) or read from it (a warning), and the full check ``db check`` runs
(SQLite's integrity check and netassay's own invariants)."""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from netassay.errors import StoreDamaged, StoreWarning
from netassay.store.schema import SCHEMA_VERSION

SHOWN = 10  # problems a check lists at most


def problems_of(rows: Iterable[tuple[Any, ...]]) -> list[str]:
    """An integrity check's rows as problems, one line each ([] for 'ok')."""
    out = []
    for (text,) in rows:
        out += [ln for ln in str(text).splitlines() if ln != "ok" and not ln.startswith("***")]
    return out


def summary(problems: list[str]) -> str:
    """'3 problem(s), the first: ...' ('10 or more' when the check stopped at its limit)."""
    n = f"{len(problems)} or more" if len(problems) >= SHOWN else str(len(problems))
    return f"{n} problem(s), the first: {problems[0]}"


def quick_check(conn: sqlite3.Connection) -> list[str]:
    """SQLite's quick check, at most its first 10 problems ([] when healthy)."""
    return problems_of(conn.execute(f"PRAGMA quick_check({SHOWN})"))


def refuse_if_damaged(conn: sqlite3.Connection, path: Path) -> None:
    """Before a write: a damaged store is refused in one line (nothing is written)."""
    problems = quick_check(conn)
    if problems:
        raise StoreDamaged(
            f"{path}: the store is damaged, nothing was written to it",
            f"SQLite's quick check: {summary(problems)}",
            f"restore a copy ('netassay db check --db {path}' lists the damage)",
        )


def warn_if_damaged(conn: sqlite3.Connection, path: Path) -> list[str]:
    """Before a read: a damaged store is read with a ``StoreWarning``; its problems."""
    problems = quick_check(conn)
    if problems:
        warnings.warn(
            StoreWarning(
                f"{path} is damaged ({summary(problems)}): what is read from it "
                f"may be wrong; 'netassay db check --db {path}' lists the damage"
            ),
            stacklevel=4,
        )
    return problems


def row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many rows of each kind the store holds (what ``db check`` says)."""
    tables = (
        ("experiments", "experiments"), ("trials", "trials"), ("rtt runs", "rtt_runs"),
        ("acceptance runs", "accept_runs"), ("campaigns", "campaigns"),
    )  # fmt: skip
    return {
        what: int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        for what, table in tables
    }


def integrity_problems(conn: sqlite3.Connection, version: int) -> list[str]:
    """SQLite's integrity check plus netassay's own invariants; [] when healthy."""
    problems = problems_of(conn.execute(f"PRAGMA integrity_check({SHOWN})"))
    problems += [
        f"foreign key: trial row {r[1]} points to a missing experiment"
        for r in conn.execute("PRAGMA foreign_key_check")
    ]
    if version != SCHEMA_VERSION:
        problems.append(f"schema version {version} != {SCHEMA_VERSION}")
    bad = conn.execute(
        "SELECT count(*) FROM trials WHERE sent < 0 OR received < 0 OR duration_s <= 0"
    ).fetchone()[0]
    if bad:
        problems.append(f"{bad} trial(s) with negative counts or non-positive duration")
    odd = conn.execute(
        "SELECT count(*) FROM trials WHERE coalesce(excluded, '')"
        " != coalesce(netassay_exclusion(warnings_json), '') OR sink_dropped < 0"
    ).fetchone()[0]
    if odd:
        problems.append(f"{odd} trial(s) whose exclusion does not follow their warnings")
    return problems
