"""Measurement-quality vocabulary shared by the trial engine, the importers and the analysis.

A trial whose warnings start with one of GENERATOR_WARNINGS was shaped by the
generator, not by the system under test: it is stored (never lost) but excluded from
the statistics, and the assessment says how many were excluded.
"""

from __future__ import annotations

from collections.abc import Iterable

RATE_TOLERANCE = 0.001  # achieved load off the offered load by more than 0.1% is flagged
GENERATOR_WARNINGS = ("generator limit", "rate overshoot", "generator stall")


def generator_trouble(warnings: Iterable[str]) -> list[str]:
    """The warnings that say the generator, not the SUT, shaped a trial."""
    return [w for w in warnings if w.startswith(GENERATOR_WARNINGS)]


def rate_kind(offered: float, achieved: float) -> str | None:
    """'generator limit' / 'rate overshoot' when off by more than the tolerance, else None."""
    err = achieved / offered - 1
    if abs(err) <= RATE_TOLERANCE:
        return None
    return "generator limit" if err < 0 else "rate overshoot"


# SQL condition selecting trials with a generator warning (served by the partial index
# trials_warned, since it also requires warnings_json != '[]').
SQL_GENERATOR_TROUBLE = (
    "warnings_json != '[]' AND ("
    + " OR ".join(f"warnings_json LIKE '%\"{w}%'" for w in GENERATOR_WARNINGS)
    + ")"
)
