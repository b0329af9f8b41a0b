"""Builders the tests share: a synthetic SUT (a ``load -> trial`` function with a known
answer) and a store holding real measured experiments of the kinds a test asks for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from netassay.store.db import Store
from netassay.trial.record import TrialRecord

GOLDEN_STORE = Path(__file__).resolve().parent / "data" / "golden" / "store.db"

Delivered = Callable[[float, float, int], float]  # (load, duration, k) -> frames forwarded


class SyntheticSut:
    """A synthetic SUT: ``delivered(load, duration, k) -> frames forwarded``; counts the
    trials it ran and keeps a clock that advances by each trial. ``fault(attempt, load)``
    returns a warning that spoils that trial (it then loses half its frames)."""

    def __init__(
        self,
        delivered: Delivered,
        fault: Callable[[int, float], str | None] | None = None,
        source: str = "synthetic",
    ) -> None:
        self.delivered = delivered
        self.fault = fault
        self.source = source
        self.calls: list[tuple[int, int, float, float]] = []
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def __call__(self, i: int, k: int, load: float, duration: float) -> TrialRecord:
        self.calls.append((i, k, load, duration))
        self.now += duration + 0.2
        sent = round(load * duration)
        warnings = []
        fwd = min(sent, int(self.delivered(load, duration, k)))
        why = self.fault(len(self.calls), load) if self.fault else None
        if why:
            warnings.append(why)
            fwd = sent // 2  # a spoiled trial loses a lot: it must never count
        return TrialRecord(i, k, load, duration, sent, fwd, self.source, warnings=warnings)


def cliff(capacity_pps: float) -> Delivered:
    """A SUT that forwards up to ``capacity_pps`` and drops the rest."""
    return lambda load, duration, k: round(capacity_pps * duration)


def store_with(path: Path, *kinds: str) -> Path:
    """A new store at ``path`` with the golden store's experiments of ``kinds``: each
    measured once on a real testbed or imported from real data (tests/data/golden),
    copied whole through the store's own API."""
    with Store(GOLDEN_STORE, readonly=True) as src, Store(path) as dst:
        for exp in src.experiments(kinds=kinds):
            dst.import_rows(src.experiment_rows(exp.id), exp.key, exp.label, exp.metadata)
    return path
