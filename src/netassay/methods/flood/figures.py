"""A stored flood experiment drawn: each run's MRR (what the sink received per second)
and what it offered, their median, and the SUT's ground-truth cap when it had one."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.methods.flood.store import mrr_pps
from netassay.shared.plots import save


def plot_mrr(
    trials: Sequence[dict[str, Any]], cap_pps: float | None, stem: Path, title: str = ""
) -> list[Path]:
    """Each flood's MRR and offered rate in kpps, run by run; write stem.png, stem.svg."""
    runs = [t["repetition"] + 1 for t in trials]
    mrr = [(mrr_pps(t) or 0.0) / 1e3 for t in trials]
    offered = [t["rate_pps"] / 1e3 for t in trials]
    fig, ax = plt.subplots(figsize=(7, 3.6), constrained_layout=True)
    ax.plot(runs, offered, "s", color="0.6", label="offered (unpaced)")
    ax.plot(runs, mrr, "o-", color="C0", label="MRR (received)")
    if mrr:
        median = statistics.median(mrr)
        ax.axhline(median, color="C0", lw=0.8, ls="--", label=f"median {median:.4g} kpps")
    if cap_pps:
        ax.axhline(cap_pps / 1e3, color="C3", lw=0.8, ls=":", label="ground-truth cap")
    ax.set_yscale("log")
    ax.set_xlabel("flood (run)")
    ax.set_ylabel("rate [kpps]")
    ax.set_xticks(runs)
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return save(fig, stem)
