"""Turn inputs (PASTRAMI files, folders, netassay stores) into assessments, one at a time."""

from __future__ import annotations

import contextlib
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from netassay.analysis.assess import Assessment, assess_trials
from netassay.analysis.loads import build_loads
from netassay.config import AnalysisConfig
from netassay.errors import InputError, StoreError
from netassay.quality import exclusion
from netassay.store import Store
from netassay.store.pastrami import ParsedExperiment, find_result_files, parse_file

DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def is_store(path: Path) -> bool:
    if path.suffix in DB_SUFFIXES:
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def assess_parsed(exp: ParsedExperiment, cfg: AnalysisConfig) -> Assessment:
    """Assess one parsed file: its usable trials, and every load with what was excluded."""
    trials = [t for t in exp.trials if not exclusion(t.warnings)]
    k_used = Counter(t.load_index for t in trials)
    rates = exp.config["rates_pps"]
    loads = build_loads(
        rates,
        [(i, rates[i], k_used[i]) for i in range(len(rates)) if k_used[i]],
        [(t.load_index, t.rate_pps, t.excluded) for t in exp.trials if t.excluded],
    )
    return assess_trials(
        np.fromiter((t.load_index for t in trials), np.int64, len(trials)),
        np.fromiter((t.rate_pps for t in trials), np.float64, len(trials)),
        np.fromiter((t.sent for t in trials), np.float64, len(trials)),
        np.fromiter((t.received for t in trials), np.float64, len(trials)),
        cfg,
        source=exp.source,
        label=exp.label,
        metadata=exp.metadata,
        duration_s=exp.config.get("duration_s"),
        trial_warnings=sum(1 for t in exp.trials if t.warnings),
        excluded_trials=len(exp.trials) - len(trials),
        loads=loads,
    )


def assess_store(store: Store, cfg: AnalysisConfig) -> Iterator[Assessment]:
    """Assess every experiment of a store; only one experiment's trials in memory at once.

    An experiment with planned loads or stored trials is assessed even when none of its
    loads has a usable trial (all excluded, or a sweep that has only just started).
    """
    for exp in store.experiments():
        if exp.kind == "search":  # no load grid, no verdict: netassay.search.view shows it
            continue
        cols = store.trial_arrays(exp.id)
        if len(cols.loads) == 0:
            continue
        yield assess_trials(
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
            for f in find_result_files([p]):
                yield assess_parsed(parse_file(f), cfg)
