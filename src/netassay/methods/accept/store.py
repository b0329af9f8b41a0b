"""Acceptance tests in the store (schema 5): an experiment of kind ``accept`` whose
config holds the contract, the layer, the scenario and the embedded link's ground
truths, and whose runs (``accept_runs``), receiver intervals (``accept_intervals``)
and CPU samples (``accept_cpu``) are written with it in one transaction.

A test is stored once under its key: saving it again returns the stored experiment
and writes nothing (this is what makes re-importing the same files idempotent).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from typing import Any

from netassay.analysis.acceptance import check_layer
from netassay.errors import AlreadyStored, InputError
from netassay.store.db import Experiment, Store
from netassay.store.rows import dumps
from netassay.trial.accept import PHASES, SIDES, AcceptRun, AcceptTest, CpuSample, Interval
from netassay.units import utc_now

KIND = "accept"

# AcceptRun fields with a column of their own; every other field goes to extra_json
_COLUMNS = (
    "tool", "tool_version", "offered_bps", "datagram_bytes", "ip_version", "duration_s",
    "sent_packets", "received_packets", "lost_packets", "reordered", "duplicates",
    "received_bytes", "received_s", "sent_bytes", "intervals_side",
)  # fmt: skip
_SEPARATE = ("index", "phase", "intervals", "cpu", "host", "raw", *_COLUMNS)
_EXTRA = tuple(f.name for f in dataclasses.fields(AcceptRun) if f.name not in _SEPARATE)


def validate(test: AcceptTest) -> None:
    """What a test must get right before anything of it is written (InputError)."""
    check_layer(test.layer)
    if test.contract_bps is not None and not test.contract_bps > 0:
        raise InputError(f"{test.name}: contract {test.contract_bps}", "must be > 0", "")
    seen = set()
    for run in [*test.ramp, *test.runs]:
        where = f"{test.name}: run {run.index} ({run.phase})"
        if run.phase not in PHASES:
            raise InputError(where, f"phase must be one of {', '.join(PHASES)}", "")
        if run.intervals_side not in SIDES:
            raise InputError(where, f"intervals side must be one of {', '.join(SIDES)}", "")
        if (run.phase, run.index) in seen:
            raise InputError(where, "the same run index twice in one phase", "")
        seen.add((run.phase, run.index))
        if not run.duration_s > 0:
            raise InputError(where, f"duration {run.duration_s} s", "must be > 0")
        if run.ip_version not in (4, 6):
            raise InputError(where, f"IP version {run.ip_version}", "must be 4 or 6")


def _config(test: AcceptTest) -> dict[str, Any]:
    return {
        "name": test.name,
        "contract_bps": test.contract_bps,
        "layer": test.layer,
        "scenario": test.scenario,
        "link": test.link,
    }


def store_accept_test(store: Store, test: AcceptTest) -> tuple[int, bool]:
    """Store a test and all its runs in one transaction; (experiment id, newly stored).

    A test whose key is already stored is left as it is (nothing is written)."""
    validate(test)
    key = test.key or f"accept-{uuid.uuid4().hex}"
    found = store.find_experiment(key)
    if found is not None:
        return found.id, False
    try:
        return _write(store, test, key), True
    except AlreadyStored as stored:  # by another netassay, after this one looked
        return stored.experiment_id, False


def _write(store: Store, test: AcceptTest, key: str) -> int:
    now = utc_now()
    with store.transaction() as w:
        exp_id = w.experiment(
            key=key, kind=KIND, source=test.source, label=test.label or test.name,
            config=_config(test), metadata=test.metadata,
        )  # fmt: skip
        for run in [*test.ramp, *test.runs]:
            run_id = w.row("accept_runs", _run_row(exp_id, run, now))
            w.rows("accept_intervals", (
                {"run_id": run_id, "seq": i, "start_s": iv.start_s, "end_s": iv.end_s,
                 "bytes": int(iv.bytes), "packets": iv.packets, "lost": iv.lost}
                for i, iv in enumerate(run.intervals)
            ))  # fmt: skip
            w.rows("accept_cpu", (
                {"run_id": run_id, "seq": i, "t_s": c.t_s,
                 "cores_json": json.dumps(c.cores, sort_keys=True)}
                for i, c in enumerate(run.cpu)
            ))  # fmt: skip
    return exp_id


def _run_row(exp_id: int, run: AcceptRun, now: str) -> dict[str, Any]:
    extra = {k: getattr(run, k) for k in _EXTRA}
    extra["started_utc"] = run.started_utc or now
    return {
        "experiment_id": exp_id, "phase": run.phase, "run_index": run.index,
        **{c: getattr(run, c) for c in _COLUMNS}, "host_json": dumps(run.host),
        "extra_json": json.dumps(extra, sort_keys=True, default=str), "raw": run.raw,
    }  # fmt: skip


def save_accept_test(store: Store, test: AcceptTest) -> int:
    """Store a test (one transaction, kind "accept"); its experiment id."""
    return store_accept_test(store, test)[0]


def accept_experiments(store: Store) -> Iterator[Experiment]:
    return store.experiments(kinds=(KIND,))


def load_accept_test(store: Store, exp: Experiment, *, raw: bool = False) -> AcceptTest:
    """One stored test with its runs (the tools' verbatim output only when ``raw``)."""
    cfg = exp.config
    cols = ("id", "phase", "run_index", *_COLUMNS, "host_json", "extra_json")
    found = store.rows(
        "accept_runs", {"experiment_id": exp.id}, ("id",), (*cols, "raw") if raw else cols
    )
    found.sort(key=lambda r: (r["phase"] == "sustained", r["run_index"]))
    ramp: list[AcceptRun] = []
    runs: list[AcceptRun] = []
    for row in found:
        run = _run_of(store, row)
        (ramp if row["phase"] == "ramp" else runs).append(run)
    return AcceptTest(
        source=exp.source,
        name=cfg.get("name", exp.label),
        contract_bps=cfg.get("contract_bps"),
        layer=cfg.get("layer", "payload"),
        runs=runs,
        ramp=ramp,
        scenario=cfg.get("scenario") or {},
        link=cfg.get("link") or {},
        key=exp.key,
        label=exp.label,
        metadata={**exp.metadata, "experiment_id": exp.id},
    )


def _run_of(store: Store, row: dict[str, Any]) -> AcceptRun:
    """A stored run with its intervals and CPU samples."""
    extra = {k: v for k, v in json.loads(row["extra_json"]).items() if k in _EXTRA}
    where = {"run_id": row["id"]}
    return AcceptRun(
        index=row["run_index"], phase=row["phase"], **{c: row[c] for c in _COLUMNS},
        host=json.loads(row["host_json"]), raw=row.get("raw"), **extra,
        intervals=[
            Interval(r["start_s"], r["end_s"], r["bytes"], r["packets"], r["lost"])
            for r in store.rows("accept_intervals", where, ("seq",))
        ],
        cpu=[
            CpuSample(r["t_s"], json.loads(r["cores_json"]))
            for r in store.rows("accept_cpu", where, ("seq",))
        ],
    )  # fmt: skip


def load_accept_tests(store: Store, *, raw: bool = False) -> Iterator[AcceptTest]:
    """Every acceptance test of a store, oldest first."""
    for exp in list(accept_experiments(store)):
        yield load_accept_test(store, exp, raw=raw)
