"""Export each trial's one-way latency histogram (the XDP sink's, ``--latency``) in
HdrHistogram's interval log format, which HdrHistogram's tools and libraries read
(Java's HistogramLogReader, the ``hdrh`` package, HdrHistogram_c, wrk2's plotters).

One interval line per trial that holds a histogram, in trial order, each after a
comment naming its experiment, trial and load; its start is the trial's start (s from
the log's StartTime, the first trial's), its length the trial's, its max in ms. Each
histogram is HdrHistogram's V2 compressed encoding (ZigZag LEB128 counts, zero runs,
zlib, base64) of a histogram of nanoseconds from 1 ns to an hour at 3 significant
digits; every sink bucket's count is recorded at the bucket's midpoint (clamped to the
trial's min and max), the value netassay's own percentiles take for it, but for one
frame each at the trial's exact minimum and maximum.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any, TextIO

from netassay.hist import SinkHist
from netassay.store.db import Store

LOWEST = 1  # ns
HIGHEST = 3_600_000_000_000  # ns: an hour
DIGITS = 3
ENCODING_COOKIE = 0x1C849303 | 0x10  # V2, the word size byte's TLZE bit
COMPRESSION_COOKIE = 0x1C849304 | 0x10
VERSION = "1.3"

# the bucket layout of HdrHistogram(LOWEST, HIGHEST, DIGITS)
_SUB_MAG: int = (2 * 10**DIGITS - 1).bit_length()  # 11: 2048 sub-buckets
_HALF_MAG = _SUB_MAG - 1
_HALF = 1 << _HALF_MAG
_MASK = (1 << _SUB_MAG) - 1


def counts_index(value: int) -> int:
    """The index of ``value`` in HdrHistogram's counts array (unit magnitude 0)."""
    bucket = (value | _MASK).bit_length() - (_HALF_MAG + 1)
    sub = value >> bucket
    return ((bucket + 1) << _HALF_MAG) + sub - _HALF


def _zigzag_leb128(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def values(h: SinkHist) -> dict[int, int]:
    """The histogram's counts by the value each is recorded at (ns): a bucket's at its
    midpoint, but one frame of the lowest bucket at the trial's minimum and one of the
    highest at its maximum (exact in the sink's counts), so that the log's min and max
    are the trial's."""
    out: dict[int, int] = {}
    if not h.n:
        return out
    assert h.min_ns is not None and h.max_ns is not None

    def add(v: float, c: int) -> None:
        if c > 0:
            key = max(LOWEST, min(HIGHEST, round(v)))
            out[key] = out.get(key, 0) + c

    edges = sorted(h.buckets)
    for lo in edges:
        hi, count = h.buckets[lo]
        mid = (lo + hi) / 2.0 if hi is not None else float(h.max_ns)
        mid = min(max(mid, h.min_ns), h.max_ns)
        ends = [v for v, at in ((h.min_ns, edges[0]), (h.max_ns, edges[-1])) if lo == at]
        ends = ends[:count]
        for v in ends:
            add(v, 1)
        add(mid, count - len(ends))
    return out


def encode(recorded: dict[int, int]) -> str:
    """HdrHistogram's V2 compressed, base64 encoding of counts by value."""
    counts: dict[int, int] = {}
    for v, c in recorded.items():
        i = counts_index(v)
        counts[i] = counts.get(i, 0) + c
    limit = max(counts) + 1 if counts else 0
    body = bytearray()
    i = 0
    while i < limit:
        c = counts.get(i, 0)
        i += 1
        if c:
            body += _zigzag_leb128(c)
            continue
        zeros = 1
        while i < limit and not counts.get(i, 0):
            zeros, i = zeros + 1, i + 1
        body += _zigzag_leb128(-zeros if zeros > 1 else 0)
    head = struct.pack(">iiiiqqd", ENCODING_COOKIE, len(body), 0, DIGITS, LOWEST, HIGHEST, 1.0)
    packed = zlib.compress(head + bytes(body))
    return base64.b64encode(struct.pack(">ii", COMPRESSION_COOKIE, len(packed)) + packed).decode()


def _epoch(utc: str) -> float:
    return datetime.fromisoformat(utc).timestamp()


def histograms(store: Store) -> Iterator[tuple[Any, dict[str, Any], SinkHist]]:
    """(experiment, trial, its histogram) of every trial holding one, in store order."""
    for exp in store.experiments():
        for t in store.trials(exp.id):
            doc = t["counters"].get("latency")
            if doc:
                yield exp, t, SinkHist(doc)


def export_hdr(store: Store, out: TextIO) -> int:
    """Write the log of every trial's histogram to ``out``; how many were written."""
    return write_log(list(histograms(store)), out)


def write_log(found: list[tuple[Any, dict[str, Any], SinkHist]], out: TextIO) -> int:
    """The log of these (experiment, trial, histogram): its header, a line each."""
    start = min((_epoch(t["utc"]) for _, t, _ in found), default=0.0)
    stamp = datetime.fromtimestamp(start).astimezone().isoformat(timespec="seconds")
    out.write(f"#[Histogram log format version {VERSION}]\n")
    out.write(f"#[StartTime: {start:.3f} (seconds since epoch), {stamp}]\n")
    out.write(f"#[BaseTime: {start:.3f} (seconds since epoch)]\n")
    out.write("#netassay: one-way latency of each trial, ns (the XDP sink's histogram)\n")
    out.write('"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n')
    for exp, t, h in found:
        excluded = f"; excluded: {t['excluded']}" if t["excluded"] else ""
        out.write(
            f"#experiment {exp.id} ({exp.kind}) '{exp.label}' trial {t['load_index']}."
            f"{t['repetition']} at {t['rate_pps']:g} pps: {h.n} frames{excluded}\n"
        )
        max_ms = (h.max_ns or 0) / 1e6
        line = f"{_epoch(t['utc']) - start:.3f},{float(t['duration_s']):.3f},{max_ms:.3f}"
        out.write(f"{line},{encode(values(h))}\n")
    return len(found)
