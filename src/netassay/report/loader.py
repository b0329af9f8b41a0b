"""Turn inputs (PASTRAMI files, folders, netassay stores) into assessments, one at a time."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from netassay.analysis.assess import Assessment, assess_trials
from netassay.config import AnalysisConfig
from netassay.errors import InputError, StoreError
from netassay.quality import COUNTER_FAULT, GENERATOR_LIMIT, RATE_OVERSHOOT
from netassay.store import Store
from netassay.store.loads import build_loads
from netassay.store.pastrami import ParsedColumns, find_result_files, parse_many

DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
# Experiment kinds without a load grid or a PASTRAMI verdict: netassay.search.view and
# netassay.cli_rtt show them in assess, and the report links their own sections.
NOT_SWEEPS = ("search", "rtt")


def is_store(path: Path) -> bool:
    if path.suffix in DB_SUFFIXES:
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def assess_columns(cols: ParsedColumns, cfg: AnalysisConfig) -> Assessment:
    """Assess one parsed file: its usable trials, and every load with what was excluded."""
    limit, over = rate_faults = cols.rate_faults()
    counted = cols.count_faults()
    bad = limit | over | counted
    li = cols.load_index
    use = ~bad
    excluded_trials = int(np.count_nonzero(bad))
    k_used = np.bincount(li[use], minlength=cols.k.size) if excluded_trials else cols.k
    faults = [
        (int(i), float(cols.rate_pps[i]), _fault(lim, cnt))
        for i, lim, cnt in zip(
            li[bad].tolist(), limit[bad].tolist(), counted[bad].tolist(), strict=True
        )
    ]
    rates, ku = cols.config["rates_pps"], k_used.tolist()
    loads = build_loads(rates, [(i, rates[i], ku[i]) for i in range(len(ku)) if ku[i]], faults)
    sent, received = cols.sent, cols.delivered()
    if excluded_trials:
        li, sent, received = li[use], sent[use], received[use]
    return assess_trials(
        li,
        cols.rate_pps[li],
        sent,
        received,
        cfg,
        source=cols.source,
        label=cols.label,
        metadata=cols.metadata,
        duration_s=cols.duration_s,
        trial_warnings=int(np.count_nonzero(cols.warned(rate_faults))),
        excluded_trials=excluded_trials,
        loads=loads,
    )


def _fault(limit: bool, counted: bool) -> str:
    """The fault that excludes an imported trial (the importer's warnings say the same)."""
    if limit:
        return GENERATOR_LIMIT
    return COUNTER_FAULT if counted else RATE_OVERSHOOT


def assess_store(store: Store, cfg: AnalysisConfig) -> Iterator[Assessment]:
    """Assess every experiment of a store; only one experiment's trials in memory at once.

    An experiment with planned loads or stored trials is assessed even when none of its
    loads has a usable trial (all excluded, or a sweep that has only just started).
    """
    for exp in store.experiments():
        if exp.kind in NOT_SWEEPS:  # no load grid, no verdict: shown by their own views
            continue
        a = assess_experiment(store, exp, cfg)
        if a is not None:
            yield a


def assess_experiment(store: Store, exp: Any, cfg: AnalysisConfig) -> Assessment | None:
    """PASTRAMI's assessment of one stored sweep (None when it plans no load)."""
    cols = store.trial_arrays(exp.id)
    if len(cols.loads) == 0:
        return None
    return assess_trials(
        cols.load_index,
        cols.rate_pps,
        cols.sent,
        cols.received,
        cfg,
        source=exp.source,
        label=exp.label,
        metadata={**exp.metadata, "experiment_id": exp.id},
        duration_s=exp.config.get("duration_s"),
        trial_warnings=cols.warning_trials,
        excluded_trials=cols.excluded_trials,
        loads=cols.loads,
    )


def store_paths(inputs: Iterable[str | Path]) -> Iterator[Path]:
    """The inputs that are stores, in order (PASTRAMI files and folders are passed over)."""
    return (p for p in map(Path, inputs) if p.is_file() and is_store(p))


def open_store(path: Path) -> Store:
    if not path.exists():
        raise StoreError(f"{path}: no such database", "", "check the path")
    return Store(path, readonly=True)


@contextlib.contextmanager
def as_stores(paths: Iterable[str | Path]) -> Iterator[list[Path]]:
    """The inputs as stores, in order: a .db as it is; PASTRAMI files and folders imported
    into one temporary store (removed on exit), placed where the first of them was named."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("nothing to report", "no file, folder or .db was given", "name one")
    stores: list[Path | None] = []
    files: list[Path] = []
    for p in paths:
        if p.is_file() and is_store(p):
            stores.append(p)
        else:
            if not files:
                stores.append(None)  # where the imported files go
            files.extend(find_result_files([p]))
    if not files:
        yield [p for p in stores if p is not None]
        return
    from netassay.store.pastrami import import_files

    with tempfile.TemporaryDirectory(prefix="netassay-report-") as tmp:
        db = Path(tmp) / "imported.db"
        with Store(db) as store:
            import_files(store, files)
        yield [db if p is None else p for p in stores]


def iter_assessments(paths: Iterable[str | Path], cfg: AnalysisConfig) -> Iterator[Assessment]:
    """Files and folders are parsed in memory; .db files are read from the store."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("nothing to assess", "no file, folder or .db was given", "name one")
    for p in paths:
        if p.is_file() and is_store(p):
            with open_store(p) as store:
                yield from assess_store(store, cfg)
        else:
            for cols in parse_many(find_result_files([p])):
                yield assess_columns(cols, cfg)
