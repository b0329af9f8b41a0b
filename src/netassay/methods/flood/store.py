"""Floods in the store: an experiment of kind ``mrr`` (CSIT's maximum receive rate), one
trial per flood, written the moment the flood ends.

A flood's trial is a trial like a sweep's (``trial.record.TrialRecord``): what was sent,
what the sink received, the duration, the loss split by place (the same locations), the
CPU use per core; its offered load is the rate the generator reached unpaced. Its MRR is
what the sink received per second of the flood: the SUT's maximum forwarding rate when
the SUT lost frames (saturated), a lower bound when it did not (the generator came
first; the trial carries a warning that says so).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from typing import Any

from netassay.analysis.acceptance import ci95
from netassay.shared.flood_record import NOT_SATURATED, trial_of
from netassay.store.db import Experiment, Store
from netassay.trial.flood import Flood
from netassay.trial.record import TrialRecord

KIND = "mrr"


def record(store: Store, experiment_id: int, index: int, flood: Flood,
           run_id: int | None = None) -> TrialRecord:  # fmt: skip
    """Store flood number ``index`` of experiment ``experiment_id`` (committed now: a
    crash loses only the flood in progress); the trial stored."""
    rec = trial_of(index, flood, run_id)
    store.add_trial(experiment_id, rec)
    return rec


def mrr_pps(trial: dict[str, Any]) -> float | None:
    """One stored flood's maximum receive rate: what the sink received per second."""
    d = trial["duration_s"]
    return trial["received"] / d if d else None


def summary(trials: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An mrr experiment's figures over its stored floods (``Store.trials`` rows; a
    measurement fault left out): the MRR per run, their median, range and the Student t
    95% interval of their mean, the floods the SUT was not saturated by, the loss."""
    used = [t for t in trials if not t.get("excluded")]
    per_run = [v for t in used if (v := mrr_pps(t)) is not None]
    sent = sum(int(t["sent"]) for t in used)
    lost_at: dict[str, int] = {}
    for t in used:
        for k, v in (t.get("loss_location") or {}).items():
            lost_at[k] = lost_at.get(k, 0) + int(v)
    unsaturated = sum(
        any(w.startswith(NOT_SATURATED) for w in t.get("warnings") or []) for t in used
    )
    return {
        **({"bidirectional": directions(used)} if any(_both(t) for t in used) else {}),
        "runs": len(used),
        "excluded": len(trials) - len(used),
        "mrr_pps": statistics.median(per_run) if per_run else None,
        "mrr_min_pps": min(per_run, default=None),
        "mrr_max_pps": max(per_run, default=None),
        "mrr_ci95_pps": ci95(per_run),
        "mrr_per_run_pps": [round(v, 1) for v in per_run],
        "offered_pps": statistics.median(t["rate_pps"] for t in used) if used else None,
        "unsaturated": unsaturated,
        "lower_bound": bool(unsaturated),
        "loss_ratio": (sent - sum(int(t["received"]) for t in used)) / sent if sent else None,
        "loss_location": {k: v for k, v in sorted(lost_at.items()) if v},
    }


def _both(trial: dict[str, Any]) -> dict[str, Any] | None:
    return (trial.get("counters") or {}).get("bidirectional")


def directions(used: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A --bidirectional flood's directions over its runs: each one's receive rate per
    run (what its sink received per second) and their median, and its loss."""
    out: dict[str, Any] = {"convention": "aggregate of both directions (FD.io CSIT)"}
    for d in ("forward", "reverse"):
        sides = [(t, b[d]) for t in used if (b := _both(t))]
        per_run = [s["forwarded"] / t["duration_s"] for t, s in sides if t["duration_s"]]
        sent = sum(int(s["sent"]) for _, s in sides)
        lost = sent - sum(int(s["forwarded"]) for _, s in sides)
        out[d] = {
            "mrr_pps": statistics.median(per_run) if per_run else None,
            "mrr_per_run_pps": [round(v, 1) for v in per_run],
            "loss_ratio": lost / sent if sent else None,
        }
    return out


def mrr_experiments(store: Store) -> Iterator[Experiment]:
    return store.experiments(kinds=(KIND,))


def stored_floods(store: Store) -> Iterator[tuple[Experiment, dict[str, Any]]]:
    """Every mrr experiment of a store with its summary, oldest first."""
    for exp in list(mrr_experiments(store)):
        yield exp, summary(store.trials(exp.id))
