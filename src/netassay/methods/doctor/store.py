"""Doctor runs in the store: an experiment of kind ``doctor`` and a table of its checks
(``doctor_checks``: one row per check, written the moment it is judged, so a run cut
short keeps what it judged). Its trials (the false-loss trials, the floods, the cap
and drop trials) are trials like a sweep's, each stored as it ends; the load index says
which check a trial belongs to (``TRIAL_OF``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from netassay.methods.doctor import checks as doctor_checks
from netassay.store.db import Experiment, Store
from netassay.store.rows import dumps
from netassay.units import utc_now

KIND = "doctor"
TABLE = "doctor_checks"
DDL = """
CREATE TABLE IF NOT EXISTS doctor_checks (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    figure TEXT NOT NULL,
    fix TEXT NOT NULL,
    value_json TEXT NOT NULL,
    utc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS doctor_checks_experiment ON doctor_checks (experiment_id, seq);
"""
# a trial's load index: the check it belongs to
TRIAL_OF = {"false loss": 0, "router mrr": 1, "ground truth: cap": 2, "ground truth: drop": 3}
LAST = "trusted range"  # the check a finished run ends with


@dataclass(frozen=True)
class DoctorSummary:
    """A run's figures (``summary``): its verdict, whether it finished (its last check,
    the trusted range, was judged), the trusted range, the load worth sweeping to and
    the router's MRR as that check found them (None: not judged), and how many checks
    passed, warned and failed (by status)."""

    verdict: str
    finished: bool
    trusted_pps: float | None
    sweep_to_pps: float | None
    mrr_pps: float | None
    counts: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """One JSON object: the same keys as its fields."""
        return asdict(self)


@dataclass(frozen=True)
class StoredDoctor:
    """A doctor run as its store holds it: where, itself, its checks, its figures."""

    db: Path
    experiment: Experiment
    checks: list[doctor_checks.Stored]
    summary: DoctorSummary


def ensure(store: Store) -> None:
    store.ensure_tables(KIND, 1, DDL)


def record(store: Store, experiment_id: int, seq: int, check: doctor_checks.Judged) -> None:
    """One judged check, committed now."""
    with store.transaction() as w:
        w.row(TABLE, {
            "experiment_id": experiment_id, "seq": seq, "name": check.name,
            "status": check.status, "figure": check.figure, "fix": check.fix,
            "value_json": dumps(check.value), "utc": utc_now(),
        })  # fmt: skip


def stored_checks(store: Store, experiment_id: int) -> list[doctor_checks.Stored]:
    rows = store.rows(TABLE, {"experiment_id": experiment_id}, ("seq",))
    return [
        doctor_checks.Check(
            r["name"], r["status"], r["figure"], r["fix"], json.loads(r["value_json"])
        )
        for r in rows
    ]


def summary(checks: Sequence[doctor_checks.Stored]) -> DoctorSummary:
    """A run's verdict over its checks, its trusted range, and whether it finished."""
    last = next((c for c in checks if c.name == LAST), None)
    value = last.value if last else {}
    return DoctorSummary(
        verdict=doctor_checks.verdict(checks),
        finished=last is not None,
        trusted_pps=value.get("trusted_pps"),
        sweep_to_pps=value.get("sweep_to_pps"),
        mrr_pps=value.get("mrr_pps"),
        counts={
            s: sum(c.status == s for c in checks)
            for s in (doctor_checks.PASS, doctor_checks.WARN, doctor_checks.FAIL)
        },
    )


def stored_doctors(store: Store) -> Iterator[StoredDoctor]:
    """Every doctor run of a store with its checks, oldest first."""
    for exp in list(store.experiments(kinds=(KIND,))):
        found = stored_checks(store, exp.id)
        yield StoredDoctor(Path(store.path), exp, found, summary(found))
