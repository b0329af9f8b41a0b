"""Where the packets were lost, per load, as numbers and words (``loss_figure`` draws
them, a campaign's loss panels too): the mean share of the sent packets lost at each
location over the load's trials the statistics keep, the loads whose trials were left
out as measurement faults and why, and a share written in percent. Pure: no plotting
code, so that a report whose figures are all kept computes their keys without it."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS
from netassay.store.loads import fault_kind, load_reason
from netassay.units import fmt_rate


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


def left_out(trials: list[dict[str, Any]], rates_pps: list[float]) -> list[tuple[int, str]]:
    """Per load with trials left out as measurement faults: (its index, '1.1 Mpps: all
    2 trials excluded: generator stall'). Pure."""
    n = len(rates_pps)
    faults: list[Counter[str]] = [Counter() for _ in range(n)]
    used = np.zeros(n, dtype=int)
    for t in trials:
        i = int(t["load_index"])
        if not 0 <= i < n:
            continue
        if t.get("excluded"):
            faults[i][fault_kind(str(t["excluded"]))] += 1
        else:
            used[i] += 1
    return [
        (i, f"{fmt_rate(rates_pps[i])}: {load_reason(int(used[i]), faults[i])}")
        for i in range(n)
        if faults[i]
    ]


def pct(value: float, digits: int = 3) -> str:
    """A percentage as people write it: '10%', '2.5%', '0.0012%' (never 1.0e-01)."""
    if value == 0:
        return "0%"
    places = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"
