"""Fixtures of the integration tests: stores as older versions of netassay left them."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Container
from pathlib import Path

import pytest

from netassay.store.rows import split_sql
from netassay.store.schema import MIGRATIONS


def _old_store(path: Path, versions: Container[int]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("netassay_exclusion", 1, lambda _: None)
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
        " description TEXT NOT NULL, applied_utc TEXT NOT NULL)"
    )
    for version, description, sql in MIGRATIONS:
        if version not in versions:
            continue
        for stmt in split_sql(sql):
            conn.execute(stmt)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, 'then')", (version, description))
    conn.execute(
        "INSERT INTO experiments VALUES (1, 'k', 'sweep', 't', 'l', 'u', '0', '{}', '{}', '{}')"
    )
    return conn


@pytest.fixture
def old_store() -> Callable[[Path, Container[int]], sqlite3.Connection]:
    """A store at PATH with only the migrations in VERSIONS applied and recorded, and one
    experiment (id 1); returns the open connection, for more rows (close it)."""
    return _old_store
