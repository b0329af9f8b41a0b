"""Batching runs in the store: an experiment of kind ``batching``, one trial per run
(its probes sent and answered) and one row of ``batching_runs`` with what the run showed
(gaps, bursts, waits), written together in one transaction when the run ends."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from netassay.methods.batching.gaps import RunFigures
from netassay.store.db import Experiment, Store
from netassay.store.rows import dumps
from netassay.trial.record import TrialRecord

KIND = "batching"
SOURCE = "netassay batching"
TABLE = "batching_runs"
DDL = """
CREATE TABLE IF NOT EXISTS batching_runs (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    run INTEGER NOT NULL,
    probes INTEGER NOT NULL,
    seen INTEGER NOT NULL,
    spacing_ns REAL NOT NULL,
    gap_ns REAL NOT NULL,
    share_in_bursts REAL NOT NULL,
    sender_share_in_bursts REAL NOT NULL,
    burst_len_mean REAL NOT NULL,
    period_ns REAL,
    gap_error_p50_ns REAL,
    wait_p50_ns REAL,
    wait_p99_ns REAL,
    summary_json TEXT NOT NULL -- the run's figures (methods.batching.gaps.analyse)
);
CREATE INDEX IF NOT EXISTS batching_runs_experiment ON batching_runs (experiment_id, run);
"""
COLUMNS = (
    "probes", "seen", "spacing_ns", "gap_ns", "share_in_bursts", "sender_share_in_bursts",
    "burst_len_mean", "period_ns", "gap_error_p50_ns", "wait_p50_ns", "wait_p99_ns",
)  # fmt: skip


@dataclass(frozen=True)
class BatchingSocket:
    """The echo socket's figures of an experiment (--probe udp): the probes stamped
    there, each figure of a run's (gaps.at_socket) as the median over the runs (None:
    no run has it),
    the burst lengths summed and the datagrams per NAPI id summed (None: no run has
    them, stored before --busy-poll existed)."""

    socket_seen: int
    socket_share_in_bursts: float | None
    socket_burst_len_mean: float | None
    socket_burst_len_p50: float | None
    socket_period_ns: float | None
    socket_gap_p50_ns: float | None
    socket_gap_error_p50_ns: float | None
    socket_gap_error_p99_ns: float | None
    socket_wait_p1_ns: float | None
    socket_wait_p50_ns: float | None
    socket_wait_p99_ns: float | None
    socket_wait_max_ns: float | None
    socket_burst_lengths: dict[str, int]
    socket_napi_ids: dict[str, int] | None = None


@dataclass(frozen=True)
class BatchingSummary:
    """An experiment's figures (``summary``): its settings as its config holds them
    (None: not there), the sent spacing, the runs, probes sent and seen, each figure of
    a run's (gaps.RunFigures) as the median over the runs (None: no run has it), the
    burst lengths summed and the
    echo socket's figures (None: not --probe udp)."""

    path: str | None
    rate_pps: float | None
    count: int | None
    runs: int | None
    size_bytes: int | None
    gro: str | None
    flush_ns: int | None
    defer: int | None
    threaded: str | None
    gap_ns: float | None
    cpus: str | None
    xdp: str
    probe: str
    busy_poll_us: int
    spacing_ns: float
    runs_stored: int
    probes: int
    seen: int
    share_in_bursts: float | None
    sender_share_in_bursts: float | None
    burst_len_mean: float | None
    burst_len_p50: float | None
    period_ns: float | None
    receiver_gap_p50_ns: float | None
    sender_gap_p50_ns: float | None
    gap_error_p50_ns: float | None
    gap_error_p99_ns: float | None
    wait_p50_ns: float | None
    wait_p99_ns: float | None
    wait_max_ns: float | None
    burst_lengths: dict[str, int]
    socket: BatchingSocket | None = field(default=None)

    def to_json(self) -> dict[str, Any]:
        """One JSON object, the socket's figures beside the rest (and no socket_napi_ids
        where no run has them)."""
        out = asdict(self)
        socket = out.pop("socket")
        if socket is not None:
            if socket["socket_napi_ids"] is None:
                del socket["socket_napi_ids"]
            out.update(socket)
        return out


@dataclass(frozen=True)
class StoredBatching:
    """A batching experiment as its store holds it: where, itself, its runs, a summary."""

    db: Path
    experiment: Experiment
    runs: list[RunFigures]  # each run's figures (gaps.analyse), as stored
    summary: BatchingSummary


def ensure(store: Store) -> None:
    store.ensure_tables(KIND, 1, DDL)


def add_run(store: Store, experiment_id: int, trial: TrialRecord, run: RunFigures) -> int:
    """One run: its trial and its batching_runs row, in one transaction."""
    with store.transaction() as w:
        trial_id = w.trial(experiment_id, trial)
        w.row(TABLE, {
            "experiment_id": experiment_id, "trial_id": trial_id, "run": trial.repetition,
            **{c: run.get(c) for c in COLUMNS}, "summary_json": dumps(run),
        })  # fmt: skip
    return trial_id


def runs(store: Store, experiment_id: int) -> list[RunFigures]:
    rows = store.rows(TABLE, {"experiment_id": experiment_id}, ("run",))
    # (summary_json is what add_run wrote: a run's figures, as gaps.analyse gave them)
    return [cast(RunFigures, json.loads(r["summary_json"])) for r in rows]


def _median(values: Iterable[float | None]) -> float | None:
    """The median of the runs that have the figure (None: none has it)."""
    v = [float(x) for x in values if x is not None]
    return float(np.median(v)) if v else None


def _summed(counts: Iterable[dict[str, int] | None]) -> dict[str, int]:
    """Counts per key (a burst length, a NAPI id) summed over the runs, by the key's
    number."""
    lengths: dict[str, int] = {}
    for c in counts:
        for k, n in (c or {}).items():
            lengths[k] = lengths.get(k, 0) + int(n)
    return dict(sorted(lengths.items(), key=lambda kv: int(kv[0])))


def _socket(found: Sequence[RunFigures]) -> BatchingSocket | None:
    """The socket's figures (--probe udp), or None when no run has them."""
    if not any("socket_seen" in r for r in found):
        return None
    napi = any("socket_napi_ids" in r for r in found)  # (none before --busy-poll existed)
    return BatchingSocket(
        socket_seen=sum(int(r.get("socket_seen", 0)) for r in found),
        socket_share_in_bursts=_median(r.get("socket_share_in_bursts") for r in found),
        socket_burst_len_mean=_median(r.get("socket_burst_len_mean") for r in found),
        socket_burst_len_p50=_median(r.get("socket_burst_len_p50") for r in found),
        socket_period_ns=_median(r.get("socket_period_ns") for r in found),
        socket_gap_p50_ns=_median(r.get("socket_gap_p50_ns") for r in found),
        socket_gap_error_p50_ns=_median(r.get("socket_gap_error_p50_ns") for r in found),
        socket_gap_error_p99_ns=_median(r.get("socket_gap_error_p99_ns") for r in found),
        socket_wait_p1_ns=_median(r.get("socket_wait_p1_ns") for r in found),
        socket_wait_p50_ns=_median(r.get("socket_wait_p50_ns") for r in found),
        socket_wait_p99_ns=_median(r.get("socket_wait_p99_ns") for r in found),
        socket_wait_max_ns=_median(r.get("socket_wait_max_ns") for r in found),
        socket_burst_lengths=_summed(r.get("socket_burst_lengths") for r in found),
        socket_napi_ids=_summed(r.get("socket_napi_ids") for r in found) if napi else None,
    )


def summary(config: dict[str, Any], found: Sequence[RunFigures]) -> BatchingSummary:
    """An experiment's figures: each the median over its runs; burst lengths summed.
    ``config`` is the experiment's (an open JSON document: ``run.Batching.factors``)."""
    keys = ("path", "rate_pps", "count", "runs", "size_bytes", "gro", "flush_ns", "defer",
            "threaded", "gap_ns", "cpus")  # fmt: skip
    given: dict[str, Any] = {k: config.get(k) for k in keys}  # as configured (None: not)
    return BatchingSummary(
        **given,
        xdp=config.get("xdp", "off"),  # (none before the knob existed)
        probe=config.get("probe", "icmp"),  # (icmp only before --probe existed)
        busy_poll_us=config.get("busy_poll_us", 0),  # (none before --busy-poll existed)
        spacing_ns=1e9 / float(config["rate_pps"]),
        runs_stored=len(found),
        probes=sum(int(r["probes"]) for r in found),
        seen=sum(int(r["seen"]) for r in found),
        share_in_bursts=_median(r["share_in_bursts"] for r in found),
        sender_share_in_bursts=_median(r["sender_share_in_bursts"] for r in found),
        burst_len_mean=_median(r["burst_len_mean"] for r in found),
        burst_len_p50=_median(r["burst_len_p50"] for r in found),
        period_ns=_median(r["period_ns"] for r in found),
        receiver_gap_p50_ns=_median(r["receiver_gap_p50_ns"] for r in found),
        sender_gap_p50_ns=_median(r["sender_gap_p50_ns"] for r in found),
        gap_error_p50_ns=_median(r["gap_error_p50_ns"] for r in found),
        gap_error_p99_ns=_median(r["gap_error_p99_ns"] for r in found),
        wait_p50_ns=_median(r["wait_p50_ns"] for r in found),
        wait_p99_ns=_median(r["wait_p99_ns"] for r in found),
        wait_max_ns=_median(r["wait_max_ns"] for r in found),
        burst_lengths=_summed(r["burst_lengths"] for r in found),
        socket=_socket(found),
    )


def stored(store: Store, exp: Experiment) -> StoredBatching:
    found = runs(store, exp.id)
    return StoredBatching(Path(store.path), exp, found, summary(exp.config, found))


def stored_batchings(store: Store) -> Iterator[StoredBatching]:
    """Every batching experiment of a store with its runs, oldest first."""
    for exp in list(store.experiments(kinds=(KIND,))):
        yield stored(store, exp)
