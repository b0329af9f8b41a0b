"""The loads whose trials were left out as measurement faults, and why, in words
(``loss_figure`` says them under its bars; the shares it draws are
``shared/loss_located.py``'s). Pure: no plotting code, so that a report whose figures
are all kept computes their keys without it."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from netassay.store.loads import fault_kind, load_reason
from netassay.units import fmt_rate


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
