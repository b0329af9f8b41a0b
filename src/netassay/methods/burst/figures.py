"""A stored back-to-back test drawn: every burst tried (lossless or not) by test, each
test's result, the mean and its 95% CI."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import MaxNLocator

from netassay.methods.burst.store import BurstSummary
from netassay.shared.plots import save


def plot_bursts(
    trials: Sequence[dict[str, Any]], s: BurstSummary, stem: Path, title: str = ""
) -> list[Path]:
    """Burst length (frames) against the test: write stem.png, stem.svg."""
    fig, ax = plt.subplots(figsize=(8, 3.6), constrained_layout=True)
    for lossless, mark, color, name in ((True, "o", "C2", "burst, no loss"),
                                        (False, "x", "C3", "burst, frames lost")):  # fmt: skip
        pts = [
            (t["load_index"] + 1, t["counters"]["burst"]["frames"])
            for t in trials
            if not t["excluded"] and t["counters"]["burst"].get("lossless") is lossless
        ]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(xs, ys, marker=mark, color=color, s=14, label=name, alpha=0.6)
    found = [(i + 1, x) for i, x in enumerate(s.per_test) if x is not None]
    if found:
        xs, ys = zip(*found, strict=True)
        ax.scatter(xs, ys, marker="_", color="k", s=200, label="longest without loss")
    if s.mean_frames is not None:
        ax.axhline(s.mean_frames, color="C0", lw=1, label="mean")
        if s.ci95_frames:
            lo, hi = s.mean_frames - s.ci95_frames, s.mean_frames + s.ci95_frames
            ax.axhspan(lo, hi, color="C0", alpha=0.15, label="95% CI")
    ax.set_yscale("log")
    ax.set_xlabel("test")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("burst length [frames]")
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return save(fig, stem)
