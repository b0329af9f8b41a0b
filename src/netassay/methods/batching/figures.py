"""A batching experiment drawn: the inter-arrival gaps at the sender and the receiver
(and at the echo's socket, with --probe udp) against the sent spacing (each run's
distribution), and the burst lengths."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from netassay.methods.batching.gaps import RunFigures
from netassay.shared.plots import save

POINTS = (("sender", "0.5", "--"), ("receiver", "C0", "-"), ("socket", "C1", "-."))
NAMES = {"sender": "sender egress", "receiver": "receiver ingress", "socket": "echo's socket"}


def plot_gaps(
    runs: Sequence[RunFigures], spacing_ns: float, gap_ns: float, stem: Path, title: str = ""
) -> list[Path]:
    """Each run's gap distribution (CDF from its kept quantiles) at each point, the
    spacing and the burst threshold marked; write stem.png, stem.svg."""
    fig, ax = plt.subplots(figsize=(8, 3.6), constrained_layout=True)
    for i, r in enumerate(runs):
        q = r["gap_quantiles"]
        for point, color, ls in POINTS:
            v = np.asarray(q.get(point, []), dtype=float) / 1e3
            if len(v):
                p = np.linspace(0, 1, len(v))
                label = NAMES[point] if i == 0 else None
                ax.plot(np.maximum(v, 0.01), p, color=color, ls=ls, lw=1, label=label)
    ax.axvline(spacing_ns / 1e3, color="C2", lw=1, label="sent spacing")
    ax.axvline(gap_ns / 1e3, color="C3", lw=0.8, ls=":", label="burst threshold")
    ax.set_xscale("log")
    ax.set_xlabel("inter-arrival gap [us] (one line per run)")
    ax.set_ylabel("share of gaps at or below")
    ax.grid(True, alpha=0.3)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    return save(fig, stem)


def plot_bursts(lengths: dict[str, int], stem: Path, title: str = "") -> list[Path]:
    """Bursts by length at the receiver (a packet alone is a burst of 1), all runs."""
    fig, ax = plt.subplots(figsize=(8, 3.2), constrained_layout=True)
    xs = [int(k) for k in lengths]
    ax.bar(xs, [lengths[k] for k in lengths], color="C0", width=0.8)
    ax.set_xlabel("burst length at the receiver [packets]")
    ax.set_ylabel("bursts")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(title, fontsize=10)
    return save(fig, stem)
