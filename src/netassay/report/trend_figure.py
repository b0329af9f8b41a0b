"""A trend page's figure (``report.trend``): each point, jumpavg's groups as steps (each
group's average, its spread as a band), a mark at each change, points left out hollow."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.analysis.trend import THRESHOLD
from netassay.report import series
from netassay.shared.plots import save

COLORS = {"regression": "#cf222e", "progression": "#1a7f37"}


def plot_series(s: series.Series, stem: Path) -> tuple[Path, Path]:
    """The series drawn: points, groups as steps with their spread, changes marked."""
    t = s.trend
    fig, ax = plt.subplots(figsize=(max(5.0, 0.35 * len(t.points) + 2.5), 3.4))
    # a used point has a value (analysis.trend leaves a point without one out)
    used = [
        (i, v / s.scale) for i, p in enumerate(t.points) if p.used and (v := p.value) is not None
    ]
    left = [(i, p, v) for i, p in enumerate(t.points) if not p.used and (v := p.value) is not None]
    if used:
        ax.plot(*zip(*used, strict=True), "o", ms=5, color="#0969da", label="judged")
    for i, p, v in left:
        ax.plot(i, v / s.scale, "o", ms=6, mfc="none", mec="#9a6700")
        ax.annotate(p.mark, (i, v / s.scale), fontsize=6, color="#9a6700",
                    xytext=(0, 6), textcoords="offset points", ha="center")  # fmt: skip
    for g in t.groups:
        lo, hi = g.first - 0.4, g.last + 0.4
        avg, sd = g.average / s.scale, g.stdev / s.scale
        ax.plot([lo, hi], [avg, avg], color="#57606a", lw=2)
        ax.fill_between([lo, hi], avg - sd, avg + sd, color="#57606a", alpha=0.15, lw=0)
        if g.change in COLORS:
            ax.plot(g.first, avg, "v" if g.change == "regression" else "^", ms=11,
                    color=COLORS[g.change], label=g.change)  # fmt: skip
            ax.annotate(g.size(), (g.first, avg), fontsize=8, color=COLORS[g.change],
                        xytext=(6, -12), textcoords="offset points")  # fmt: skip
    ticks = [series.when(p, s.by)[5:19] if s.by == series.TIME else p.x for p in t.points]
    ax.set_xticks(range(len(t.points)), ticks, rotation=40, ha="right", fontsize=7)
    ax.set_xlim(-0.8, len(t.points) - 0.2)
    ax.set_ylabel(s.axis)
    ax.set_xlabel("stored (UTC)" if s.by == series.TIME else s.by)
    ax.set_title(f"{s.method} {s.name}: {t.note or _state(s)}", fontsize=9)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    ax.legend(unique.values(), unique.keys(), fontsize=7)
    png, svg = save(fig, stem)
    return png, svg


def _state(s: series.Series) -> str:
    return "newest group: " + series.newest_text(s.trend, THRESHOLD).split(" (")[0]
