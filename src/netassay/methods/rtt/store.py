"""RTT runs in the store: each run is a trial of an experiment of kind ``rtt`` plus a row
of ``rtt_runs`` (schema 3) with its summary, its segment histograms and a bounded sample
of raw probes, written together in one transaction when the run ends."""

from __future__ import annotations

import io
import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from netassay.hist import Hist, HistSummary
from netassay.store.db import Experiment, Store
from netassay.store.rows import dumps
from netassay.trial.record import TrialRecord

KIND = "rtt"
SOURCE = "netassay rtt"


class RunSummary(TypedDict):
    """What every stored run's summary holds (``summary_json``, a dict: it is stored as
    it is and read back by key): its counts and each segment's statistics by name
    (``Hist.summary``: n, min_ns .. max_ns, mean_ns, std_ns, negative). netassay's runs
    (``trial.ProbeRunSummary``), a peer tool's (``traffic.peers.PeerSummary``) and an
    imported ping run's (``ping_import.PingSummary``) add their own keys."""

    sent: int
    received: int
    lost: int
    segments: dict[str, HistSummary]


class StoredSummary(RunSummary, total=False):
    """A stored run's summary as it is read back: a ``RunSummary`` and, only in
    netassay's own runs, the CPU use per core (``cpu``: each part's share of the
    core)."""

    cpu: dict[str, dict[str, float]]


def pack_hists(hists: dict[str, Hist]) -> bytes:
    """name -> histogram, as (u16 name length, name, u32 size, Hist.to_bytes()) records."""
    buf = io.BytesIO()
    for name, h in hists.items():
        if h.n == 0:
            continue
        raw, data = name.encode(), h.to_bytes()
        buf.write(struct.pack("<H", len(raw)) + raw + struct.pack("<I", len(data)) + data)
    return buf.getvalue()


def unpack_hists(blob: bytes) -> dict[str, Hist]:
    out, off = {}, 0
    while off < len(blob):
        (n,) = struct.unpack_from("<H", blob, off)
        name = blob[off + 2 : off + 2 + n].decode()
        off += 2 + n
        (size,) = struct.unpack_from("<I", blob, off)
        out[name] = Hist.from_bytes(blob[off + 4 : off + 4 + size])
        off += 4 + size
    return out


def pack_probes(sample: np.ndarray, columns: tuple[str, ...]) -> bytes:
    head = json.dumps({"columns": list(columns), "rows": len(sample)}).encode()
    body = np.ascontiguousarray(sample, dtype=np.uint64).tobytes()
    return zlib.compress(struct.pack("<I", len(head)) + head + body, 6)


def unpack_probes(blob: bytes | None) -> tuple[list[str], np.ndarray]:
    if not blob:
        return [], np.zeros((0, 0), dtype=np.uint64)
    raw = zlib.decompress(blob)
    (n,) = struct.unpack_from("<I", raw, 0)
    head = json.loads(raw[4 : 4 + n])
    cols = head["columns"]
    arr = np.frombuffer(raw[4 + n :], dtype=np.uint64).reshape(head["rows"], len(cols))
    return cols, arr


def add_run(
    store: Store,
    experiment_id: int,
    trial: TrialRecord,
    summary: RunSummary,
    hists: dict[str, Hist],
    probes: bytes | None,
) -> int:
    """Store one run (its trial row and its rtt_runs row) in one transaction."""
    with store.transaction() as w:
        trial_id = w.trial(experiment_id, trial)
        w.row("rtt_runs", _run_row(trial_id, summary, hists, probes))
    return trial_id


def _run_row(
    trial_id: int, summary: RunSummary, hists: dict[str, Hist], probes: bytes | None
) -> dict[str, Any]:
    """The ``rtt_runs`` row (its columns, as the store writes a row)."""
    return {
        "trial_id": trial_id, "summary_json": dumps(summary),
        "histograms": pack_hists(hists), "probes": probes,
    }  # fmt: skip


def add_experiment_with_run(
    store: Store,
    *,
    key: str,
    source: str,
    label: str,
    config: dict[str, Any],
    metadata: dict[str, Any],
    trial: TrialRecord,
    summary: RunSummary,
    hists: dict[str, Hist],
) -> int:
    """An experiment of one run (an import), written in one transaction: all or nothing.
    Its config and metadata are open documents, as every experiment's."""
    with store.transaction() as w:
        exp_id = w.experiment(
            key=key, kind=KIND, source=source, label=label, config=config, metadata=metadata
        )
        w.row("rtt_runs", _run_row(w.trial(exp_id, trial), summary, hists, None))
    return exp_id


@dataclass(frozen=True)
class StoredRun:
    trial_id: int
    repetition: int
    sent: int
    received: int
    excluded: str | None
    summary: StoredSummary
    hists_blob: bytes
    probes_blob: bytes | None

    def hists(self) -> dict[str, Hist]:
        return unpack_hists(self.hists_blob)

    def probes(self) -> tuple[list[str], np.ndarray]:
        return unpack_probes(self.probes_blob)


def rtt_experiments(store: Store) -> Iterator[Experiment]:
    return store.experiments(kinds=(KIND,))


def runs(store: Store, experiment_id: int, *, blobs: bool = True) -> list[StoredRun]:
    """The runs of one rtt experiment, in order."""
    trials = store.rows(
        "trials", {"experiment_id": experiment_id}, ("repetition",),
        ("id", "repetition", "sent", "received", "excluded"),
    )  # fmt: skip
    cols = ("trial_id", "summary_json", *(("histograms", "probes") if blobs else ()))
    found = store.rows("rtt_runs", {"trial_id": [t["id"] for t in trials]}, (), cols)
    by_trial = {r["trial_id"]: r for r in found}
    return [
        StoredRun(
            int(t["id"]),
            int(t["repetition"]),
            int(t["sent"]),
            int(t["received"]),
            t["excluded"],
            json.loads(r["summary_json"]),
            bytes(r.get("histograms") or b""),
            r.get("probes"),
        )
        for t in trials
        if (r := by_trial.get(t["id"])) is not None
    ]
