"""What a report is made from: stores as they are, PASTRAMI files and folders imported
into a temporary store."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from netassay.errors import InputError
from netassay.store import Store
from netassay.store.pastrami import find_result_files, import_files
from netassay.store.paths import is_store


@contextlib.contextmanager
def as_stores(paths: Iterable[str | Path]) -> Iterator[list[Path]]:
    """The inputs as stores, in order: a .db as it is; PASTRAMI files and folders imported
    into one temporary store (removed on exit), placed where the first of them was named."""
    given = [Path(p) for p in paths]
    if not given:
        raise InputError("nothing to report", "no file, folder or .db was given", "name one")
    stores: list[Path | None] = []
    files: list[Path] = []
    for p in given:
        if p.is_file() and is_store(p):
            stores.append(p)
        else:
            if not files:
                stores.append(None)  # where the imported files go
            files.extend(find_result_files([p]))
    if not files:
        yield [p for p in stores if p is not None]
        return
    with tempfile.TemporaryDirectory(prefix="netassay-report-") as tmp:
        db = Path(tmp) / "imported.db"
        with Store(db) as store:
            import_files(store, files)
        yield [db if p is None else p for p in stores]
