"""Which inputs are stores, and how a reading command opens one (read-only)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from netassay.errors import StoreError
from netassay.store.db import Store

DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def is_store(path: Path) -> bool:
    if path.suffix in DB_SUFFIXES:
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def store_paths(inputs: Iterable[str | Path]) -> Iterator[Path]:
    """The inputs that are stores, in order (PASTRAMI files and folders are passed over)."""
    return (p for p in map(Path, inputs) if p.is_file() and is_store(p))


def open_store(path: Path) -> Store:
    if not path.exists():
        raise StoreError(f"{path}: no such database", "", "check the path")
    return Store(path, readonly=True)
