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
from netassay.errors import InputError
from netassay.store.db import Experiment, Store, _dumps
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
_INSERT_RUN = (
    "INSERT INTO accept_runs (experiment_id, phase, run_index, "
    + ", ".join(_COLUMNS)
    + ", host_json, extra_json, raw) VALUES ("
    + ", ".join("?" * (len(_COLUMNS) + 6))
    + ")"
)


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
    now = utc_now()
    with store._transaction() as conn:
        exp_id = store._insert_experiment(
            key, KIND, test.source, test.label or test.name, _config(test),
            test.metadata, None,
        )  # fmt: skip
        for run in [*test.ramp, *test.runs]:
            extra = {k: getattr(run, k) for k in _EXTRA}
            extra["started_utc"] = run.started_utc or now
            cur = conn.execute(
                _INSERT_RUN,
                (
                    exp_id, run.phase, run.index, *(getattr(run, c) for c in _COLUMNS),
                    _dumps(run.host), json.dumps(extra, sort_keys=True, default=str), run.raw,
                ),
            )  # fmt: skip
            run_id = int(cur.lastrowid)
            conn.executemany(
                "INSERT INTO accept_intervals VALUES (?,?,?,?,?,?,?)",
                [
                    (run_id, i, iv.start_s, iv.end_s, int(iv.bytes), iv.packets, iv.lost)
                    for i, iv in enumerate(run.intervals)
                ],
            )
            conn.executemany(
                "INSERT INTO accept_cpu VALUES (?,?,?,?)",
                [
                    (run_id, i, s.t_s, json.dumps(s.cores, sort_keys=True))
                    for i, s in enumerate(run.cpu)
                ],
            )
    return exp_id, True


def save_accept_test(store: Store, test: AcceptTest) -> int:
    """Store a test (one transaction, kind "accept"); its experiment id."""
    return store_accept_test(store, test)[0]


def accept_experiments(store: Store) -> Iterator[Experiment]:
    for exp in store.experiments():
        if exp.kind == KIND:
            yield exp


def load_accept_test(store: Store, exp: Experiment, *, raw: bool = False) -> AcceptTest:
    """One stored test with its runs (the tools' verbatim output only when ``raw``)."""
    cfg = exp.config
    cols = ", ".join(_COLUMNS)
    cur = store.conn.execute(
        f"SELECT id, phase, run_index, {cols}, host_json, extra_json, "
        f"{'raw' if raw else 'NULL'} FROM accept_runs WHERE experiment_id = ?"
        " ORDER BY phase = 'sustained', run_index",
        (exp.id,),
    )
    ramp: list[AcceptRun] = []
    runs: list[AcceptRun] = []
    for row in cur.fetchall():
        run_id, phase, index = row[0], row[1], row[2]
        values = dict(zip(_COLUMNS, row[3 : 3 + len(_COLUMNS)], strict=True))
        host, extra, text = row[3 + len(_COLUMNS) :]
        extra = {k: v for k, v in json.loads(extra).items() if k in _EXTRA}
        run = AcceptRun(
            index=index, phase=phase, **values, host=json.loads(host), raw=text, **extra,
            intervals=[
                Interval(a, b, c, d, e)
                for a, b, c, d, e in store.conn.execute(
                    "SELECT start_s, end_s, bytes, packets, lost FROM accept_intervals"
                    " WHERE run_id = ? ORDER BY seq",
                    (run_id,),
                )
            ],
            cpu=[
                CpuSample(t, json.loads(c))
                for t, c in store.conn.execute(
                    "SELECT t_s, cores_json FROM accept_cpu WHERE run_id = ? ORDER BY seq",
                    (run_id,),
                )
            ],
        )  # fmt: skip
        (ramp if phase == "ramp" else runs).append(run)
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


def load_accept_tests(store: Store, *, raw: bool = False) -> Iterator[AcceptTest]:
    """Every acceptance test of a store, oldest first."""
    for exp in list(accept_experiments(store)):
        yield load_accept_test(store, exp, raw=raw)
