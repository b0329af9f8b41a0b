"""Reconfiguration tests in the store: an experiment of kind ``reconfig``, one trial per
change (load index 0, repetition = the trial), each a trial of the trial engine with
``counters["reconfig"]``: what the change did (its command, exit, seconds, when it
started and ended against the traffic, its output), the frames lost and the effective
blocked time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.analysis.reconfig import summary as over_trials
from netassay.counters.loss import dataplane_counters
from netassay.store.db import Experiment, Store

KIND = "reconfig"


@dataclass(frozen=True)
class StoredReconfig:
    db: Path
    experiment: Experiment
    summary: dict[str, Any]


def summary(store: Store, exp: Experiment) -> dict[str, Any]:
    c = exp.config
    trials = store.trials(exp.id)
    used = [t for t in trials if not t["excluded"]]
    rate = float(c["rate_pps"])
    keys = ("change", "undo", "rate", "rate_pps", "rate_from", "duration_s", "at_s")
    return {
        **{k: c.get(k) for k in keys},
        **over_trials([(t["sent"] - t["received"] - t["sink_dropped"], rate) for t in used]),
        "trials_planned": int(c["trials"]),
        "trials_stored": len(trials),
        "trials_excluded": len(trials) - len(used),
        "per_trial": [_per_trial(t) for t in trials],
    }


def _per_trial(t: dict[str, Any]) -> dict[str, Any]:
    """One trial of the test; a data plane's own counters over it (``sut_counters``,
    ``testbed.dataplane``) where it has any."""
    own = dataplane_counters(t["counters"].get("deltas") or {})
    return {
        "trial": t["repetition"],
        "lost": t["counters"]["reconfig"]["lost"],
        "blocked_s": t["counters"]["reconfig"]["blocked_s"],
        "change_s": t["counters"]["reconfig"].get("seconds"),
        "loss_location": {k: v for k, v in t["loss_location"].items() if v},
        **({"sut_counters": own} if own else {}),
        "excluded": t["excluded"],
    }


def stored_reconfigs(store: Store) -> Iterator[StoredReconfig]:
    for exp in list(store.experiments(kinds=(KIND,))):
        yield StoredReconfig(Path(store.path), exp, summary(store, exp))
