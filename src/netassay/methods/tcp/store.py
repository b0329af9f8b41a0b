"""TCP cells in the store: an experiment of kind ``tcp`` whose config holds the request
and the path as built (its delay, loss and rate, and what delays it), and a table of its
transfers (``tcp_runs``: one row per transfer, committed the moment it ends, so a cell
cut short keeps what it measured).

The table's versions (``Store.ensure_tables``, each applied once, never edited): 1 the
transfers; 2 what each offered the delay line and the line's limit it ran under. A
store made before version 2 reads as it is (those columns None: no limit known) and
gains them when a cell is next written to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from netassay.analysis.tcp import TcpSummary, summary
from netassay.store.db import Experiment, Store
from netassay.store.rows import dumps
from netassay.units import utc_now

KIND = "tcp"
TABLE = "tcp_runs"
DDL = """
CREATE TABLE IF NOT EXISTS tcp_runs (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    idx INTEGER NOT NULL,
    ok BOOLEAN NOT NULL,
    fault TEXT,
    cc TEXT NOT NULL,
    duration_s REAL NOT NULL,
    throughput_bps REAL,
    sent_bytes INTEGER,
    retransmits INTEGER,
    mss_bytes INTEGER,
    rtt_path_s REAL,
    rtt_mean_s REAL,
    rtt_min_s REAL,
    window_bytes INTEGER,
    snd_wnd_max_bytes INTEGER,
    cwnd_max_bytes INTEGER,
    sndbuf_bytes INTEGER,
    rcvbuf_bytes INTEGER,
    mathis_bps REAL,
    window_bps REAL,
    path_bps REAL,
    binds TEXT,
    bound_bps REAL,
    random_dropped INTEGER,
    line_dropped INTEGER,
    line_late_max_ns INTEGER,
    cpu_json TEXT NOT NULL, -- busy share per core over the transfer
    ss_json TEXT NOT NULL, -- the client's ss -tin of the flow near its end
    line_json TEXT NOT NULL, -- the delay line's counters over the transfer
    iperf3_json TEXT NOT NULL, -- iperf3's client output, whole
    utc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tcp_runs_experiment ON tcp_runs (experiment_id, idx);
"""
# version 2: each transfer's data segments per second and the delay line's limit it ran
# under (testbed.linelimit; None: no line, or never measured on this host)
DDL_2 = """
ALTER TABLE tcp_runs ADD COLUMN offered_pps REAL;
ALTER TABLE tcp_runs ADD COLUMN line_limit_pps REAL;
ALTER TABLE tcp_runs ADD COLUMN line_limit_l1_bps REAL;
ALTER TABLE tcp_runs ADD COLUMN line_limit_from TEXT;
"""
VERSIONS = ((1, DDL), (2, DDL_2))
JSON_COLUMNS = ("cpu", "ss", "line", "iperf3")
# The client's ``ss -tin`` of the flow near its end: each key: value as ss printed it, a
# number where it is one (``run.parse_ss``; {}: not read)
SsSample = dict[str, int | float | str]
# The delay line's counters over a transfer per direction (``ab``, ``ba``: counter: value,
# ``run.line_delta``; {}: no line); the keys are the line's own (netassay-gen delay)
LineCounters = dict[str, dict[str, int | float]]


class TransferFigures(TypedDict):
    """What iperf3's client JSON says of a transfer (``run.parse_client``; None: it
    does not say)."""

    throughput_bps: float | None
    sent_bytes: int | None
    retransmits: int | None
    mss_bytes: int | None
    rtt_mean_s: float | None
    rtt_min_s: float | None
    snd_wnd_max_bytes: int | None
    cwnd_max_bytes: int | None
    sndbuf_bytes: int | None
    rcvbuf_bytes: int | None


class TcpRun(TransferFigures):
    """One transfer as ``tcp_runs`` holds it, a row (a dict: it is written and read as
    the row's columns, and a cell's JSON lists it as it is): its index, whether it
    measured TCP (``fault``: why not), its bounds (``analysis.tcp.Bounds``), what the
    path's ground truths and its delay line counted, the CPU per core, the client's ss
    and the line's counters (JSON columns). Not always there: what it offered the line
    and the line's limit (a store before version 2, an imported cell), iperf3's output
    (a run just measured; the store keeps it, a stored run is read without it) and the
    row's own columns (a stored run)."""

    index: int
    ok: bool
    fault: str | None
    cc: str
    duration_s: float
    rtt_path_s: float | None
    window_bytes: int | None
    mathis_bps: float | None
    window_bps: float | None
    path_bps: float | None
    binds: str | None
    bound_bps: float | None
    random_dropped: int | None
    line_dropped: int | None
    line_late_max_ns: int | None
    offered_pps: NotRequired[float | None]
    line_limit_pps: NotRequired[float | None]
    line_limit_l1_bps: NotRequired[float | None]
    line_limit_from: NotRequired[str | None]
    cpu: dict[str, float]  # busy share per core over the transfer
    ss: SsSample
    line: LineCounters
    iperf3: NotRequired[dict[str, Any]]  # iperf3's client JSON, whole: an open document


@dataclass(frozen=True)
class StoredTcp:
    """A TCP cell: where it is stored (None: not stored), its experiment, its config
    (an open JSON document: the request, the path as built, the line's limit; or what
    an import knew), its runs and their summary."""

    db: Path | None
    experiment: Experiment | None
    config: dict[str, Any]
    runs: list[TcpRun]
    summary: TcpSummary


def ensure(store: Store) -> None:
    for version, ddl in VERSIONS:
        store.ensure_tables(KIND, version, ddl)


def start(store: Store, key: str, label: str, config: dict[str, Any],
          environment: dict[str, Any], source: str = "netassay tcp") -> int:  # fmt: skip
    """The cell's experiment, stored before its first transfer; its id."""
    ensure(store)
    with store.transaction() as w:
        return w.experiment(key=key, kind=KIND, source=source, label=label, config=config,
                            environment=environment)  # fmt: skip


def record(store: Store, experiment_id: int, run: TcpRun) -> None:
    """One transfer, committed now."""
    with store.transaction() as w:
        w.row(TABLE, _row(experiment_id, run))


def imported(store: Store, key: str, label: str, config: dict[str, Any],
             runs: list[TcpRun], source: str) -> int:  # fmt: skip
    """An imported cell with all its transfers, in one transaction (a full disk leaves
    none of it, so the same import run again stores it whole); its id. ``AlreadyStored``
    when another netassay stored it after this one looked."""
    ensure(store)
    with store.transaction() as w:
        exp_id = w.experiment(key=key, kind=KIND, source=source, label=label, config=config)
        for run in runs:
            w.row(TABLE, _row(exp_id, run))
    return exp_id


def _row(experiment_id: int, run: TcpRun) -> dict[str, Any]:
    row = {("idx" if k == "index" else k): v for k, v in run.items() if k not in JSON_COLUMNS}
    row.update({f"{k}_json": dumps(run.get(k) or {}) for k in JSON_COLUMNS})
    return {"experiment_id": experiment_id, **row, "utc": utc_now()}


def stored_runs(store: Store, experiment_id: int) -> list[TcpRun]:
    """A cell's transfers as stored (without iperf3's output), by index."""
    out = []
    for r in store.rows(TABLE, {"experiment_id": experiment_id}, ("idx",)):
        d = {k: v for k, v in r.items() if not k.endswith("_json")}
        d["index"] = d.pop("idx")
        d["ok"] = bool(d["ok"])
        d.update({k: json.loads(r[f"{k}_json"]) for k in ("cpu", "ss", "line")})
        out.append(cast(TcpRun, d))  # the row's columns are TcpRun's keys
    return out


def stored_cells(store: Store) -> Iterator[StoredTcp]:
    """Every TCP cell of a store with its runs and summary, oldest first."""
    for exp in list(store.experiments(kinds=(KIND,))):
        runs = stored_runs(store, exp.id)
        yield StoredTcp(Path(store.path), exp, exp.config, runs, summary(runs))
