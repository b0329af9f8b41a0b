"""Soaks in the store: an experiment of kind ``soak``, one trial per segment (load index
0, repetition = the segment's number), each written through ``Store.add_trial`` the
moment it ends. A segment's trial is a trial like a sweep's; its seconds are in
``counters["soak"]["per_second"]`` (``series``). A soak's summary is computed when it
is read (``SoakSummary``); its config, the stored search a %pdr load came from, the
mix and the rates as written stay the open JSON documents they are stored as."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from netassay.errors import UsageError
from netassay.methods.soak.series import SeriesSummary, segment_lengths, summary
from netassay.shared.directions import DIRECTIONS, LoadBothWays
from netassay.shared.imix_sizes import stored_mix
from netassay.shared.rates import rates_json
from netassay.store.db import Experiment, Store
from netassay.trial.bidirectional import CONVENTION

KIND = "soak"


@dataclass(frozen=True)
class SoakSummary(SeriesSummary):
    """A stored soak's figures: its series' (``series.summary``) and what it ran as its
    config holds it (the load as written, its rate, length and segments, the stored
    search a %pdr load came from, None: none); with --bidirectional each direction's
    totals beside the aggregate's (``directions``), with a mix its loads
    (``shared.imix_sizes``), a load written in bit/s or as a share what it became
    (``shared.rates``); None: not there."""

    load: str
    rate_pps: float
    duration_s: float
    segment_s: float
    rate_from: dict[str, Any] | None
    bidirectional: dict[str, Any] | None
    imix: dict[str, Any] | None
    rates: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """One JSON object, the events' beside the rest; no bidirectional, imix or rates
        key where the soak has none."""
        out = asdict(self)
        for k in ("bidirectional", "imix", "rates"):
            if out[k] is None:
                del out[k]
        return out


@dataclass(frozen=True)
class StoredSoak:
    """A soak experiment as its store holds it: where, itself, its figures."""

    db: Path
    experiment: Experiment
    summary: SoakSummary


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


def soak_summary(store: Store, exp: Experiment) -> SoakSummary:
    c = exp.config
    trials = store.trials(exp.id)
    s = summary(trials, float(c["goal"]), planned(exp))
    # the verdict is the aggregate's; each direction's beside it
    both = {"record": CONVENTION, **directions(trials)} if c.get("bidirectional") else None
    mix, rates = stored_mix(store, exp.id), exp.metadata.get("rates")
    series_figures: dict[str, Any] = {f.name: getattr(s, f.name) for f in fields(s)}
    return SoakSummary(
        **series_figures,
        load=c["load"],
        rate_pps=c["rate_pps"],
        duration_s=c["duration_s"],
        segment_s=c["segment_s"],
        rate_from=c.get("rate_from"),
        bidirectional=both,
        imix=mix or None,
        rates=rates_json(rates) if rates else None,
    )


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
