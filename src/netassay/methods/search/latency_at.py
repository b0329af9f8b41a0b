"""The one-way latency at each goal's lower bound (``search --latency`` or
``--max-latency``): the histograms of the trials the search ran at that load, merged,
and their p50, p99 and maximum; the latency at the NDR and the PDR as TRex's NDR bench
and FD.io CSIT report it beside the rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from netassay.hist import SinkHist
from netassay.shared import search_engine as engine
from netassay.units import fmt_latency, fmt_rate


@dataclass(frozen=True)
class LatencyAt:
    """The one-way latency at one goal's lower bound: the goal, the load, how many
    trials and frames the merged histograms hold, p50, p99 and max in ns; as JSON
    (``to_json``) the same keys in the same order."""

    goal: str
    label: str
    load_pps: float
    trials: int
    frames: int
    max_ns: int
    p50_ns: float
    p99_ns: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _at(merged: SinkHist, p: float) -> float:
    value = merged.percentile(p)
    assert value is not None  # the histogram holds frames
    return value


def at_bounds(trials: Sequence[dict[str, Any]], out: engine.SearchOutcome) -> list[LatencyAt]:
    """Per goal with a lower bound whose trials hold latency histograms: the goal, the
    load, how many trials and frames the histograms merge, p50, p99 and max in ns.
    Excluded trials (a fault, not the SUT) are left out; [] when no trial kept one."""
    found = []
    for o in out.goals:
        lo = o.lower_pps
        if lo is None:
            continue
        merged, n = SinkHist(), 0
        for t in trials:
            load = engine.intended_load(t)
            hist = t["counters"].get("latency")
            if t["excluded"] or not hist or abs(load - lo) > 1e-6 * lo:
                continue
            merged.merge(SinkHist(hist))
            n += 1
        if not merged.n:
            continue
        assert merged.max_ns is not None  # it holds frames
        found.append(LatencyAt(o.goal.key, o.goal.label, lo, n, merged.n, merged.max_ns,
                               _at(merged, 50.0), _at(merged, 99.0)))  # fmt: skip
    return found


def p99_at(found: Sequence[LatencyAt], goal_key: str) -> float | None:
    """The p99 in ns at one goal's lower bound (None: no histogram there)."""
    return next((r.p99_ns for r in found if r.goal == goal_key), None)


def lines(found: Sequence[LatencyAt]) -> list[str]:
    """``at_bounds`` in words: a line per goal."""
    out = []
    for r in found:
        p50, p99 = (fmt_latency(round(v)) for v in (r.p50_ns, r.p99_ns))
        out.append(
            f"  one-way latency at the {r.label} ({fmt_rate(r.load_pps)}): p50 {p50}, "
            f"p99 {p99}, max {fmt_latency(r.max_ns)} ({r.frames:,} frames, "
            f"{r.trials} trials)"
        )
    return out
