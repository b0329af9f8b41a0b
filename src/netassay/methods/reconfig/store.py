"""Reconfiguration tests in the store: an experiment of kind ``reconfig``, one trial per
change (load index 0, repetition = the trial), each a trial of the trial engine with
``counters["reconfig"]``: what the change did (its command, exit, seconds, when it
started and ended against the traffic, its output), the frames lost and the effective
blocked time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from netassay.analysis.reconfig import ReconfigBenchmark
from netassay.analysis.reconfig import summary as over_trials
from netassay.counters.loss import dataplane_counters
from netassay.store.db import Experiment, Store

KIND = "reconfig"


@dataclass(frozen=True)
class ReconfigTrial:
    """One stored trial of a reconfiguration test: the frames it lost, its effective
    blocked time, how long the change ran (None: it did not say), where the frames were
    lost, a data plane's own counters over it (``sut_counters``, ``testbed.dataplane``:
    empty where it has none) and why it is excluded (None: used)."""

    trial: int
    lost: int
    blocked_s: float
    change_s: float | None
    loss_location: dict[str, int]
    excluded: str | None
    sut_counters: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """As JSON: ``sut_counters`` only where a data plane counted any."""
        out = asdict(self)
        if not self.sut_counters:
            del out["sut_counters"]
        return out


@dataclass(frozen=True)
class ReconfigSummary(ReconfigBenchmark):
    """A stored reconfiguration test summed up: the blocked time over its used trials
    (``analysis.reconfig``), what it was run with (as its config holds it), the trials
    planned, stored and excluded, and each trial."""

    change: str | None
    undo: str | None
    rate: str | None
    rate_pps: float
    rate_from: dict[str, Any] | None  # the stored search (``methods.throughput``)
    duration_s: float
    at_s: float
    trials_planned: int
    trials_stored: int
    trials_excluded: int
    per_trial: list[ReconfigTrial]

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "per_trial": [t.to_json() for t in self.per_trial]}


@dataclass(frozen=True)
class StoredReconfig:
    db: Path
    experiment: Experiment
    summary: ReconfigSummary


def summary(store: Store, exp: Experiment) -> ReconfigSummary:
    c = exp.config
    trials = store.trials(exp.id)
    used = [t for t in trials if not t["excluded"]]
    rate = float(c["rate_pps"])
    keys = ("change", "undo", "rate", "rate_pps", "rate_from", "duration_s", "at_s")
    given: dict[str, Any] = {k: c.get(k) for k in keys}  # as configured (None: not)
    lost = [(t["sent"] - t["received"] - t["sink_dropped"], rate) for t in used]
    return ReconfigSummary(
        **given,
        **asdict(over_trials(lost)),
        trials_planned=int(c["trials"]),
        trials_stored=len(trials),
        trials_excluded=len(trials) - len(used),
        per_trial=[_per_trial(t) for t in trials],
    )


def _per_trial(t: dict[str, Any]) -> ReconfigTrial:
    """One trial of the test; a data plane's own counters over it (``sut_counters``,
    ``testbed.dataplane``) where it has any."""
    r = t["counters"]["reconfig"]
    return ReconfigTrial(
        trial=t["repetition"],
        lost=r["lost"],
        blocked_s=r["blocked_s"],
        change_s=r.get("seconds"),
        loss_location={k: v for k, v in t["loss_location"].items() if v},
        excluded=t["excluded"],
        sut_counters=dataplane_counters(t["counters"].get("deltas") or {}),
    )


def stored_reconfigs(store: Store) -> Iterator[StoredReconfig]:
    for exp in list(store.experiments(kinds=(KIND,))):
        yield StoredReconfig(Path(store.path), exp, summary(store, exp))
