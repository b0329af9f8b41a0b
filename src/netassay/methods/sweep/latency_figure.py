"""The latency figure of a sweep run with --latency: one-way latency percentiles against
offered load beside the loss curve (where a router starts queueing before it starts
dropping), and the histogram of every load's frames."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from netassay.analysis.assess import Assessment
from netassay.analysis.latency import STATS, LatencyAtLoad

NAMES = {"p50_ns": "p50", "p90_ns": "p90", "p99_ns": "p99", "p999_ns": "p99.9", "max_ns": "max"}


def plot_latency(a: Assessment, rows: list[LatencyAtLoad], path: Path) -> Path:
    """Left: percentiles (us, log) against load with their 95% CI, the PLR on a twin
    axis; right: each load's histogram (frames per us, log-log). Writes ``path``."""
    fig, (ax, axh) = plt.subplots(1, 2, figsize=(11, 4.4), constrained_layout=True)
    x = np.array([r.rate_pps for r in rows]) / 1e3
    for k in STATS:
        y = np.array([r.mean[k] for r in rows]) / 1e3
        ci = np.array([r.ci95[k] or 0.0 for r in rows]) / 1e3
        ax.errorbar(x, y, yerr=[np.minimum(ci, y * 0.9), ci], fmt="o-", ms=4, lw=1.4,
                    capsize=3, label=NAMES[k])  # fmt: skip
    ax.set_yscale("log")
    ax.set_xlabel("offered load (kpps)")
    ax.set_ylabel("one-way latency (us), mean over runs +- 95% CI")
    ax.grid(True, which="both", alpha=0.3)
    loss = ax.twinx()
    measured = a.table.k > 0
    loss.plot(a.table.rate_pps[measured] / 1e3, np.maximum(a.table.plr[measured], 1e-6), "s--",
              color="black", ms=3, lw=1, label="PLR")  # fmt: skip
    loss.set_yscale("log")
    loss.set_ylabel("packet loss ratio (floor 1e-6)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = loss.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper left")
    ax.set_title("latency percentiles and loss against load", fontsize=10)
    for r in rows:
        _histogram(axh, r)
    axh.set_xscale("log")
    axh.set_yscale("log")
    axh.set_xlabel("one-way latency (us)")
    axh.set_ylabel("share of frames per us")
    axh.grid(True, which="both", alpha=0.3)
    axh.legend(fontsize=8, title="offered load", title_fontsize=8)
    axh.set_title("histogram at each load (runs merged)", fontsize=10)
    fig.suptitle(a.label, fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _histogram(ax: Axes, r: LatencyAtLoad) -> None:
    """The load's non-empty buckets as stairs, zero across the empty ones between."""
    h = r.merged
    edges: list[float] = []
    dens: list[float] = []
    for lo in sorted(h.buckets):
        hi, count = h.buckets[lo]
        if hi is None or not h.n:
            continue  # the open last bucket has no width to draw
        if edges and edges[-1] < lo:
            dens.append(0.0)  # a gap of empty buckets
            edges.append(lo)
        elif not edges:
            edges.append(lo)
        dens.append(count / h.n / ((hi - lo) / 1e3))
        edges.append(hi)
    if dens:
        ax.stairs(dens, np.maximum(np.array(edges) / 1e3, 0.5), label=f"{r.rate_pps / 1e3:g} kpps")
