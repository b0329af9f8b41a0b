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
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
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


@dataclass(frozen=True)
class Bounds:
    """Each bound of a run in bit/s (None: it does not bound it: no loss, no window asked,
    no bottleneck) and which one binds (``loss``, ``window`` or ``path``: the smallest;
    None when none is finite) with its rate."""

    mathis_bps: float | None
    window_bps: float | None
    path_bps: float | None
    binds: str | None
    bound_bps: float | None


def bounds(
    *, mss: float, rtt_s: float, loss: float, window: float | None, bottleneck: float | None,
    mtu: int,
) -> Bounds:  # fmt: skip
    """Each bound of a run and which one binds (``Bounds``)."""
    b = {
        "loss": mathis_bps(mss, rtt_s, loss),
        "window": window_bps(window, rtt_s) if window else math.inf,
        "path": path_bps(bottleneck, mss, mtu),
    }
    finite = {k: v for k, v in b.items() if math.isfinite(v)}
    binds = min(finite, key=lambda k: finite[k]) if finite else None
    return Bounds(
        mathis_bps=_num(b["loss"]),
        window_bps=_num(b["window"]),
        path_bps=_num(b["path"]),
        binds=binds,
        bound_bps=finite[binds] if binds else None,
    )


def offered_pps(throughput_bps: float | None, mss_bytes: float | None) -> float | None:
    """The data segments per second a run sent through the path (each a full frame),
    from its throughput and MSS (None: either unknown)."""
    if not throughput_bps or not mss_bytes:
        return None
    return float(throughput_bps) / (8 * float(mss_bytes))


def over_line_limit(offered: float | None, limit: Mapping[str, Any]) -> str | None:
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


@dataclass(frozen=True)
class TcpSummary:
    """A cell's runs in a few numbers (``summary``): the runs and those used (a faulty
    run is counted, not used: ``faults`` says why, one line each), the mean and median
    throughput of the used runs with the mean's 95% CI (never below zero), their
    retransmits, and the mean bound beside the mean throughput with the bound that binds
    most often (all three None: no run had a finite bound)."""

    runs: int
    used: int
    faults: list[str]
    throughput_bps: float | None
    throughput_median_bps: float | None
    throughput_ci95_bps: list[float] | None
    retransmits: int
    bound_bps: float | None
    of_bound: float | None
    binds: str | None

    def to_json(self) -> dict[str, Any]:
        """The summary as a cell's JSON holds it (the same keys as the fields)."""
        return asdict(self)


def summary(runs: Sequence[Mapping[str, Any]]) -> TcpSummary:
    """A cell's runs (each: throughput_bps, retransmits, ok, ...) in a few numbers; a
    faulty run (the path lost what it was not asked to) is counted, not used."""
    good = [r for r in runs if r.get("ok", True)]
    tput = [float(r["throughput_bps"]) for r in good]
    mean = statistics.fmean(tput) if tput else None
    bound = [float(r["bound_bps"]) for r in good if r.get("bound_bps")]
    bound_bps = of_bound = binds = None
    if bound and mean is not None:
        bound_bps = statistics.fmean(bound)
        of_bound = mean / bound_bps
        kinds = [r.get("binds") for r in good if r.get("binds")]
        binds = max(set(kinds), key=kinds.count) if kinds else None
    return TcpSummary(
        runs=len(runs),
        used=len(good),
        faults=[f"run {r['index']}: {r['fault']}" for r in runs if not r.get("ok", True)],
        throughput_bps=mean,
        throughput_median_bps=statistics.median(tput) if tput else None,
        throughput_ci95_bps=_clip(ci95(tput)),
        retransmits=sum(int(r.get("retransmits") or 0) for r in good),
        bound_bps=bound_bps,
        of_bound=of_bound,
        binds=binds,
    )
