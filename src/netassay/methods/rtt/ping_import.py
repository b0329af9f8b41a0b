"""Import iputils ping output, so that old ping measurements sit beside netassay's runs.

One file is one run of an rtt experiment (probe ``ping``, capture none): its round trips
go in the segment ``latency_sent`` (ping's send time to its receive time, as netassay's
peers run), and the summary keeps what ping said: transmitted, received, duplicates,
errors, the first and last timestamp (with ``ping -D``) and the rate they imply. A file
is read and checked whole before anything is written, and importing it twice adds
nothing (the experiment's key is the file's SHA-256).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from netassay.errors import AlreadyStored, InputError
from netassay.hist import Hist
from netassay.methods.rtt import store as rtt_store
from netassay.store.db import Store
from netassay.trial.record import TrialRecord

SOURCE = "ping import"
_HEAD = re.compile(r"^PING (\S+) \(([0-9a-fA-F.:]+)\) (\d+)\((\d+)\) bytes of data\.")
_REPLY = re.compile(
    r"^(?:\[([0-9]+\.[0-9]+)\] )?[0-9]+ bytes from [^:]+: icmp_seq=([0-9]+) ttl=[0-9]+ "
    r"time=([0-9]+(?:\.[0-9]+)?) ms"
    r"( \(DUP!\))?"
)
_TOTAL = re.compile(r"^(\d+) packets transmitted, (\d+) received(?:, \+(\d+) duplicates)?")
MAX_RTT_MS = 1e9  # 11.6 days: far beyond any reply ping waits for
MAX_STAMP = 1e11  # UNIX seconds (year 5138): a ping -D time stamp is below
_OTHER = re.compile(r"^(?:\[\d+\.\d+\] )?(From |no answer yet|Request timeout)")


@dataclass
class PingRun:
    """What one ping output says."""

    dst: str = ""
    ip_bytes: int | None = None  # the IPv4 packet's size (header says "22(50)")
    rtts_ns: list[int] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)  # -D: UNIX time of each reply
    seqs: list[int] = field(default_factory=list)
    duplicates: int = 0
    errors: int = 0  # "From ... Destination Host Unreachable" and the like
    transmitted: int | None = None
    received: int | None = None

    @property
    def frame_bytes(self) -> int | None:
        return None if self.ip_bytes is None else self.ip_bytes + 14

    def rate_pps(self) -> float | None:
        if len(self.stamps) < 2 or self.stamps[-1] <= self.stamps[0]:
            return None
        span = self.stamps[-1] - self.stamps[0]
        seq_span = max(self.seqs) - min(self.seqs) if self.seqs else len(self.stamps) - 1
        return round(seq_span / span, 3) if seq_span > 0 else None


def parse(text: str, origin: str) -> PingRun:
    """Parse iputils ping output (with or without -D); InputError names the bad line."""
    out = PingRun()
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        line = line.rstrip()
        if not line or line.startswith(("---", "rtt ", "round-trip", "pipe ")):
            continue
        if m := _HEAD.match(line):
            out.dst, out.ip_bytes = m.group(2), int(m.group(4))
        elif m := _REPLY.match(line):
            if m.group(4):
                out.duplicates += 1
                continue
            rtt, stamp = float(m.group(3)), float(m.group(1) or 0)
            if not (rtt < MAX_RTT_MS and stamp < MAX_STAMP):
                raise InputError(
                    f"{origin}:{n}: a round trip of {m.group(3)[:20]} ms at "
                    f"{(m.group(1) or '-')[:20]}",
                    "beyond any ping's time or clock",
                    "give the output of 'ping -D ...' as it printed it",
                )
            out.rtts_ns.append(round(rtt * 1e6))
            out.seqs.append(int(m.group(2)))
            if m.group(1):
                out.stamps.append(stamp)
        elif m := _TOTAL.match(line):
            out.transmitted, out.received = int(m.group(1)), int(m.group(2))
        elif _OTHER.match(line):
            out.errors += 1
        else:
            raise InputError(
                f"{origin}:{n}: not iputils ping output",
                f"cannot read {line[:60]!r}",
                "give the output of 'ping -D ...' as it printed it",
            )
    if not out.rtts_ns and out.transmitted is None:
        raise InputError(f"{origin}: no ping reply or summary in it", "", "is it ping output?")
    if out.received is not None and out.received != len(out.rtts_ns):
        raise InputError(
            f"{origin}: ping says {out.received} received but lists {len(out.rtts_ns)} replies",
            "the output is cut or edited",
            "import the whole output as ping printed it",
        )
    return out


def import_files(store: Store, paths: list[Path], label: str = "") -> list[tuple[Path, int, bool]]:
    """Parse every file first, then store each as one experiment; returns (path,
    experiment id, newly stored)."""
    return store_runs(store, read_files(paths), label)


def read_files(paths: list[Path]) -> list[tuple[Path, str, PingRun]]:
    """Every file read and checked (InputError for the first bad one): (path, its
    SHA-256, the run)."""
    parsed = []
    for p in paths:
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise InputError(f"{p}: cannot read it", str(exc), "check the path") from exc
        parsed.append(
            (p, hashlib.sha256(raw).hexdigest(), parse(raw.decode(errors="replace"), str(p)))
        )
    return parsed


def store_runs(
    store: Store, parsed: list[tuple[Path, str, PingRun]], label: str = ""
) -> list[tuple[Path, int, bool]]:
    """Store each run ``read_files`` read as one experiment (see ``import_files``)."""
    out = []
    for p, digest, run in parsed:
        key = f"ping-import-{digest}"
        found = store.find_experiment(key)
        if found is not None:
            out.append((p, found.id, False))
            continue
        try:
            out.append((p, _store(store, key, p, run, label), True))
        except AlreadyStored as stored:  # by another netassay, after this one looked
            out.append((p, stored.experiment_id, False))
    return out


class PingSummary(rtt_store.RunSummary):
    """An imported ping run's summary: what ping said beside the counts (duplicates,
    errors), the file, and its first and last timestamp (None: no ``ping -D``)."""

    run: int
    duplicates: int
    errors: int
    file: str
    first_stamp: float | None
    last_stamp: float | None


@dataclass(frozen=True)
class PingRecord:
    """What an imported ping run stores: the experiment's config, the run's summary,
    its trial and the round trips' histogram."""

    config: dict[str, Any]  # the experiment's config (an open document)
    summary: PingSummary
    trial: TrialRecord
    hist: Hist


def record_of(run: PingRun, path: Path) -> PingRecord:
    """The rows a ping run is stored as (nothing is written)."""
    hist = Hist()
    hist.add(np.asarray(run.rtts_ns, dtype=np.int64))
    sent = run.transmitted if run.transmitted is not None else len(run.rtts_ns)
    rate = run.rate_pps()
    config = {"method": "rtt", "probe": "ping", "path": "imported", "rate_pps": rate,
              "size_bytes": run.frame_bytes, "responder": "kernel", "responder_delay_ns": 0,
              "load": "unknown", "load_type": None, "load_count": None, "load_location": None,
              "capture": False, "runs": 1, "dst": run.dst}  # fmt: skip
    summary: PingSummary = {
        "run": 0, "sent": sent, "received": len(run.rtts_ns), "lost": sent - len(run.rtts_ns),
        "duplicates": run.duplicates, "errors": run.errors, "file": str(path),
        "first_stamp": run.stamps[0] if run.stamps else None,
        "last_stamp": run.stamps[-1] if run.stamps else None,
        "segments": {"latency_sent": hist.summary()} if hist.n else {},
    }  # fmt: skip
    duration = (run.stamps[-1] - run.stamps[0]) if len(run.stamps) > 1 else 0.0
    trial = TrialRecord(load_index=0, repetition=0, rate_pps=rate or 0.0,
                        duration_s=max(duration, 1e-9), sent=sent, received=len(run.rtts_ns),
                        source=SOURCE)  # fmt: skip
    return PingRecord(config, summary, trial, hist)


def _store(store: Store, key: str, path: Path, run: PingRun, label: str) -> int:
    rec = record_of(run, path)
    return rtt_store.add_experiment_with_run(
        store, key=key, source=SOURCE, label=label or f"ping {run.dst} ({path.name})",
        config=rec.config, metadata={"file": str(path)}, trial=rec.trial, summary=rec.summary,
        hists={"latency_sent": rec.hist},
    )  # fmt: skip
