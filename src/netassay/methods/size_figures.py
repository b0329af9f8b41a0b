"""A frame-size series drawn as RFC 2544 reports it (``methods.sizes``): each measured
rate against the frame size, in Mpps and in Gbit/s at layer 1 (its report section is
``sizes.sections``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.methods.plots import save
from netassay.methods.sizes import METRICS, SizeSeries


def plot_series(s: SizeSeries, stem: Path) -> list[Path]:
    """Mpps (left) and Gbit/s at L1 (right) against the frame size with its FCS, one
    line per measured rate; write stem.png and stem.svg."""
    frames = [p["frame_bytes"] for p in s.points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    for i, m in enumerate(METRICS):
        name = m.removesuffix("_pps")
        if not any(m in p for p in s.points):
            continue
        mpps = [p.get(f"{name}_mpps") for p in s.points]
        gbps = [p.get(f"{name}_gbps_l1") for p in s.points]
        left.plot(frames, mpps, "o-", color=f"C{i}", label=name.upper())
        right.plot(frames, gbps, "o-", color=f"C{i}", label=name.upper())
    for ax, unit in ((left, "rate [Mpps]"), (right, "rate at L1 [Gbit/s]")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(frames, [str(f) for f in frames], fontsize=8)
        ax.minorticks_off()
        ax.set_xlabel("frame size with FCS [bytes]")
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    fig.suptitle(f"frame-size series: {s.kind}{', ' + s.label if s.label else ''}", fontsize=10)
    return save(fig, stem)
