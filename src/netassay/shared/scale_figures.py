"""A scale series drawn (``shared.scale``): each measured rate against the FIB's,
the rule set's or the flows' size on a log axis (``shared.scale.sections`` makes it a
figure job of the report)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.shared.plots import save
from netassay.shared.scale import KNOBS, METRICS, ScaleSeries


def plot_series(s: ScaleSeries, stem: Path) -> list[Path]:
    """Mpps against the knob's value (log), one line per measured rate; write stem.png
    and stem.svg."""
    values = [p["value"] for p in s.points]
    fig, ax = plt.subplots(figsize=(6, 3.6), constrained_layout=True)
    for i, m in enumerate(METRICS):
        if not any(p.get(m) is not None for p in s.points):
            continue
        pts = [(p["value"], p[m] / 1e6) for p in s.points if p.get(m) is not None]
        ax.plot(*zip(*pts, strict=True), "o-", color=f"C{i}", label=m.removesuffix("_pps").upper())
    if max(values) > 10 * max(min(values), 1):
        ax.set_xscale("log")
    ax.set_xticks(values, [f"{v:,}" for v in values], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel(f"{s.what} ({KNOBS[s.knob][0]})")
    ax.set_ylabel("rate [Mpps]")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.suptitle(
        f"scale series: {s.what}, {s.kind}{', ' + s.label if s.label else ''}", fontsize=10
    )
    return save(fig, stem)
