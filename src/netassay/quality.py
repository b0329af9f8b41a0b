"""Measurement-quality vocabulary shared by the trial engine, the importers and the analysis.

A trial carries warnings (plain sentences, stored with it). A warning that starts with
one of FAULTS says the measurement itself was spoiled (by the generator, a counter or an
interrupted run), so what the trial shows is not the SUT's behaviour: the trial is kept
in the store, named, and left out of the statistics; its loss is never counted against
the SUT. ``exclusion`` is the one definition of that rule: the store writes its result
into the ``excluded`` column of every trial, and every reader selects on that column.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

RATE_TOLERANCE = 0.001  # achieved load off the offered load by more than 0.1% is flagged

GENERATOR_LIMIT = "generator limit"
RATE_OVERSHOOT = "rate overshoot"
GENERATOR_STALL = "generator stall"
COUNTER_FAULT = "counter fault"
TRUNCATED = "truncated trial"
SINK_FAULT = "sink fault"

GENERATOR_WARNINGS = (GENERATOR_LIMIT, RATE_OVERSHOOT, GENERATOR_STALL)
FAULTS = (*GENERATOR_WARNINGS, COUNTER_FAULT, TRUNCATED, SINK_FAULT)

# A warning that names loss the SUT did not cause but that leaves the trial usable.
SINK_DROPS = "sink drops"


def faults(warnings: Iterable[str]) -> list[str]:
    """The warnings that make a trial a measurement fault."""
    return [w for w in warnings if w.startswith(FAULTS)]


def generator_trouble(warnings: Iterable[str]) -> list[str]:
    """The warnings that say the generator, not the SUT, shaped a trial (worth a retry)."""
    return [w for w in warnings if w.startswith(GENERATOR_WARNINGS)]


def exclusion(warnings: Iterable[str]) -> str | None:
    """Why a trial is left out of the statistics (its fault warnings), or None."""
    found = faults(warnings)
    return "; ".join(found) if found else None


def exclusion_of_json(warnings_json: str | None) -> str | None:
    """``exclusion`` of a stored ``warnings_json`` value (for the store's SQL function)."""
    if not warnings_json or warnings_json == "[]":
        return None
    try:
        warnings = json.loads(warnings_json)
    except ValueError:
        return None
    return exclusion(w for w in warnings if isinstance(w, str))


def rate_kind(offered: float, achieved: float) -> str | None:
    """'generator limit' / 'rate overshoot' when off by more than the tolerance, else None."""
    err = achieved / offered - 1
    if abs(err) <= RATE_TOLERANCE:
        return None
    return GENERATOR_LIMIT if err < 0 else RATE_OVERSHOOT
