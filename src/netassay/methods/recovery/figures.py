"""A stored recovery test drawn: each trial's received rate per interval against time
from the overload's end (A), the offered load before and after A, each recovery marked."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.methods.recovery.store import RecoverySummary
from netassay.shared.plots import save


def plot_recovery(
    trials: Sequence[dict[str, Any]], s: RecoverySummary, stem: Path, title: str = ""
) -> list[Path]:
    """Received kpps per interval around A, one line per trial: stem.png, stem.svg."""
    fig, ax = plt.subplots(figsize=(8, 3.6), constrained_layout=True)
    for i, t in enumerate(trials):
        r = t["counters"]["recovery"]
        a, samples = r["t_drop_s"], r["samples"]
        pts = [
            ((t1 - a) * 1e3, (c1 - c0) / max(t1 - t0, 1e-9) / 1e3)
            for (t0, c0), (t1, c1) in itertools.pairwise(samples)
            if t1 > t0
        ]
        if not pts:
            continue
        x, y = zip(*pts, strict=True)
        alpha = 0.4 if t["excluded"] else 0.9
        label = f"trial {t['repetition'] + 1}"
        ax.step(x, y, where="pre", lw=0.8, color=f"C{i % 10}", alpha=alpha, label=label)
        if r["recovery_s"] is not None:
            ax.axvline(r["recovery_s"] * 1e3, color=f"C{i % 10}", ls=":", lw=0.8)
    ax.axhline(s.overload_pps / 1e3, color="0.5", ls="--", lw=0.8, label="overload offered")
    ax.axhline(s.low_pps / 1e3, color="0.3", ls="-.", lw=0.8, label="after A offered")
    ax.axvline(0, color="k", lw=1)
    span = max(0.05, 4 * (s.max_s or 0.0), 20 * s.interval_s) * 1e3
    ax.set_xlim(-span / 2, span)
    ax.set_xlabel("time from the overload's end A [ms] (dotted: recovered)")
    ax.set_ylabel("received [kpps]")
    ax.set_ylim(0, max(ax.get_ylim()[1], s.overload_pps / 1e3) * 1.12)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="best")
    return save(fig, stem)
