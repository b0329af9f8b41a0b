"""A soak's seconds for ``export`` (kind ``soak_seconds``): a row per second of every
segment, as the sampler read the sink (``series.per_second``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from netassay.methods.soak.series import Second
from netassay.methods.soak.store import KIND
from netassay.store.db import Experiment, Store
from netassay.store.export import BOOL, FLOAT, INT, JSON, Column, Kind, per_experiment
from netassay.store.rows import dumps

COLUMNS = (
    Column("experiment_id", INT),
    Column("trial_id", INT, "the segment's trial (trials.trial_id)"),
    Column("segment", INT, "the segment's number (its trial's repetition)"),
    Column("excluded", BOOL, "true: the segment is a measurement fault (a gap)"),
    Column("t_s", FLOAT, "the second's start, seconds into the soak"),
    Column("dt_s", FLOAT, "its length between two reads of the sink"),
    Column("offered", FLOAT, "frames offered in it (the generator's schedule)"),
    Column("received", INT, "frames the sink counted in it"),
    Column("loss_est", FLOAT, "frames lost in it: the segment's exact loss split "
           "across its seconds where the count fell short of the offer (an estimate)"),
    Column("cpu_busy", JSON, "busy share per core over the second"),
)  # fmt: skip


def kinds(store: Store) -> list[Kind]:
    return [Kind("soak_seconds", "second of a soak", lambda: (COLUMNS, _rows(store)))]


def _rows(store: Store) -> Iterator[list[tuple[Any, ...]]]:
    return per_experiment(store, (KIND,), lambda exp: _seconds(store, exp))


def _seconds(store: Store, exp: Experiment) -> Iterator[tuple[Any, ...]]:
    for t in store.trials(exp.id):
        seconds: list[Second] = (t["counters"].get("soak") or {}).get("per_second", [])
        for s in seconds:
            yield (exp.id, t["id"], t["repetition"], t["excluded"] is not None, s.get("t"),
                   s.get("dt"), s.get("offered"), s.get("received"), s.get("loss_est"),
                   dumps(s.get("cpu_busy") or {}))  # fmt: skip
