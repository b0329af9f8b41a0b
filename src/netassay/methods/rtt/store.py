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
from typing import Any

import numpy as np

from netassay.hist import Hist
from netassay.store import db as D
from netassay.store.db import Experiment, Store
from netassay.trial.record import TrialRecord
from netassay.units import utc_now

KIND = "rtt"
SOURCE = "netassay rtt"


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
    summary: dict[str, Any],
    hists: dict[str, Hist],
    probes: bytes | None,
) -> int:
    """Store one run (its trial row and its rtt_runs row) in one transaction."""
    row = D._trial_row(experiment_id, trial, utc_now())
    with store._transaction() as conn:
        cur = conn.execute(D._INSERT_TRIAL, row)
        trial_id = int(cur.lastrowid)
        conn.execute(
            "INSERT INTO rtt_runs (trial_id, summary_json, histograms, probes) VALUES (?,?,?,?)",
            (trial_id, D._dumps(summary), pack_hists(hists), probes),
        )
    return trial_id


def add_experiment_with_run(
    store: Store,
    *,
    key: str,
    source: str,
    label: str,
    config: dict[str, Any],
    metadata: dict[str, Any],
    trial: TrialRecord,
    summary: dict[str, Any],
    hists: dict[str, Hist],
) -> int:
    """An experiment of one run (an import), written in one transaction: all or nothing."""
    with store._transaction() as conn:
        exp_id = store._insert_experiment(key, KIND, source, label, config, metadata, None)
        cur = conn.execute(D._INSERT_TRIAL, D._trial_row(exp_id, trial, utc_now()))
        conn.execute(
            "INSERT INTO rtt_runs (trial_id, summary_json, histograms, probes) VALUES (?,?,?,?)",
            (int(cur.lastrowid), D._dumps(summary), pack_hists(hists), None),
        )
    return exp_id


@dataclass(frozen=True)
class StoredRun:
    trial_id: int
    repetition: int
    sent: int
    received: int
    excluded: str | None
    summary: dict[str, Any]
    hists_blob: bytes
    probes_blob: bytes | None

    def hists(self) -> dict[str, Hist]:
        return unpack_hists(self.hists_blob)

    def probes(self) -> tuple[list[str], np.ndarray]:
        return unpack_probes(self.probes_blob)


def rtt_experiments(store: Store) -> Iterator[Experiment]:
    for exp in store.experiments():
        if exp.kind == KIND:
            yield exp


def runs(store: Store, experiment_id: int, *, blobs: bool = True) -> list[StoredRun]:
    """The runs of one rtt experiment, in order."""
    cols = "r.histograms, r.probes" if blobs else "x'', NULL"
    cur = store.conn.execute(
        "SELECT t.id, t.repetition, t.sent, t.received, t.excluded, r.summary_json, "
        f"{cols} FROM trials t JOIN rtt_runs r ON r.trial_id = t.id"
        " WHERE t.experiment_id = ? ORDER BY t.repetition",
        (experiment_id,),
    )
    return [
        StoredRun(int(a), int(b), int(c), int(d), e, json.loads(f), bytes(g), h)
        for a, b, c, d, e, f, g, h in cur
    ]
