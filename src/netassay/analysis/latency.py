"""One-way latency against offered load, from the XDP sink's per-trial histograms.

Runs, not frames, are the statistical unit: at each load every usable trial gives its
percentiles (p50, p90, p99, p99.9, max); the load's value is their mean over the K
runs with a Student-t 95% confidence interval (none with one run). The histogram of
all the load's frames (the runs merged) is kept beside it, for its figure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from netassay.hist import SinkHist

STATS: tuple[Literal["p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"], ...] = (
    "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns",
)  # fmt: skip


@dataclass
class LatencyAtLoad:
    """The latency of one load: per statistic the runs' mean and CI half-width."""

    load_index: int
    rate_pps: float
    runs: int = 0
    mean: dict[str, float] = field(default_factory=dict)
    ci95: dict[str, float | None] = field(default_factory=dict)
    merged: SinkHist = field(default_factory=SinkHist)

    def to_json(self) -> dict[str, Any]:
        return {
            "load_index": self.load_index, "rate_pps": self.rate_pps, "runs": self.runs,
            **{k: self.mean.get(k) for k in STATS},
            **{f"{k.removesuffix('_ns')}_ci95_ns": self.ci95.get(k) for k in STATS},
            "frames": self.merged.n, "min_ns": self.merged.min_ns,
        }  # fmt: skip


def ci_half_width(values: list[float]) -> float | None:
    """The Student-t 95% half-width of the mean (None below 2 values)."""
    if len(values) < 2:
        return None
    from scipy import stats  # deferred: scipy (0.2 s), only with 2+ runs

    sd = statistics.stdev(values)
    return float(stats.t.ppf(0.975, len(values) - 1)) * sd / math.sqrt(len(values))


def by_load(trials: Iterable[tuple[int, float, dict[str, Any]]]) -> list[LatencyAtLoad]:
    """(load index, offered load, the trial's stored histogram) of every usable trial
    -> one row per load that has a histogram with frames, in load order."""
    per: dict[int, tuple[float, list[SinkHist]]] = {}
    for i, rate, doc in trials:
        h = SinkHist(doc)
        if h.n:
            per.setdefault(i, (rate, []))[1].append(h)
    rows = []
    for i in sorted(per):
        rate, hists = per[i]
        row = LatencyAtLoad(i, rate, runs=len(hists))
        summaries = [h.summary() for h in hists]
        for k in STATS:
            vals = [float(v) for s in summaries if (v := s[k]) is not None]  # all: n > 0
            row.mean[k] = statistics.fmean(vals)
            row.ci95[k] = ci_half_width(vals)
        for h in hists:
            row.merged.merge(h)
        rows.append(row)
    return rows


def lines(rows: list[LatencyAtLoad]) -> list[str]:
    """The table in words: one line per load, microseconds, mean +- CI over the runs."""
    if not rows:
        return ["latency: no trial holds a latency histogram"]
    out = ["one-way latency (us; mean over the runs, +- its 95% CI):"]
    out.append(f"  {'load':>10} {'runs':>4} " + " ".join(f"{k[:-3]:>14}" for k in STATS))
    for r in rows:
        cells = []
        for k in STATS:
            ci = r.ci95[k]
            pm = f"+-{ci / 1e3:.1f}" if ci is not None else ""
            cells.append(f"{r.mean[k] / 1e3:.1f}{pm}".rjust(14))
        out.append(f"  {r.rate_pps:>10.0f} {r.runs:>4} " + " ".join(cells))
    return out
