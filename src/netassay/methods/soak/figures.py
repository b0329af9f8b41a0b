"""A stored soak drawn: its timeline, second by second (received and the loss estimate
as rates, the offered load), segment boundaries marked, loss events shaded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.methods.soak.series import Event, Second
from netassay.shared.plots import save


def plot_timeline(
    seconds: Sequence[Second],
    starts_s: Sequence[float],
    events: Sequence[Event],
    rate_pps: float,
    stem: Path,
    title: str = "",
) -> list[Path]:
    """Per-second received and lost (estimate) in kpps against time; write stem.png,
    stem.svg."""
    per = [max(s["dt"], 1e-9) * 1e3 for s in seconds]
    rx = [s["received"] / d for s, d in zip(seconds, per, strict=True)]
    lost = [s["loss_est"] / d for s, d in zip(seconds, per, strict=True)]
    t = [s["t"] for s in seconds]
    if seconds:  # each second drawn to its end, the last one too
        t, rx, lost = [*t, t[-1] + seconds[-1]["dt"]], [*rx, rx[-1]], [*lost, lost[-1]]
    fig, ax = plt.subplots(figsize=(8, 3.6), constrained_layout=True)
    ax.axhline(rate_pps / 1e3, color="0.6", lw=0.8, ls="--", label="offered")
    ax.step(t, rx, where="post", color="C0", label="received")
    ax.step(t, lost, where="post", color="C3", label="lost (estimate)")
    for x in starts_s[1:]:
        ax.axvline(x, color="0.4", lw=0.7, ls=":")
    for i, e in enumerate(events):
        ax.axvspan(
            e.start_s,
            e.start_s + e.length_s,
            color="C3",
            alpha=0.15,
            label="loss event" if i == 0 else None,
        )
    ax.set_xlabel("time into the soak [s] (dotted: segment boundaries)")
    ax.set_ylabel("rate [kpps]")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return save(fig, stem)
