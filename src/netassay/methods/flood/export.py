"""The floods for ``export`` (kind ``floods``): a row per flood with its maximum receive
rate and what only a flood keeps (whether the SUT was saturated, what the XDP router's
program forwarded), beside the flood's trial."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from netassay.methods.flood.store import KIND, mrr_pps
from netassay.store.db import Experiment, Store
from netassay.store.export import BOOL, FLOAT, INT, Column, Kind, per_experiment

COLUMNS = (
    Column("experiment_id", INT),
    Column("trial_id", INT, "the flood's trial (trials.trial_id)"),
    Column("run", INT, "the flood's number (its trial's repetition)"),
    Column("excluded", BOOL, "true: a measurement fault, left out of the MRR"),
    Column("duration_s", FLOAT),
    Column("sent", INT),
    Column("received", INT, "frames the sink received"),
    Column("offered_pps", FLOAT, "the rate the generator reached, unpaced"),
    Column("forwarded_pps", FLOAT, "what the SUT forwarded per second, as the flood "
           "measured it"),
    Column("mrr_pps", FLOAT, "the maximum receive rate: received / duration_s"),
    Column("saturated", BOOL, "true: the SUT lost frames (its MRR; false: a lower bound, "
           "the generator came first)"),
    Column("program_forwarded", INT, "frames the XDP router's program forwarded (null: "
           "another SUT)"),
)  # fmt: skip


def kinds(store: Store) -> list[Kind]:
    return [Kind("floods", "flood", lambda: (COLUMNS, _rows(store)))]


def _rows(store: Store) -> Iterator[list[tuple[Any, ...]]]:
    return per_experiment(store, (KIND,), lambda exp: _floods(store, exp))


def _floods(store: Store, exp: Experiment) -> Iterator[tuple[Any, ...]]:
    for t in store.trials(exp.id):
        f = t["counters"].get("flood") or {}
        yield (exp.id, t["id"], t["repetition"], t["excluded"] is not None, t["duration_s"],
               t["sent"], t["received"], f.get("offered_pps"), f.get("forwarded_pps"),
               mrr_pps(t), f.get("saturated"), f.get("program_forwarded"))  # fmt: skip
