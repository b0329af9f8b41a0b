"""Soaks in the store: an experiment of kind ``soak``, one trial per segment (load index
0, repetition = the segment's number), each written through ``Store.add_trial`` the
moment it ends. A segment's trial is a trial like a sweep's; its seconds are in
``counters["soak"]["per_second"]`` (``series``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.errors import UsageError
from netassay.methods.soak.series import segment_lengths, summary
from netassay.shared.directions import DIRECTIONS, LoadBothWays
from netassay.shared.imix_sizes import stored_mix
from netassay.shared.rates import rates_json
from netassay.store.db import Experiment, Store
from netassay.trial.bidirectional import CONVENTION

KIND = "soak"


@dataclass(frozen=True)
class StoredSoak:
    """A soak experiment as its store holds it: where, itself, its figures."""

    db: Path
    experiment: Experiment
    summary: dict[str, Any]


def planned(exp: Experiment) -> int:
    """How many segments the soak was planned as."""
    return len(segment_lengths(float(exp.config["duration_s"]), float(exp.config["segment_s"])))


def directions(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """A --bidirectional soak's totals per direction over its used segments (exact, as
    the whole run's): a sweep's one load, summed as ``shared.directions`` sums it."""
    row = LoadBothWays(0.0)
    for t in trials:
        if not t.get("excluded"):
            row.add(t["counters"]["bidirectional"])
    return {d: row.sides[d].to_json() for d in DIRECTIONS}


def soak_summary(store: Store, exp: Experiment) -> dict[str, Any]:
    c = exp.config
    trials = store.trials(exp.id)
    s = summary(trials, float(c["goal"]), planned(exp))
    if c.get("bidirectional"):  # the verdict is the aggregate's; each direction's beside it
        s["bidirectional"] = {"record": CONVENTION, **directions(trials)}
    keys = ("load", "rate_pps", "duration_s", "segment_s", "rate_from")
    mix, rates = stored_mix(store, exp.id), exp.metadata.get("rates")
    extras = {**({"imix": mix} if mix else {}), **({"rates": rates_json(rates)} if rates else {})}
    return {**{k: c.get(k) for k in keys}, **s, **extras}


def stored_soaks(store: Store) -> Iterator[StoredSoak]:
    """Every soak of a store with its summary, oldest first."""
    for exp in list(store.experiments(kinds=(KIND,))):
        yield StoredSoak(Path(store.path), exp, soak_summary(store, exp))


def unfinished(store: Store, experiment_id: int | None = None) -> Experiment | None:
    """The soak to resume: ``experiment_id`` (it must be an unfinished soak), else the
    newest soak with segments still to run."""
    soaks = list(store.experiments(kinds=(KIND,)))
    if experiment_id is not None:
        exp = store.experiment(experiment_id)
        if exp.id not in {e.id for e in soaks}:
            raise UsageError(
                f"experiment {experiment_id} in {store.path} is not a soak",
                f"it is a '{exp.kind}'",
                "give the id of a soak",
            )
        if len(store.done_trials(exp.id)) >= planned(exp):
            raise UsageError(
                f"experiment {experiment_id} is complete",
                "every segment is stored",
                "start a new soak without --resume",
            )
        return exp
    for exp in reversed(soaks):
        if len(store.done_trials(exp.id)) < planned(exp):
            return exp
    return None
