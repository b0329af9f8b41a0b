"""An acceptance run's CPU samples for ``export`` (kind ``accept_cpu_cores``): a row per
sample and core, what ``accept_cpu.cores_json`` holds as columns (CSV leaves JSON out)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from netassay.methods.accept.store import KIND
from netassay.store.db import Experiment, Store
from netassay.store.export import FLOAT, INT, TEXT, Column, Kind, per_experiment

COLUMNS = (
    Column("experiment_id", INT),
    Column("run_id", INT, "the run (accept_runs.id)"),
    Column("seq", INT, "the sample's number in its run"),
    Column("t_s", FLOAT, "seconds into the run"),
    Column("cpu", TEXT, "the core (cpu0, cpu1, ...)"),
    Column("busy", FLOAT, "the share of the second the core was busy"),
    Column("idle", FLOAT),
)  # fmt: skip


def kinds(store: Store) -> list[Kind]:
    return [
        Kind(
            "accept_cpu_cores",
            "core of an acceptance run's CPU sample",
            lambda: (COLUMNS, per_experiment(store, (KIND,), lambda e: _rows(store, e))),
        )
    ]


def _rows(store: Store, exp: Experiment) -> Iterator[tuple[Any, ...]]:
    for run in store.rows("accept_runs", {"experiment_id": exp.id}, ("phase", "run_index"),
                          ("id",)):  # fmt: skip
        for s in store.rows("accept_cpu", {"run_id": run["id"]}, ("seq",)):
            cores = json.loads(s["cores_json"])
            for c in sorted(cores, key=lambda c: (len(c), c)):
                yield (exp.id, run["id"], s["seq"], s["t_s"], c, cores[c].get("busy"),
                       cores[c].get("idle"))  # fmt: skip
