"""Export every stored trial as CSV or JSON lines (one row per trial, experiment fields joined)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from netassay.errors import InputError
from netassay.store.db import Store
from netassay.store.hdr import export_hdr

FORMATS = ("csv", "jsonl", "hdr")
COLUMNS = (
    "experiment_id",
    "experiment_label",
    "experiment_kind",
    "load_index",
    "repetition",
    "rate_pps",
    "duration_s",
    "sent",
    "received",
    "sink_dropped",
    "plr",
    "achieved_rate_pps",
    "loss_location",
    "cpu",
    "warnings",
    "excluded",
    "source",
    "utc",
    "tool_version",
)


def rows(store: Store) -> Iterator[dict[str, Any]]:
    for exp in store.experiments():
        for t in store.trials(exp.id):
            yield {
                "experiment_id": exp.id,
                "experiment_label": exp.label,
                "experiment_kind": exp.kind,
                "load_index": t["load_index"],
                "repetition": t["repetition"],
                "rate_pps": t["rate_pps"],
                "duration_s": t["duration_s"],
                "sent": t["sent"],
                "received": t["received"],
                "sink_dropped": t["sink_dropped"],
                # the SUT's loss ratio: what the sink dropped itself was forwarded
                "plr": 1.0 - (t["received"] + t["sink_dropped"]) / t["sent"] if t["sent"] else None,
                "achieved_rate_pps": t["achieved_rate_pps"],
                "loss_location": t["loss_location"],
                # per core over the trial: shares of user, system, irq, softirq, steal, idle
                "cpu": t.get("cpu") or {},
                "warnings": t["warnings"],
                "excluded": t["excluded"],
                "source": t["source"],
                "utc": t["utc"],
                "tool_version": t["tool_version"],
            }


def export(store: Store, fmt: str, out: TextIO) -> int:
    """Write all trials to ``out`` (hdr: those holding a latency histogram, in
    HdrHistogram's log format, ``store.hdr``); return how many were written."""
    if fmt == "hdr":
        return export_hdr(store, out)
    n = 0
    if fmt == "csv":
        w = csv.DictWriter(out, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows(store):
            r["loss_location"] = json.dumps(r["loss_location"], sort_keys=True)
            r["cpu"] = json.dumps(r["cpu"], sort_keys=True)
            r["warnings"] = json.dumps(r["warnings"])
            w.writerow(r)
            n += 1
    else:
        for r in rows(store):
            out.write(json.dumps(r, sort_keys=True) + "\n")
            n += 1
    return n


def export_to_path(store: Store, fmt: str, path: Path | None, stdout: TextIO) -> int:
    if path is None:
        return export(store, fmt, stdout)
    if path.is_dir():
        raise InputError(f"--out {path} is a folder", "the export is one file", "name a file")
    tmp = path.with_name(path.name + ".part")
    try:
        fh = open(tmp, "w", newline="")  # noqa: SIM115 (closed below, the .part removed on error)
    except OSError as exc:
        where = "its folder does not exist" if not path.parent.is_dir() else exc.strerror
        raise InputError(
            f"cannot write {path}",
            where or str(exc),
            "give an --out path in a folder you may write to",
        ) from exc
    try:
        with fh:
            n = export(store, fmt, fh)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # no half-written file left behind
        raise
    return n
