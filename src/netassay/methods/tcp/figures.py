"""TCP cells drawn as seed 003 draws them: throughput against loss (log x), one line per
congestion control, one panel per path delay, with the Mathis bound of that path and the
path's rate drawn beside the points. A cell without loss is drawn at the left edge,
marked 0."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from netassay.analysis.tcp import mathis_bps, path_bps
from netassay.shared.plots import save

if TYPE_CHECKING:
    from netassay.methods.tcp.store import StoredTcp


def points(cells: Sequence[StoredTcp]) -> dict[float, dict[str, list[tuple[float, float, Any]]]]:
    """delay -> cc -> [(loss, mean throughput, CI)], from stored cells."""
    out: dict[float, dict[str, list[tuple[float, float, Any]]]] = {}
    for c in cells:
        t = c.summary.throughput_bps
        cfg = c.config
        if t is None or cfg.get("delay_s") is None:  # an imported cell: its path is unknown
            continue
        per = out.setdefault(float(cfg["delay_s"]), {}).setdefault(str(cfg["cc"]), [])
        per.append((float(cfg["loss"]), float(t), c.summary.throughput_ci95_bps))
    return out


def plot_throughput_vs_loss(cells: Sequence[StoredTcp], stem: Path, title: str = "") -> list[Path]:
    """The paper's figure; write stem.png and stem.svg."""
    by_delay = points(cells)
    delays = sorted(by_delay)
    losses = sorted({p[0] for d in by_delay.values() for ps in d.values() for p in ps if p[0] > 0})
    zero_at = (losses[0] / 10) if losses else 1e-5
    fig, axes = plt.subplots(1, max(1, len(delays)), figsize=(4.2 * max(1, len(delays)), 3.8),
                             constrained_layout=True, squeeze=False)  # fmt: skip
    for ax, delay in zip(axes[0], delays, strict=False):
        cells_here = [c for c in cells if c.config.get("delay_s") == delay]
        seen = [p[1] / 1e6 for ps in by_delay[delay].values() for p in ps]
        for i, (cc, ps) in enumerate(sorted(by_delay[delay].items())):
            ps = sorted(ps)
            x = [p[0] if p[0] > 0 else zero_at for p in ps]
            y = [p[1] / 1e6 for p in ps]
            err = np.array([[p[1] - p[2][0], p[2][1] - p[1]] if p[2] else [0, 0] for p in ps]).T
            ax.errorbar(x, y, yerr=err / 1e6, marker="o", ms=4, capsize=2, color=f"C{i}",
                        label=cc)  # fmt: skip
        rtts = [float(c.config["rtt_path_s"]) for c in cells_here]
        mss = [s for c in cells_here for r in c.runs if (s := r["mss_bytes"])]
        if losses and rtts and mss:
            lo = max(losses[0] / 4, zero_at * 2)
            xs = np.logspace(np.log10(lo), np.log10(losses[-1] * 1.5), 50)
            m = [mathis_bps(statistics.median(mss), statistics.median(rtts), p) / 1e6 for p in xs]
            ax.plot(xs, m, color="0.3", ls="--", lw=1, label="Mathis bound")
        caps = [path_bps(c.config.get("bottleneck_bps"), statistics.median(mss), c.config["mtu"])
                for c in cells_here] if mss else []  # fmt: skip
        if caps and np.isfinite(caps[0]):
            ax.axhline(caps[0] / 1e6, color="0.6", ls=":", lw=1, label="path rate")
            seen.append(caps[0] / 1e6)
        if seen:  # the bound's curve never stretches the axis beyond the points
            ax.set_ylim(min(seen) / 2, max(seen) * 2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = [zero_at, *losses]
        ax.set_xticks(ticks, ["0", *(f"{p:g}" for p in losses)], fontsize=8)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("random loss probability")
        ax.set_ylabel("throughput [Mbit/s]")
        rtt = f", RTT {statistics.median(rtts) * 1e3:.1f} ms" if rtts else ""
        ax.set_title(f"delay {delay * 1e3:g} ms each way{rtt}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    if title:
        fig.suptitle(title, fontsize=10)
    return save(fig, stem)
