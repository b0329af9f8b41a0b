"""Where the packets were lost, per load: a stacked bar (Marian et al., DSN 2010, Fig. 5).

Each bar is one offered load; its segments are the mean share of the sent packets lost
at each location over the load's trials the statistics keep (from the counter deltas
stored with each trial). A trial left out as a measurement fault (a generator stall or
limit, a counter or sink fault) is not drawn: its loss is not the SUT's; the figure says
at which loads how many were left out and why, and a load whose trials were all left
out has no bar. ``unsent`` (the generator's shortfall) is drawn hatched: it is not SUT
loss. The axis is linear, in percent of the packets sent (the shares add up); each bar
carries its total in percent, so that losses too small to see as a bar are never hidden.
The numbers and the note's words are ``located``'s (no plotting code).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS
from netassay.methods.sweep.located import left_out
from netassay.shared.loss_located import COLORS, LABELS, kept, loss_shares, pct

NOTE_CHARS = 130  # characters of the note under the figure per line (7 pt, 8 in wide)
NOTE_LINE_IN = 0.14  # the height of one of its lines, inches


def plot_loss_location(trials: list[dict[str, Any]], rates_pps: list[float], path: Path) -> None:
    """Write the stacked bar chart of loss by location to ``path`` (PNG, SVG or PDF):
    the kept trials only, the loads with trials left out named under it."""
    rates, shares = loss_shares(trials, rates_pps)
    out = left_out(trials, rates_pps)
    used = [loc for loc in LOCATIONS if shares[loc].any()]
    scale, unit = (1e6, "Mpps") if rates.max(initial=0) >= 1e6 else (1e3, "kpps")
    note = ""
    if out:
        said = "; ".join(text for _, text in out[:8]) + ("; ..." if len(out) > 8 else "")
        n = len(trials) - len(kept(trials))
        note = f"{n} trial(s) left out, not drawn (measurement faults, not SUT loss): {said}"
    lines = math.ceil(len(note) / NOTE_CHARS)  # the note's lines under the axes
    height = 4.2 + NOTE_LINE_IN * lines
    fig, ax = plt.subplots(figsize=(8, height), dpi=120)
    x = np.arange(len(rates))
    bottom = np.zeros(len(rates))
    for loc in used:
        share = shares[loc] * 100
        ax.bar(
            x,
            share,
            bottom=bottom,
            color=COLORS[loc],
            label=LABELS[loc],
            hatch="//" if loc == "unsent" else None,
            edgecolor="white" if loc != "unsent" else "#666666",
            linewidth=0.5,
        )
        bottom += share
    top = bottom.max(initial=0.0)
    for xi, total in zip(x, bottom, strict=True):
        if total > 0:  # small losses stay visible as numbers even when the bar is flat
            ax.annotate(
                pct(total, 2),
                (xi, total),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=7,
                rotation=90 if len(x) > 12 else 0,
            )
    kept_any = {int(t["load_index"]) for t in kept(trials)}
    for i, _ in out:  # a load whose every trial was left out: no bar, said where it would be
        if i not in kept_any:
            ax.annotate(
                "left out",
                (i, 0),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
                color="#666",
                rotation=90,
            )
    ax.set_xticks(x, [f"{r / scale:.4g}" for r in rates], rotation=45 if len(x) > 12 else 0)
    ax.set_xlabel(f"offered load ({unit})")
    ax.set_ylabel("packets lost (% of sent)")
    ax.set_title("Where the packets were lost (kernel counters before/after each trial)")
    ax.grid(axis="y", alpha=0.3)
    if used:
        ax.legend(fontsize=8, loc="upper left", frameon=False)
        ax.set_ylim(0, max(top * 1.2, 1e-3))
    else:
        ax.text(0.5, 0.5, "no loss at any load", transform=ax.transAxes, ha="center")
        ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: pct(v)))
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="#444444", wrap=True, va="bottom")
    fig.tight_layout(rect=(0, (NOTE_LINE_IN * lines + 0.05) / height if note else 0, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
