"""Figures of RTT configurations (seed 002's): CDFs and box plots of each segment by
configuration, CPU use per core (the page that holds them is ``rtt/page.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from netassay.hist import bin_mid
from netassay.methods.rtt.compare import Config
from netassay.shared.plots import save

CPU_PARTS = ("user", "system", "softirq", "irq", "steal")


def cdf(configs: Sequence[Config], segment: str, stem: Path) -> list[Path]:
    """The CDF of one segment, every probe of every run, one line per configuration."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for c in configs:
        h = c.merged(segment)
        if h.n == 0:
            continue
        idx = np.flatnonzero(h.pos)
        x = np.maximum(bin_mid(idx), 1.0) / 1e3
        y = np.cumsum(h.pos[idx]) / h.n + h.negative / h.n
        ax.step(x, y, where="post", label=f"{c.label} ({len(c.runs)} runs)")
    ax.set_xscale("log")
    ax.set_xlabel(f"{segment} (us)")
    ax.set_ylabel("fraction of probes")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(f"{segment}: CDF by configuration")
    return save(fig, stem)


def boxes(configs: Sequence[Config], segments: Sequence[str], stat: str, stem: Path) -> list[Path]:
    """Box plots of the per-run statistic (runs are the unit), one panel per segment."""
    fig, axes = plt.subplots(1, len(segments), figsize=(3.2 * len(segments), 4), squeeze=False)
    labels = [f"#{i + 1}" for i in range(len(configs))]
    for ax, seg in zip(axes[0], segments, strict=True):
        data = [np.asarray(c.values(seg, stat)) / 1e3 for c in configs]
        ax.boxplot([d if d.size else [np.nan] for d in data], tick_labels=labels)
        ax.set_title(f"{seg} ({stat} per run)")
        ax.set_ylabel("us")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("; ".join(f"#{i + 1}: {c.label}" for i, c in enumerate(configs)), fontsize=7)
    fig.tight_layout()
    return save(fig, stem)


def cpu(configs: Sequence[Config], stem: Path) -> list[Path]:
    """Mean CPU use per core during the runs, stacked by kind, per configuration."""
    cores = sorted({k for c in configs for r in c.runs for k in r.summary.get("cpu", {})})
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(configs) * max(1, len(cores))), 4))
    width = 0.8 / max(1, len(cores))
    for j, core in enumerate(cores):
        bottom = np.zeros(len(configs))
        for part, color in zip(CPU_PARTS, matplotlib.color_sequences["tab10"], strict=False):
            v = np.array([_mean_cpu(c, core, part) for c in configs])
            ax.bar(np.arange(len(configs)) + j * width, v, width, bottom=bottom, color=color,
                   label=part if j == 0 else None)  # fmt: skip
            bottom += v
    ax.set_xticks(np.arange(len(configs)) + width * (len(cores) - 1) / 2)
    ax.set_xticklabels([f"#{i + 1}" for i in range(len(configs))])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of the core (bars: " + ", ".join(cores) + ")")
    ax.legend(fontsize=7)
    ax.set_title("CPU use per core during the runs")
    return save(fig, stem)


def _mean_cpu(c: Config, core: str, part: str) -> float:
    found = [r.summary.get("cpu", {}).get(core, {}).get(part) for r in c.runs]
    v = [x for x in found if x is not None]
    return float(np.mean(v)) if v else 0.0
