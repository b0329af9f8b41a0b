"""Where a sweep's packets were lost, per load, as numbers, and how a location is drawn:
the mean share of the sent packets lost at each location over the load's trials the
statistics keep, a share written in percent, each location's colour and label. The
sweep's loss figure (``methods/sweep/loss_figure.py``) and a campaign's loss panels
(``report/campaign_figures.py``) share them. Pure: no plotting code, so that a report
whose figures are all kept computes their keys without it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS

COLORS = {
    "unsent": "#bbbbbb",
    "gen_egress": "#8c564b",
    "sut_ingress": "#d62728",
    "sut_forward": "#ff7f0e",
    "sut_egress": "#e377c2",
    "sink_ingress": "#1f77b4",
    "sink_socket": "#17becf",
    "between_ports": "#9467bd",
    "unaccounted": "#7f7f7f",
}
LABELS = {
    "unsent": "not sent (generator)",
    "gen_egress": "generator egress (local tx port)",
    "sut_ingress": "SUT ingress (backlog/ring)",
    "sut_forward": "SUT forwarding (IP MIB, nft)",
    "sut_egress": "SUT egress (qdisc, cap)",
    "sink_ingress": "sink ingress (local rx port)",
    "sink_socket": "sink socket buffer",
    "between_ports": "between the ports (external SUT)",
    "unaccounted": "unaccounted",
}


def kept(trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trials the statistics keep: those not excluded as measurement faults."""
    return [t for t in trials if not t.get("excluded")]


def loss_shares(
    trials: list[dict[str, Any]], rates_pps: list[float]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per load: mean over the kept trials of (packets lost at location) / sent. Pure."""
    n = len(rates_pps)
    sums = {loc: np.zeros(n) for loc in LOCATIONS}
    counts = np.zeros(n)
    for t in kept(trials):
        i = int(t["load_index"])
        if not 0 <= i < n:
            continue
        sent = max(int(t.get("sent") or 0), 1)
        counts[i] += 1
        for loc, packets in (t.get("loss_location") or {}).items():
            if loc in sums and packets:
                sums[loc][i] += max(float(packets), 0.0) / sent
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = {
            loc: np.where(counts > 0, s / np.maximum(counts, 1), 0.0) for loc, s in sums.items()
        }
    return np.asarray(rates_pps, dtype=float), shares


def pct(value: float, digits: int = 3) -> str:
    """A percentage as people write it: '10%', '2.5%', '0.0012%' (never 1.0e-01)."""
    if value == 0:
        return "0%"
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"
