"""TCP throughput against what bounds it (seed 003, section 3.3): the loss bound of
Mathis et al. (1997), the window bound, the path's rate; which one binds, and the
summary of a cell's runs.

All rates are goodput (the payload bytes TCP delivers, as iperf3 counts them):

- loss: ``MSS / RTT x C / sqrt(p)`` with C = sqrt(3/2) (periodic loss, delayed ACKs
  off; the paper's constant), MSS the payload of a full segment, p the segment loss
  probability. It is a model of Reno's congestion avoidance: CUBIC and BBR are not
  bound by it (BBR ignores random loss by design), which is what the comparison shows.
- window: ``W / RTT``, W the window the receiver advertised as the sender read it
  back (``tcpi_snd_wnd``: iperf3's ``max_snd_wnd``), RTT the path's without a queue.
- path: the bottleneck's L1 rate times the payload share of a full frame:
  ``MSS / (MTU + 38)`` (Ethernet header 14, FCS 4, preamble and gap 20).

What a run offered the path's delay line is its data segments per second (its
throughput over the MSS): a run at or over the line's measured limit measured the
line, not TCP (``over_line_limit``).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from netassay.analysis.acceptance import ci95

MATHIS_C = math.sqrt(1.5)
L1_FRAME_EXTRA = 14 + 4 + 20  # bytes of a frame at L1 beyond its IP packet


def mathis_bps(mss_bytes: float, rtt_s: float, p: float) -> float:
    """The loss bound (bit/s of payload); infinite without loss."""
    if p <= 0 or rtt_s <= 0:
        return math.inf
    return mss_bytes * 8 / rtt_s * MATHIS_C / math.sqrt(p)


def window_bps(window_bytes: float, rtt_s: float) -> float:
    """The window bound (bit/s of payload)."""
    if rtt_s <= 0:
        return math.inf
    return window_bytes * 8 / rtt_s


def path_bps(bottleneck_l1_bps: float | None, mss_bytes: float, mtu: int) -> float:
    """The path's rate as payload (infinite without a bottleneck)."""
    if not bottleneck_l1_bps:
        return math.inf
    return bottleneck_l1_bps * mss_bytes / (mtu + L1_FRAME_EXTRA)


def bounds(
    *, mss: float, rtt_s: float, loss: float, window: float | None, bottleneck: float | None,
    mtu: int,
) -> dict[str, Any]:  # fmt: skip
    """Each bound of a run and which one binds (the smallest; None when all are
    infinite)."""
    b = {
        "loss": mathis_bps(mss, rtt_s, loss),
        "window": window_bps(window, rtt_s) if window else math.inf,
        "path": path_bps(bottleneck, mss, mtu),
    }
    finite = {k: v for k, v in b.items() if math.isfinite(v)}
    binds = min(finite, key=lambda k: finite[k]) if finite else None
    return {
        "mathis_bps": _num(b["loss"]),
        "window_bps": _num(b["window"]),
        "path_bps": _num(b["path"]),
        "binds": binds,
        "bound_bps": finite[binds] if binds else None,
    }


def offered_pps(throughput_bps: float | None, mss_bytes: float | None) -> float | None:
    """The data segments per second a run sent through the path (each a full frame),
    from its throughput and MSS (None: either unknown)."""
    if not throughput_bps or not mss_bytes:
        return None
    return float(throughput_bps) / (8 * float(mss_bytes))


def over_line_limit(offered: float | None, limit: dict[str, Any]) -> str | None:
    """Why a run measured the delay line rather than TCP (None: it did not, or no limit
    is known): it offered the line at least the frames per second the line carries
    (``limit``: ``pps``, ``l1_bps``, ``from``, as ``testbed.linelimit.for_path``)."""
    pps = limit.get("pps")
    if offered is None or not pps or offered < pps:
        return None
    return (
        f"the run offered the delay line {offered / 1e3:.1f} kpps, at or over its limit of "
        f"{pps / 1e3:.1f} kpps ({limit['l1_bps'] / 1e6:.0f} Mbit/s at L1 in 1514-byte frames; "
        f"{limit['from']}): it measured the line, not TCP (lower --bottleneck)"
    )


def _num(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _clip(ci: list[float] | None) -> list[float] | None:
    """A throughput's interval, never below zero (the t interval of few runs can be)."""
    return None if ci is None else [max(0.0, ci[0]), ci[1]]


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell's runs (each: throughput_bps, retransmits, ok, ...) in a few numbers; a
    faulty run (the path lost what it was not asked to) is counted, not used."""
    good = [r for r in runs if r.get("ok", True)]
    tput = [float(r["throughput_bps"]) for r in good]
    out: dict[str, Any] = {
        "runs": len(runs),
        "used": len(good),
        "faults": [f"run {r['index']}: {r['fault']}" for r in runs if not r.get("ok", True)],
        "throughput_bps": statistics.fmean(tput) if tput else None,
        "throughput_median_bps": statistics.median(tput) if tput else None,
        "throughput_ci95_bps": _clip(ci95(tput)),
        "retransmits": sum(int(r.get("retransmits") or 0) for r in good),
    }
    bound = [float(r["bound_bps"]) for r in good if r.get("bound_bps")]
    if bound and tput:
        out["bound_bps"] = statistics.fmean(bound)
        out["of_bound"] = out["throughput_bps"] / out["bound_bps"]
        kinds = [r.get("binds") for r in good if r.get("binds")]
        out["binds"] = max(set(kinds), key=kinds.count) if kinds else None
    else:
        out.update(bound_bps=None, of_bound=None, binds=None)
    return out
