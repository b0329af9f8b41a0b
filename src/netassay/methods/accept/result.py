"""What a run of the acceptance test gives (``METHOD.run``), which its view shows: each
test as it ended, judged, and where it was stored."""

from __future__ import annotations

from dataclasses import dataclass

from netassay.analysis.acceptance import Verdict
from netassay.trial.accept import AcceptTest


@dataclass(frozen=True)
class AcceptResult:
    """One test measured: its record, its verdict and its experiment (None: not stored)."""

    test: AcceptTest
    verdict: Verdict
    experiment_id: int | None = None


@dataclass(frozen=True)
class Accepted:
    """A run of ``accept``: its tests in the order they ran (one per scenario of a
    ``--scenarios`` matrix, else one) and the store they were written to (None: not
    stored)."""

    tests: tuple[AcceptResult, ...]
    db: str | None
