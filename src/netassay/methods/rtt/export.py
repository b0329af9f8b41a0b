"""An rtt run's figures for ``export``: ``rtt_segments``, a row per run and segment (its
histogram's count and percentiles, as the run's summary keeps them), and
``rtt_probes``, a row per probe of the sample of whole probes a run keeps (at most
``trial.RAW_LIMIT``): its times at each capture point and its own segments, computed as
the run computed them (``segments.compute``). An import (``import ping``) keeps no
probes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from netassay.counters.capture import POINT_NAMES
from netassay.methods.rtt import store as rtt_store
from netassay.methods.rtt.segments import ALL, compute
from netassay.methods.rtt.trial import SAMPLE_COLUMNS
from netassay.store.db import Experiment, Store
from netassay.store.export import BOOL, FLOAT, INT, TEXT, Column, Kind, per_experiment

_RUN = (
    Column("experiment_id", INT),
    Column("trial_id", INT, "the run's trial (trials.trial_id, rtt_runs.trial_id)"),
    Column("run", INT, "the run's number (its trial's repetition)"),
    Column("excluded", BOOL, "true: the run is a measurement fault"),
)
STATS = ("n", "negative", "min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns",
         "mean_ns", "std_ns")  # fmt: skip
SEGMENT_COLUMNS = (
    *_RUN,
    Column("segment", TEXT, "rtt, overhead, wire, response, their parts, and the "
           "application's: latency, latency_sent, send_delay, app, latency_kernel"),
    *(Column(s, INT if s in ("n", "negative") else FLOAT) for s in STATS),
)  # fmt: skip
TIMES = tuple(c for c in SAMPLE_COLUMNS if c != "seq")
PROBE_COLUMNS = (
    *_RUN,
    Column("seq", INT, "the probe's sequence number"),
    *(Column(f"{c}_ns", INT, "time on the host's clock (null: not sent, not seen, not "
             "answered)") for c in TIMES),
    *(Column(f"{s}_ns", INT, "the probe's segment (null: a time it needs is missing)")
      for s in ALL),
)  # fmt: skip


def kinds(store: Store) -> list[Kind]:
    return [
        Kind("rtt_segments", "segment of an rtt run",
             lambda: (SEGMENT_COLUMNS, per_experiment(store, (rtt_store.KIND,), _segments(store)))),
        Kind("rtt_probes", "probe kept whole by an rtt run",
             lambda: (PROBE_COLUMNS, per_experiment(store, (rtt_store.KIND,), _probes(store)))),
    ]  # fmt: skip


def _segments(store: Store) -> Any:
    def rows(exp: Experiment) -> Iterator[tuple[Any, ...]]:
        for r in rtt_store.runs(store, exp.id, blobs=False):
            run = (exp.id, r.trial_id, r.repetition, r.excluded is not None)
            for name, s in sorted((r.summary.get("segments") or {}).items()):
                yield (*run, name, *(s.get(k) for k in STATS))

    return rows


def _probes(store: Store) -> Any:
    def rows(exp: Experiment) -> Iterator[tuple[Any, ...]]:
        for r in rtt_store.runs(store, exp.id):
            cols, arr = r.probes()
            if not len(arr):
                continue
            run = (exp.id, r.trial_id, r.repetition, r.excluded is not None)
            yield from ((*run, *p) for p in probe_rows(cols, arr))

    return rows


def probe_rows(cols: list[str], arr: np.ndarray) -> list[tuple[Any, ...]]:
    """The sampled probes (``unpack_probes``): seq, each time (0 as null), each segment
    (null where the run's computation leaves the probe out)."""
    n = len(arr)
    t = {c: arr[:, i] for i, c in enumerate(cols)}
    zero = np.zeros(n, dtype=np.uint64)
    tx, rx, sched = t.get("tx", zero), t.get("rx", zero), t.get("sched", zero)
    points = {p: t[p] for p in POINT_NAMES} if all(p in t for p in POINT_NAMES) else None
    segs, _ = compute(sched, tx, rx, points)
    answered = (rx > 0) & (tx > 0)
    seen = answered.copy()
    for p in (points or {}).values():
        seen &= p > 0
    masks = {"latency": answered, "latency_sent": answered, "send_delay": tx > 0}
    full: dict[str, list[Any]] = {}
    for name in ALL:
        col: list[Any] = [None] * n
        if name in segs:
            mask = masks.get(name, seen)
            for i, v in zip(np.flatnonzero(mask).tolist(), segs[name].tolist(), strict=True):
                col[i] = v
        full[name] = col
    seq = t.get("seq", zero).tolist()
    times = [[int(v) or None for v in t.get(c, zero).tolist()] for c in TIMES]
    return [(seq[i], *(ts[i] for ts in times), *(full[s][i] for s in ALL)) for i in range(n)]
