"""A stored reconfiguration test drawn: each trial's effective blocked time, and how
long its change ran, with the mean and its 95% CI."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.methods.reconfig.store import ReconfigSummary
from netassay.shared.plots import save


def plot_blocked(s: ReconfigSummary, stem: Path, title: str = "") -> list[Path]:
    """Blocked time and the change's run time (ms) per trial: stem.png, stem.svg."""
    fig, ax = plt.subplots(figsize=(8, 3.4), constrained_layout=True)
    rows = s.per_trial
    x = [t.trial + 1 for t in rows]
    ax.bar(x, [t.blocked_s * 1e3 for t in rows], width=0.6, color="C3", alpha=0.8,
           label="effective blocked time (lost / rate)")  # fmt: skip
    took = [(t.trial + 1, t.change_s * 1e3) for t in rows if t.change_s is not None]
    if took:
        xs, ys = zip(*took, strict=True)
        ax.scatter(xs, ys, marker="D", color="C0", s=18, label="the change's run time")
    if s.mean_blocked_s is not None:
        ax.axhline(s.mean_blocked_s * 1e3, color="k", lw=0.8, label="mean")
    ax.set_xlabel("trial")
    ax.set_ylabel("time [ms]")
    ax.set_xticks(x)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return save(fig, stem)
