"""Where the packets were lost, per load: a stacked bar (Marian et al., DSN 2010, Fig. 5).

Each bar is one offered load; its segments are the mean share of the sent packets lost
at each location over the load's trials (from the counter deltas stored with each
trial). ``unsent`` (the generator's shortfall) is drawn hatched: it is not SUT loss.
The axis is linear (the shares add up); each bar carries its total loss ratio as a
number, so that losses too small to see as a bar are never hidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from netassay.counters.loss import ALL_LOCATIONS as LOCATIONS
from netassay.methods.sweep.located import loss_shares

COLORS = {
    "unsent": "#bbbbbb",
    "gen_egress": "#8c564b",
    "sut_ingress": "#d62728",
    "sut_forward": "#ff7f0e",
    "sut_egress": "#e377c2",
    "sink_ingress": "#1f77b4",
    "sink_socket": "#17becf",
    "between_ports": "#9467bd",
    "unaccounted": "#7f7f7f",
}
LABELS = {
    "unsent": "not sent (generator)",
    "gen_egress": "generator egress (local tx port)",
    "sut_ingress": "SUT ingress (backlog/ring)",
    "sut_forward": "SUT forwarding (IP MIB, nft)",
    "sut_egress": "SUT egress (qdisc, cap)",
    "sink_ingress": "sink ingress (local rx port)",
    "sink_socket": "sink socket buffer",
    "between_ports": "between the ports (external SUT)",
    "unaccounted": "unaccounted",
}


def plot_loss_location(trials: list[dict[str, Any]], rates_pps: list[float], path: Path) -> None:
    """Write the stacked bar chart of loss by location to ``path`` (PNG, SVG or PDF)."""
    rates, shares = loss_shares(trials, rates_pps)
    used = [loc for loc in LOCATIONS if shares[loc].any()]
    scale, unit = (1e6, "Mpps") if rates.max(initial=0) >= 1e6 else (1e3, "kpps")
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=120)
    x = np.arange(len(rates))
    bottom = np.zeros(len(rates))
    for loc in used:
        pct = shares[loc] * 100
        ax.bar(
            x,
            pct,
            bottom=bottom,
            color=COLORS[loc],
            label=LABELS[loc],
            hatch="//" if loc == "unsent" else None,
            edgecolor="white" if loc != "unsent" else "#666666",
            linewidth=0.5,
        )
        bottom += pct
    top = bottom.max(initial=0.0)
    for xi, total in zip(x, bottom, strict=True):
        if total > 0:  # small losses stay visible as numbers even when the bar is flat
            ax.annotate(
                f"{total / 100:.1e}",
                (xi, total),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=7,
                rotation=90 if len(x) > 12 else 0,
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
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
