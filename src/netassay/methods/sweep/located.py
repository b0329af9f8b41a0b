"""Where the packets were lost, per load, as numbers (``loss_figure`` draws them): the
mean share of the sent packets lost at each location over the load's trials."""

from __future__ import annotations

from typing import Any

import numpy as np

from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS


def loss_shares(
    trials: list[dict[str, Any]], rates_pps: list[float]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per load: mean over trials of (packets lost at location) / sent. Pure."""
    n = len(rates_pps)
    sums = {loc: np.zeros(n) for loc in LOCATIONS}
    counts = np.zeros(n)
    for t in trials:
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
